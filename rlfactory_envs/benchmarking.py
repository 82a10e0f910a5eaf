"""What every measurement of ``rlf bench`` is made of: timed repeats (wall and CPU seconds, cyclic-GC runs), one row
per measurement, the text table the benchmarks print, and the context a family's benchmark runs in.

A family declares its measurements in ``family.py`` (``Family.benches``: a name, the ``"module:function"`` that
measures, and whether ``rlf bench`` runs it without ``--only``); ``benchmarks/env_bench.py`` of a source checkout
finds them there. A measurement is ``function(context) -> (rows, notes)``.
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any


BATCHING = ((True, ""), (False, "_unmerged"))
"""A tool measurement's two runs: concurrent calls merged into batched requests (the default), and one request per
call (its row's name ends in ``_unmerged``)."""


@dataclass(frozen=True)
class BenchContext:
    """How a measurement runs: ``quick`` (small N, a smoke test), ``repeats`` (timed repeats), ``data_dir`` (the
    public reference data, e.g. Spider dev and TravelPlanner, when the checkout has it beside it; ``None``: a
    measurement uses the family's embedded sample and says so in a note), ``compare_sdk``."""

    quick: bool = False
    repeats: int = 5
    data_dir: Path | None = None
    compare_sdk: bool = False
    """Also measure the plain MCP SDK doing the same calls, where a measurement has such a comparison."""

    def absent(self, what: str, relative: str) -> str:
        """The note for a measurement made on the embedded sample because ``relative`` is absent."""
        return f"{what}: {relative} is absent from the reference data ({self.data_dir or 'none given'})"

    def data(self, relative: str) -> Path | None:
        """The reference data file or folder ``relative`` (e.g. ``"spider/dev.json"``), or ``None`` when absent."""
        if self.data_dir is None:
            return None
        path = self.data_dir / relative
        return path if path.exists() else None


class Timing:
    """Wall seconds, process CPU seconds and cyclic-GC runs (per generation) of each timed repeat."""

    def __init__(self) -> None:
        self.walls: list[float] = []
        self.cpus: list[float] = []
        self.gc_runs: list[list[int]] = []

    @contextmanager
    def measure(self, keep: bool = True) -> Iterator[None]:
        runs, wall, cpu = gc_runs(), time.perf_counter(), time.process_time()
        yield
        if keep:
            self.walls.append(time.perf_counter() - wall)
            self.cpus.append(time.process_time() - cpu)
            self.gc_runs.append([after - before for before, after in zip(runs, gc_runs())])


def machine() -> dict[str, Any]:
    """What the numbers were measured on: the processor, its cores, the load when the run began, the Python."""
    model = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), model)
    except OSError:
        model = platform.processor() or model
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return {"cpu": model, "cores": os.cpu_count(), "load_1min": round(load[0], 2), "platform": platform.platform(),
            "python": platform.python_version()}


def gc_runs() -> list[int]:
    return [generation["collections"] for generation in gc.get_stats()]


def row(name: str, n: int, timing: Timing, metric: str, value: float, target: str = "-",
        passed: bool | None = None, **extra: Any) -> dict[str, Any]:
    """One measurement: wall seconds of every repeat, a headline number, and the target verdict if any."""
    return {"name": name, "n": n, "seconds": timing.walls, "median_s": statistics.median(timing.walls),
            "min_s": min(timing.walls), "metric": metric, "value": value, "target": target, "pass": passed,
            "cpu_seconds": timing.cpus, "gc_runs": timing.gc_runs, **extra}


async def timed_repeats(repeats: int, prepare: Callable[[], Awaitable[Any]] | None,
                        body: Callable[[], Awaitable[Any]]) -> Timing:
    """Times ``body`` per repeat, after one untimed warm-up; ``prepare`` runs untimed before each."""
    timing = Timing()
    for i in range(repeats + 1):
        if prepare is not None:
            await prepare()
        with timing.measure(keep=i > 0):  # round 0 warms up (server-side imports, first batch)
            await body()
    return timing


def timed_repeats_sync(repeats: int, body: Callable[[], Any]) -> Timing:
    """``timed_repeats`` for blocking code that runs no event loop."""
    timing = Timing()
    for i in range(repeats + 1):
        with timing.measure(keep=i > 0):
            body()
    return timing


def aligned(lines: Sequence[Sequence[str]]) -> str:
    """``lines`` (the header first) as left-aligned columns two spaces apart, a rule under the header."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    text = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines]
    text.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(text)
