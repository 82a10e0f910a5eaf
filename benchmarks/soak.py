"""``python -m benchmarks.soak``: thousands of episodes across the families at high concurrency, checked for leaks.

What runs: ``LANES``, one pool of envs each (``--concurrency`` split evenly among them): ``rlf/Search-NQ-v0``,
``rlf/NL2SQL-Spider-v0``, ``rlf/Travel-v0`` and ``rlf/Android-v0`` (those two also over a stdio server subprocess)
and ``rlf/MCP-v0``, each on its embedded sample (the family's data settings from the environment are honoured) and
each played by its scripted policy (``rlf/MCP-v0`` has none: ``CalculatePolicy`` below drives it). The envs, their
toolboxes and their server subprocesses live for the whole soak, as a trainer's do. A *window* is one episode per
env of every lane through the rollout loop's batch step (``run_rollouts``'s), all lanes in flight together on one
event loop; the soak runs windows until ``--episodes`` have finished.

After each window (outside its timing, after ``gc.collect()``) it samples: the process's RSS
(``/proc/self/statm``), open file descriptors (``/proc/self/fd``: ``fds`` in all, ``file_fds`` on regular files,
``other_fds`` on pipes, sockets, event and epoll descriptors, devices), threads (``threading.active_count()`` and
the OS's count in ``/proc/self/status``, less the thread pools' workers, which are counted apart with the pools and
their ceiling), child processes (``psutil`` when installed, else a ``/proc`` scan for our
pid as parent) and their summed RSS, objects tracked by the collector, and the window's episodes/s, CPU
milliseconds per episode (this process and its children), mean reward, tool errors and failed episodes.

Checks, over the windows after ``--warmup`` (split into quarters; "first" and "last" are the medians of the first
and last quarter; the slope is a least-squares fit per 1,000 episodes):

- ``rss_bytes`` and ``children_rss_bytes``: the last quarter at most ``--rss-growth`` (15%) above the first.
- ``other_fds``, ``threads``, ``os_threads``, ``thread_pools``, ``children``: the same value in every window
  (threads outside thread pools: ``threads`` by ``threading``'s count, ``os_threads`` by the OS's).
- ``pool_threads``, the pools' workers: at most the pools' ceiling (their summed ``max_workers``) in every window.
  A pool starts a worker only when a task finds none idle, so the count climbs towards its ceiling as rarer peaks
  of load come (a loaded CI machine met one in the 5th window); a pool per episode would break ``thread_pools``.
- ``file_fds``: the last quarter at most ``--file-fd-slack`` (16) above the first. SQLite databases are opened
  through bounded pools, a connection when a query finds none idle (``rlfactory_tool_servers.sql.sandbox.engine``),
  so the count climbs to its ceiling as rarer peaks of concurrency on one database come; a leak grows without
  bound.
- ``episodes_per_s``: the last quarter at least ``--throughput-ratio`` (0.7) times the first; ``cpu_ms_per_episode``
  at most 1 / ``--throughput-ratio`` times the first (steadier than wall time on a shared machine).
- ``failed``: no episode failed (an error from a tool server, the env or the policy).

Then every env closes, and ``--cycles`` envs are made and closed one at a time (``benchmarks/soak_cycles.py``):
files and child processes back to where they were before any env (``*_after_close``, ``cycle_*``), and RSS over
the cycles within ``--rss-growth``.

Output: the JSON report (``--out``: every window's sample, the checks and the verdict), a table with a sparkline
of each series, and with ``--plot`` a PNG of the curves (matplotlib, when importable) or else a CSV of the series at
that path with a ``.csv`` suffix. Exit status 0 when every check passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import math
import re
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlfactory_envs.benchmarking import BenchContext, aligned
from rlfactory_envs.env_spec import make_env
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.families import tooling_of
from rlfactory_envs.kernel.tool_call import ToolCall
from rlfactory_envs.rollout.policy import Policy
# run_rollouts' own batch step; run_rollouts itself makes and closes its envs per call, where a soak keeps them
from rlfactory_envs.rollout.runner import run_episodes

from benchmarks.process_sample import cpu_so_far, sample_process
from benchmarks.soak_cycles import close_checks, make_close_cycles

FLAT_SERIES = ("other_fds", "threads", "os_threads", "thread_pools", "children")
GROWTH_SERIES = ("rss_bytes", "children_rss_bytes")
SPARKS = "▁▂▃▄▅▆▇█"
_LAST_INTEGER_RE = re.compile(r"-?\d+(?=\D*$)")


@dataclass(frozen=True)
class LaneSpec:
    name: str
    env_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)


LANES = (
    LaneSpec("search", "rlf/Search-NQ-v0"),
    LaneSpec("sql", "rlf/NL2SQL-Spider-v0"),
    LaneSpec("travel", "rlf/Travel-v0"),
    LaneSpec("travel_stdio", "rlf/Travel-v0", {"transport": "stdio"}),
    LaneSpec("android", "rlf/Android-v0"),
    LaneSpec("android_stdio", "rlf/Android-v0", {"transport": "stdio"}),
    LaneSpec("mcp", "rlf/MCP-v0"),
)


class CalculatePolicy:
    """A soak driver for ``rlf/MCP-v0``'s embedded sample, not a baseline: turn 1 asks the ``calculate`` tool for
    the task's ground truth (so the tool path and the reward both do real work), turn 2 answers the tool's number."""

    name = "soak-calculate"

    async def act(self, env: ToolEnv, observation: str) -> str:
        if env.turn == 0:
            expression = f"{env.task.ground_truth} * 1"
            return env.chat_format.render_call(ToolCall("calculate", {"expression": expression}))
        number = _LAST_INTEGER_RE.search(observation)
        return f"<answer> {number.group(0) if number else 'unknown'} </answer>"


class Lane:
    """One family's pool of envs (sharing one toolbox) and its policy; ``run_window`` plays one episode per env."""

    def __init__(self, spec: LaneSpec, size: int):
        self.spec = spec
        self.envs: list[ToolEnv] = []
        self.next_seed = 0
        self.size = size
        self.policy: Policy | None = None

    async def open(self) -> None:
        kwargs = {**self.spec.kwargs, "record_timings": True}
        self.envs.append(make_env(self.spec.env_id, **kwargs))
        await self.envs[0].toolbox.astart()
        self.envs += [make_env(self.spec.env_id, **kwargs) for _ in range(self.size - 1)]
        first = self.envs[0]
        self.policy = CalculatePolicy() if self.spec.env_id == "rlf/MCP-v0" else tooling_of(first).baseline_policy(first)

    async def run_window(self) -> tuple[int, float, int, int]:
        """Episodes, summed reward, tool errors and failed episodes of one episode per env."""
        assert self.policy is not None, "open the lane first"
        seeds = list(range(self.next_seed, self.next_seed + len(self.envs)))
        self.next_seed += len(self.envs)
        records = await run_episodes(self.spec.env_id, self.envs, seeds, self.policy)
        return (len(records), sum(r.reward for r in records), sum(r.tool_errors for r in records),
                sum(r.error is not None for r in records))

    def close(self) -> None:
        for env in self.envs:
            env.close()


def lane_sizes(concurrency: int, lanes: int) -> list[int]:
    """``concurrency`` envs split as evenly as possible (the first lanes take the remainder)."""
    share, extra = divmod(concurrency, lanes)
    return [share + (i < extra) for i in range(lanes)]


# -- the soak ------------------------------------------------------------------------------------------------

async def run_window(lanes: Sequence[Lane]) -> dict[str, Any]:
    cpu, started = cpu_so_far(), time.perf_counter()
    outcomes = await asyncio.gather(*(lane.run_window() for lane in lanes))
    seconds, cpu = time.perf_counter() - started, cpu_so_far() - cpu
    episodes = sum(o[0] for o in outcomes)
    return {"episodes": episodes, "seconds": seconds, "episodes_per_s": episodes / seconds,
            "cpu_ms_per_episode": 1000 * cpu / max(episodes, 1),
            "mean_reward": sum(o[1] for o in outcomes) / max(episodes, 1),
            "tool_errors": sum(o[2] for o in outcomes), "failed": sum(o[3] for o in outcomes)}


async def soak(episodes: int, concurrency: int, lane_specs: Sequence[LaneSpec] = LANES,
               progress: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """The process's sample before any env, every window's sample (``window``, cumulative ``total_episodes``, the
    window's numbers, the process's), and the process's sample once every env closed."""
    before = sample_process()
    lanes = [Lane(spec, size) for spec, size in zip(lane_specs, lane_sizes(concurrency, len(lane_specs)))
             if size > 0]
    samples: list[dict[str, Any]] = []
    try:
        await asyncio.gather(*(lane.open() for lane in lanes))
        total = 0
        while total < episodes:
            window = await run_window(lanes)
            total += window["episodes"]
            samples.append({"window": len(samples), "total_episodes": total, **window, **sample_process()})
            if progress:
                print(_progress_line(samples[-1]), file=sys.stderr, flush=True)
    finally:
        for lane in lanes:
            lane.close()
    return before, samples, sample_process()


def _progress_line(s: dict[str, Any]) -> str:
    return (f"window {s['window']:>4}  episodes {s['total_episodes']:>7,}  {s['episodes_per_s']:8.1f} ep/s  "
            f"cpu {s['cpu_ms_per_episode']:6.2f} ms/ep  rss {s['rss_bytes'] / 2**20:7.1f} MiB  "
            f"fds {s['file_fds']}+{s['other_fds']}  threads {s['threads']}/{s['os_threads']}+{s['pool_threads']}  "
            f"children {s['children']}  reward {s['mean_reward']:.3f}  failed {s['failed']}")


# -- checks --------------------------------------------------------------------------------------------------

def quarter_medians(values: Sequence[float]) -> tuple[float, float]:
    q = max(1, len(values) // 4)
    return statistics.median(values[:q]), statistics.median(values[-q:])


def slope_per_1k(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of ``ys`` per 1,000 units of ``xs`` (0 with fewer than two distinct points)."""
    if len(set(xs)) < 2:
        return 0.0
    return 1000 * statistics.linear_regression(xs, ys).slope


def check(name: str, samples: Sequence[dict[str, Any]], bound: str, passed: bool) -> dict[str, Any]:
    values = [s[name] for s in samples]
    first, last = quarter_medians(values)
    ratio = last / first if first else (1.0 if last == 0 else None)  # None: grew from nothing
    return {"name": name, "first": first, "last": last, "ratio": ratio,
            "slope_per_1k_episodes": slope_per_1k([s["total_episodes"] for s in samples], values),
            "min": min(values), "max": max(values), "bound": bound, "pass": passed}


def checks(samples: Sequence[dict[str, Any]], warmup: int, rss_growth: float, throughput_ratio: float,
           file_fd_slack: int) -> list[dict[str, Any]]:
    """The verdict per series over the windows after ``warmup`` (see the module docstring)."""
    steady = samples[warmup:]
    rows = []
    for name in GROWTH_SERIES:
        first, last = quarter_medians([s[name] for s in steady])
        rows.append(check(name, steady, f"last <= {1 + rss_growth:.2f}x first", last <= (1 + rss_growth) * first))
    first, last = quarter_medians([s["file_fds"] for s in steady])
    rows.append(check("file_fds", steady, f"last <= first + {file_fd_slack}", last <= first + file_fd_slack))
    rows.append(check("pool_threads", steady, "<= the pools' max_workers",
                      all(s["pool_threads"] <= s["pool_ceiling"] for s in steady)))
    for name in FLAT_SERIES:
        values = {s[name] for s in steady}
        rows.append(check(name, steady, "constant", len(values) == 1))
    first, last = quarter_medians([s["episodes_per_s"] for s in steady])
    rows.append(check("episodes_per_s", steady, f"last >= {throughput_ratio:.2f}x first",
                      last >= throughput_ratio * first))
    first, last = quarter_medians([s["cpu_ms_per_episode"] for s in steady])
    rows.append(check("cpu_ms_per_episode", steady, f"last <= {1 / throughput_ratio:.2f}x first",
                      last * throughput_ratio <= first))
    failed = sum(s["failed"] for s in samples)
    rows.append(check("failed", steady, "0 in every window", failed == 0))
    return rows


# -- report --------------------------------------------------------------------------------------------------

def sparkline(values: Sequence[float]) -> str:
    low, high = min(values), max(values)
    if high == low:
        return SPARKS[0] * len(values)
    return "".join(SPARKS[round((v - low) / (high - low) * (len(SPARKS) - 1))] for v in values)


def _number(name: str, value: float, sign: str = "") -> str:
    return f"{value / 2**20:{sign},.1f} MiB" if name.endswith("_bytes") else f"{value:{sign},.2f}"


def format_table(rows: Sequence[dict[str, Any]], samples: Sequence[dict[str, Any]]) -> str:
    header = ("series", "first quarter", "last quarter", "last/first", "slope /1k ep", "bound", "result", "curve")
    lines = [header]
    for r in rows:
        curve = sparkline(r["values"] if "values" in r else [s[r["name"]] for s in samples])
        lines.append((r["name"], _number(r["name"], r["first"]), _number(r["name"], r["last"]),
                      "-" if r["ratio"] is None else f"{r['ratio']:.3f}",
                      _number(r["name"], r["slope_per_1k_episodes"], "+"), r["bound"], "PASS" if r["pass"] else "FAIL",
                      curve))
    return aligned(lines)


def write_curves(samples: Sequence[dict[str, Any]], path: Path) -> Path:
    """A PNG of the curves when matplotlib is importable, else the series as CSV (``.csv`` suffix); the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import matplotlib
    except ModuleNotFoundError:
        path = path.with_suffix(".csv")
        with path.open("w", newline="", encoding="utf-8") as out:
            writer = csv.DictWriter(out, fieldnames=list(samples[0]))
            writer.writeheader()
            writer.writerows(samples)
        return path
    matplotlib.use("Agg")
    from matplotlib import pyplot

    series = ("rss_bytes", "children_rss_bytes", "fds", "threads", "children", "episodes_per_s", "cpu_ms_per_episode",
              "mean_reward")
    figure, axes = pyplot.subplots(len(series), 1, sharex=True, figsize=(8, 2 * len(series)))
    episodes = [s["total_episodes"] for s in samples]
    for axis, name in zip(axes, series):
        axis.plot(episodes, [s[name] for s in samples], marker=".")
        axis.set_ylabel(name, fontsize=8)
    axes[-1].set_xlabel("episodes")
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)
    return path


def report(args: argparse.Namespace, samples: list[dict[str, Any]], rows: list[dict[str, Any]],
           wall_s: float, closing: dict[str, Any]) -> dict[str, Any]:
    total = samples[-1]["total_episodes"]
    return {"episodes": total, "concurrency": args.concurrency, "windows": len(samples), "warmup": args.warmup,
            "cycles": args.cycles, **closing,
            "lanes": [{"name": spec.name, "env_id": spec.env_id, "kwargs": spec.kwargs, "envs": size}
                      for spec, size in zip(LANES, lane_sizes(args.concurrency, len(LANES)))],
            "wall_s": wall_s, "episodes_per_s": total / sum(s["seconds"] for s in samples),
            "pass": all(r["pass"] for r in rows), "checks": rows, "samples": samples,
            "python": sys.version.split()[0]}


def bench_soak(context: BenchContext) -> tuple[list[dict[str, Any]], list[str]]:
    """``rlf bench --only soak``: one row (episodes/s, PASS when every check passes) and a note per check; 10,000
    episodes at concurrency 256 (600 at 64 with ``--quick``). One run whatever ``context.repeats``: a soak is long;
    each lane on its embedded sample whatever ``context.data_dir``."""
    argv = ["--episodes", "600", "--concurrency", "64", "--cycles", "70"] if context.quick else []
    args = parse_args([*argv, "--out", "bench_results/soak.json"])
    result = run(args)
    wall = result["wall_s"]
    row = {"name": "soak", "n": result["episodes"], "seconds": [wall], "median_s": wall, "min_s": wall,
           "metric": "episodes/s", "value": result["episodes_per_s"], "target": "flat (see notes)",
           "pass": result["pass"], "concurrency": args.concurrency, "checks": result["checks"]}
    notes = [f"soak: {r['name']}: first {_number(r['name'], r['first']).strip()}, last "
             f"{_number(r['name'], r['last']).strip()} ({r['bound']}): {'PASS' if r['pass'] else 'FAIL'}"
             for r in result["checks"]]
    return [row], notes + [f"soak: every window's sample in {args.out}"]


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=10_000, help="episodes in all (default 10,000)")
    parser.add_argument("--concurrency", type=int, default=256, help="envs in flight, split among the lanes")
    parser.add_argument("--warmup", type=int, default=2, help="windows left out of the checks (default 2)")
    parser.add_argument("--rss-growth", type=float, default=0.15, help="RSS growth allowed, last vs first quarter")
    parser.add_argument("--file-fd-slack", type=int, default=16,
                        help="descriptors on files the last quarter may hold beyond the first's (bounded pools)")
    parser.add_argument("--throughput-ratio", type=float, default=0.7,
                        help="episodes/s of the last quarter at least this times the first's")
    parser.add_argument("--cycles", type=int, default=450,
                        help="make/close cycles after every env closed, one env at a time (default 450; see "
                             "benchmarks/soak_cycles.py)")
    parser.add_argument("--out", default="bench_results/soak.json", help="JSON report")
    parser.add_argument("--plot", default=None, help="PNG of the curves (a CSV of the series without matplotlib)")
    parser.add_argument("--progress", action="store_true", help="a line per window on stderr")
    args = parser.parse_args(list(argv))
    if args.concurrency < len(LANES):
        parser.error(f"--concurrency must be at least {len(LANES)} (one env per lane)")
    if math.ceil(args.episodes / args.concurrency) < args.warmup + 4:
        parser.error(f"{args.episodes} episodes at concurrency {args.concurrency} make fewer than warmup + 4 "
                     f"windows; raise --episodes")
    return args


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The soak with ``args``; writes the JSON (and the curves) and returns the report."""
    started = time.perf_counter()
    before, samples, closed = asyncio.run(soak(args.episodes, args.concurrency, progress=args.progress))
    cycles = asyncio.run(make_close_cycles(args.cycles, LANES, Lane, args.progress))
    rows = checks(samples, args.warmup, args.rss_growth, args.throughput_ratio, args.file_fd_slack) + \
        close_checks(before, closed, cycles, args.rss_growth, quarter_medians)
    closing = {"before_envs": before, "after_close": closed, "cycle_samples": cycles}
    result = report(args, samples, rows, time.perf_counter() - started, closing)
    if args.plot:
        result["curves"] = str(write_curves(samples, Path(args.plot)))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    result = run(args)
    print(format_table(result["checks"], result["samples"]))
    print(f"{result['episodes']:,} episodes in {result['windows']} windows at concurrency {args.concurrency}: "
          f"{result['episodes_per_s']:.1f} episodes/s, {result['wall_s']:.1f} s in all; "
          f"{'PASS' if result['pass'] else 'FAIL'}")
    print(f"results: {args.out}" + (f"; curves: {result['curves']}" if "curves" in result else ""))
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
