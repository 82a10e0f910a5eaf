"""The soak's second half: every env closed, then envs made and closed one at a time, checked for what they leave.

After the windows every lane's envs close; the process must then hold no more files open than before the first env
was made (a runtime's idle parts give theirs back: ``kernel.shared.release_idle``), and no child process. Then
``--cycles`` make/close cycles: each makes one env of the next lane (alone, so its runtime is built from the idle
parts and given back when it closes), plays one episode and closes it; after each round of the lanes the process is
sampled. Checks: files and children back to where they were before any env after every round, and RSS over the
rounds within ``--rss-growth`` (last quarter against the first)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from benchmarks.process_sample import sample_process

CLOSE_SERIES = ("file_fds", "children")


async def make_close_cycles(cycles: int, lane_specs: Sequence[Any], lane_class: Any,
                            progress: bool = False) -> list[dict[str, Any]]:
    """A sample after each round of ``len(lane_specs)`` cycles (``cycle``: the cycles so far)."""
    samples: list[dict[str, Any]] = []
    for cycle in range(cycles):
        lane = lane_class(lane_specs[cycle % len(lane_specs)], 1)
        try:
            await lane.open()
            await lane.run_window()
        finally:
            lane.close()
        if (cycle + 1) % len(lane_specs) == 0 or cycle + 1 == cycles:
            samples.append({"cycle": cycle + 1, **sample_process()})
            if progress:
                s = samples[-1]
                print(f"cycle {s['cycle']:>5}  rss {s['rss_bytes'] / 2**20:7.1f} MiB  files {s['file_fds']}  "
                      f"children {s['children']}", file=sys.stderr, flush=True)
    return samples


def row(name: str, values: Sequence[float], first: float, last: float, bound: str, passed: bool) -> dict[str, Any]:
    """A check row in the soak's shape (``values``: its curve)."""
    ratio = last / first if first else (1.0 if last == 0 else None)
    return {"name": name, "first": first, "last": last, "ratio": ratio, "slope_per_1k_episodes": 0.0,
            "min": min(values), "max": max(values), "bound": bound, "pass": passed, "values": list(values)}


def close_checks(before: dict[str, Any], closed: dict[str, Any], cycles: Sequence[dict[str, Any]],
                 rss_growth: float, quarter_medians: Any) -> list[dict[str, Any]]:
    """The rows of the module docstring; ``before``: the sample before any env, ``closed``: after the windows."""
    rows = [row(f"{name}_after_close", [before[name], closed[name]], before[name], closed[name],
                "as before any env", closed[name] <= before[name]) for name in CLOSE_SERIES]
    if cycles:
        for name in CLOSE_SERIES:
            values = [s[name] for s in cycles]
            rows.append(row(f"cycle_{name}", values, values[0], values[-1], "as before any env, every round",
                            max(values) <= before[name]))
        rss = [s["rss_bytes"] for s in cycles]
        first, last = quarter_medians(rss)
        rows.append(row("cycle_rss_bytes", rss, first, last, f"last <= {1 + rss_growth:.2f}x first",
                        last <= (1 + rss_growth) * first))
    return rows
