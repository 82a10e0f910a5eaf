"""``rlf bench --only sql_hostile``: hostile NL2SQL trajectories beside honest ones: do the honest ones slow down,
does the process grow?

Run alone: ``python -m rlfactory_envs.sql.hostile_bench [--data-dir DIR] [--seconds 20] [--honest 64] [--hostile 8]
[--out report.json]``. ``rlf/NL2SQL-Spider-v0`` envs (the Spider dev databases of the reference data in
``--data-dir``, ``spider/dev.json``; the embedded sample without it) share one in-process SQL server and one
reward, each episode's calls kept apart by the episode id in their requests' ``_meta``. Every env runs as its own
coroutine, as trainers step samples:

- honest: reset, one ``run_query`` of the task's gold query, then the gold query as the answer (the reward);
- hostile: reset, one response of 8 ``run_query`` calls of the worst queries below, then one of them as the
  answer (the reward path runs it too).

It reports the honest step latencies (p50, p99; tool steps and answer steps apart) of a quiet run (honest envs
alone) and of two hostile runs, their p99 ratio to the quiet one (the goal: within 2x), and the process's peak RSS
(the goal: under 1 GB). ``hostile_same_loop``: the hostile envs step on the honest ones' event loop, so the toolbox
hands their calls over in the same group as the honest ones (and merges them into the same batched requests);
``hostile_own_loop``: on an event loop of their own in another thread, as another trainer worker would.
``--no-batching`` sends one MCP request per call; ``--threads`` sets the SQL server's worker threads.

In ``rlf bench`` (``bench_sql_hostile``): a row per hostile run, ``sql_hostile_same_loop`` and
``sql_hostile_own_loop`` (the honest p99 over the quiet one's, PASS within 2x), and ``sql_hostile_peak_rss`` (PASS
under 1 GB); 64 honest and 8 hostile envs for 20 s a run (16 and 4 for 5 s with ``--quick``), one repeat.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from rlfactory_envs.benchmarking import BenchContext
from rlfactory_envs.sql.bench import spider_dev, sql_db_dir

HOSTILE_QUERIES = (
    "SELECT " + ", ".join(["zeroblob(999999)"] * 512),
    ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 1000) "
     "SELECT count(*) FROM c a, c b, c d"),
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT zeroblob(999999) FROM c",
    "SELECT " + ", ".join(["hex(zeroblob(400000))"] * 64),
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c ORDER BY random()",
    "SELECT group_concat(hex(zeroblob(499999))) FROM sqlite_master a, sqlite_master b",
    "SELECT printf('%.*c', 999999, 'x'), printf('%.*c', 999999, 'y'), printf('%.*c', 999999, 'z')",
)


def tool_call(sql: str) -> str:
    return '<tool_call>{"name": "run_query", "arguments": {"sql": %s}}</tool_call>' % json.dumps(sql)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


def current_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 2**10
    return 0.0


def make_envs(n: int, data_path: str | None, batching: bool, threads: int | None) -> list[Any]:
    from rlfactory_envs.sql.env import SqlEnv, sql_server_config

    db_dir = str(sql_db_dir(data_path))
    server_args = ["--threads", str(threads)] if threads else []
    config = sql_server_config(db_dir, tuning={"batching": batching}, server_args=server_args)
    return [SqlEnv(data_path=data_path, tool_servers=config, max_turns=4,
                   test_suite="off") for _ in range(n)]


async def honest_loop(env: Any, seed: int, stop_at: float, latencies: dict[str, list[float]]) -> None:
    while time.monotonic() < stop_at:
        _, info = await env.areset(seed=seed)
        gold = info["task"]["gold_sql"]
        for kind, action in (("tool", tool_call(gold)), ("answer", f"<answer>{gold}</answer>")):
            started = time.monotonic()
            await env.astep(action)
            latencies[kind].append(time.monotonic() - started)
        seed += 1


async def hostile_loop(env: Any, seed: int, stop_at: float, counts: dict[str, int]) -> None:
    response = "".join(tool_call(sql) for sql in HOSTILE_QUERIES)
    while time.monotonic() < stop_at:
        await env.areset(seed=seed)
        _, _, _, _, info = await env.astep(response)
        counts["calls"] += len(info.get("tool_results", ()))
        counts["refused"] += sum(1 for result in info.get("tool_results", ()) if result["is_error"])
        await env.astep(f"<answer>{HOSTILE_QUERIES[seed % len(HOSTILE_QUERIES)]}</answer>")
        counts["episodes"] += 1
        seed += 1


async def hostile_in_thread(hostile: list[Any], stop_at: float, counts: dict[str, int]) -> None:
    """The hostile loops on an event loop of their own, in another thread (another worker of the trainer)."""

    async def loops() -> None:
        await asyncio.gather(*(hostile_loop(env, i, stop_at, counts) for i, env in enumerate(hostile)))

    await asyncio.to_thread(asyncio.run, loops())


async def run(honest: list[Any], hostile: list[Any], seconds: float, same_loop: bool = True) -> dict[str, Any]:
    latencies: dict[str, list[float]] = {"tool": [], "answer": []}
    counts = {"calls": 0, "refused": 0, "episodes": 0}
    stop_at = time.monotonic() + seconds
    rss_samples: list[float] = []

    async def sample_rss() -> None:
        while time.monotonic() < stop_at:
            rss_samples.append(current_rss_mb())
            await asyncio.sleep(0.2)

    hostile_work = ([hostile_loop(env, i, stop_at, counts) for i, env in enumerate(hostile)] if same_loop
                    else [hostile_in_thread(hostile, stop_at, counts)])
    await asyncio.gather(sample_rss(), *hostile_work,
                         *(honest_loop(env, i * 1000, stop_at, latencies) for i, env in enumerate(honest)))
    every = latencies["tool"] + latencies["answer"]
    return {"honest_steps": len(every), **percentiles("", every), **percentiles("tool_", latencies["tool"]),
            **percentiles("answer_", latencies["answer"]), "hostile": counts,
            "max_rss_mb": max(rss_samples, default=0.0)}


def percentiles(prefix: str, latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies) or [float("nan")]
    return {f"{prefix}p50_s": statistics.median(ordered),
            f"{prefix}p99_s": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]}


async def bench(n_honest: int, n_hostile: int, seconds: float, data_path: str | None,
                batching: bool, threads: int | None = None) -> dict[str, Any]:
    envs = make_envs(n_honest + n_hostile, data_path, batching, threads)
    try:
        await run(envs[:4], [], 2.0)  # warm-up: server start, imports, gold caches
        quiet = await run(envs[:n_honest], [], seconds)
        same_loop = await run(envs[:n_honest], envs[n_honest:], seconds)
        own_loop = await run(envs[:n_honest], envs[n_honest:], seconds, same_loop=False)
    finally:
        for env in envs:
            env.close()
    return {"data": data_path or "embedded sample", "batching": batching, "threads": threads, "honest": n_honest,
            "hostile": n_hostile, "seconds": seconds, "quiet": quiet, "hostile_same_loop": same_loop,
            "hostile_own_loop": own_loop,
            "p99_ratio_same_loop": same_loop["p99_s"] / quiet["p99_s"],
            "p99_ratio_own_loop": own_loop["p99_s"] / quiet["p99_s"], "peak_rss_mb": peak_rss_mb()}


P99_RATIO_TARGET = 2.0
RSS_TARGET_MB = 1024


def hostile_run_row(report: dict[str, Any], run_name: str) -> dict[str, Any]:
    """The row of the hostile run ``run_name`` of ``report``: the honest p99 over the quiet one's, PASS within 2x."""
    ratio = report[f"p99_ratio_{run_name.removeprefix('hostile_')}"]
    seconds = report["seconds"]
    return {"name": f"sql_{run_name}", "n": report["honest"] + report["hostile"], "seconds": [seconds],
            "median_s": seconds, "min_s": seconds, "metric": "honest p99 / quiet p99", "value": ratio,
            "target": f"<= {P99_RATIO_TARGET:g}x", "pass": ratio <= P99_RATIO_TARGET,
            "honest_p99_s": report[run_name]["p99_s"], "quiet_p99_s": report["quiet"]["p99_s"],
            "hostile_calls": report[run_name]["hostile"]["calls"]}


def peak_rss_row(report: dict[str, Any]) -> dict[str, Any]:
    """``sql_hostile_peak_rss``: the highest RSS sampled during the three runs, PASS under 1 GB. Sampled, because
    the process's own peak (``ru_maxrss``) also holds whatever ran before (a test session)."""
    peak = max(report[run_name]["max_rss_mb"] for run_name in ("quiet", "hostile_same_loop", "hostile_own_loop"))
    seconds = 3 * report["seconds"]
    return {"name": "sql_hostile_peak_rss", "n": report["honest"] + report["hostile"], "seconds": [seconds],
            "median_s": seconds, "min_s": seconds, "metric": "MB", "value": peak,
            "target": f"< {RSS_TARGET_MB} MB", "pass": peak < RSS_TARGET_MB,
            "process_peak_rss_mb": report["peak_rss_mb"]}


def bench_sql_hostile(context: BenchContext) -> tuple[list[dict[str, Any]], list[str]]:
    """``rlf bench --only sql_hostile``: the rows of the module docstring. One repeat whatever
    ``context.repeats``: each run is already many steps."""
    honest, hostile, seconds = (16, 4, 5.0) if context.quick else (64, 8, 20.0)
    report = asyncio.run(bench(honest, hostile, seconds, spider_dev(context), batching=True))
    rows = [hostile_run_row(report, "hostile_same_loop"), hostile_run_row(report, "hostile_own_loop"),
            peak_rss_row(report)]
    notes = [f"sql_hostile: {report['data']}; quiet p99 {report['quiet']['p99_s']:.3f} s, hostile on the same loop "
             f"{report['hostile_same_loop']['p99_s']:.3f} s, on their own {report['hostile_own_loop']['p99_s']:.3f} s"]
    return rows, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlfactory_envs.sql.hostile_bench",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the quiet and the hostile run")
    parser.add_argument("--honest", type=int, default=64)
    parser.add_argument("--hostile", type=int, default=8)
    parser.add_argument("--data-dir", type=Path, help="the reference data folder, read for spider/dev.json (default: "
                        "none, the embedded sample)")
    parser.add_argument("--no-batching", action="store_true", help="one MCP request per call (no merging)")
    parser.add_argument("--threads", type=int, help="the SQL server's worker threads (its default when absent)")
    parser.add_argument("--out", type=Path, help="write the report as JSON here too")
    options = parser.parse_args(argv)
    data_path = spider_dev(BenchContext(data_dir=options.data_dir))
    report = asyncio.run(bench(options.honest, options.hostile, options.seconds, data_path,
                                 not options.no_batching, options.threads))
    text = json.dumps(report, indent=2)
    print(text)
    if options.out:
        options.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
