"""``rlf bench --only sql_hostile``: hostile NL2SQL trajectories beside honest ones, on the tool side and on the answer
side: do the honest ones slow down, are their queries run, is each hostile answer bounded, does the process grow?

Run alone: ``python -m rlfactory_envs.sql.hostile_bench [--data-dir DIR] [--seconds 20] [--honest 64]
[--hostile-tools 32] [--hostile-answers 48] [--out report.json]``. ``rlf/NL2SQL-Spider-v0`` envs (the Spider dev
databases of the reference data in ``--data-dir``, ``spider/dev.json``; the embedded sample without it) share one
in-process SQL server and one reward, each episode's calls kept apart by the episode id in their requests'
``_meta``. Every env runs as its own coroutine, as trainers step samples:

- honest: reset, one ``run_query`` of the task's gold query (a tool step), then the gold query as the answer (an
  answer step);
- hostile on the tool side (``HOSTILE_QUERIES``): reset, one response of 8 ``run_query`` calls of the worst queries
  (wide rows, cartesian and endless recursive CTEs, megabyte ``printf``), then one of them as the answer;
- hostile on the answer side (``hostile_answers``): reset, then at once an answer that is an endless CTE, a slow
  query with the gold result, 99,999 rows of wide characters, a 64 KB expression or a 10,000-item ``IN``, checked on
  every database of the task's test suite.

Runs: ``quiet`` (honest alone), ``tools_same_loop`` (the tool-side mix on the honest envs' event loop, so their calls
travel in the same merged requests), ``tools_own_loop`` (on an event loop of their own in another thread, as another
trainer worker would) and, on envs whose reward checks the generated test suites, ``quiet_suites`` and ``answers``
(the answer-side mix). Goals: the honest tool step p99 and answer step p99 at most 2x quiet, no honest query left
unrun, every hostile answer's check within its wall clock (``answer_check.WALL_FACTOR`` times its CPU budget
``query_timeout_s``, from its arrival, waits included; the clock stops only while the answer's databases open or its
gold results are computed and while it waits for a thread behind light answers that came first: the reward's
``answer_clock``), the process's RSS under 1 GB. ``--no-batching`` sends one MCP request per call; ``--threads``
sets the SQL server's worker threads.

In ``rlf bench`` (``bench_sql_hostile``): the rows of ``ROWS``; 64 honest envs, 32 hostile on the tool side and 48 on
the answer side, 20 s a run (16, 8 and 12 for 5 s with ``--quick``), one repeat.
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
SLOW = ("(SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 3000000) "
        "SELECT x FROM c)) > 0")


def hostile_answers(gold: str) -> tuple[str, ...]:
    """The answer-side attacks for a task whose gold query is ``gold``."""
    return (HOSTILE_QUERIES[2],
            f"SELECT * FROM ({gold}) WHERE {SLOW}",  # the gold result, after seconds of work on each database
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 99999) "
            "SELECT x, char(128512) || hex(zeroblob(300)) FROM c",
            "SELECT " + " + ".join(["1"] * 21_000),
            f"SELECT * FROM ({gold}) WHERE 1 NOT IN ({', '.join(map(str, range(2, 10_002)))})")


def tool_call(sql: str) -> str:
    return '<tool_call>{"name": "run_query", "arguments": {"sql": %s}}</tool_call>' % json.dumps(sql)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


def current_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 2**10
    return 0.0


def make_envs(n: int, data_path: str | None, batching: bool, threads: int | None, test_suite: str = "off") -> list[Any]:
    from rlfactory_envs.sql.env import SqlEnv, sql_server_config

    db_dir = str(sql_db_dir(data_path))
    server_args = ["--threads", str(threads)] if threads else []
    config = sql_server_config(db_dir, tuning={"batching": batching}, server_args=server_args)
    return [SqlEnv(data_path=data_path, tool_servers=config, max_turns=4, test_suite=test_suite) for _ in range(n)]


class Tally:
    """What one run records: honest step latencies by kind, honest tool errors, hostile counts and answer times."""

    def __init__(self) -> None:
        self.latencies: dict[str, list[float]] = {"tool": [], "answer": []}
        self.honest_errors = 0
        self.hostile = {"calls": 0, "refused": 0, "episodes": 0}
        self.hostile_answer_s: list[float] = []
        self.hostile_checks: list[tuple[float, float]] = []  # each hostile answer's check: took, clock stops


async def honest_loop(env: Any, seed: int, stop_at: float, tally: Tally) -> None:
    while time.monotonic() < stop_at:
        _, info = await env.areset(seed=seed)
        gold = info["task"]["gold_sql"]
        for kind, action in (("tool", tool_call(gold)), ("answer", f"<answer>{gold}</answer>")):
            started = time.monotonic()
            _, _, _, _, step = await env.astep(action)
            tally.latencies[kind].append(time.monotonic() - started)
            tally.honest_errors += sum(1 for result in step.get("tool_results", ()) if result["is_error"])
        seed += 1


async def hostile_tool_loop(env: Any, seed: int, stop_at: float, tally: Tally) -> None:
    response = "".join(tool_call(sql) for sql in HOSTILE_QUERIES)
    while time.monotonic() < stop_at:
        await env.areset(seed=seed)
        _, _, _, _, info = await env.astep(response)
        tally.hostile["calls"] += len(info.get("tool_results", ()))
        tally.hostile["refused"] += sum(1 for result in info.get("tool_results", ()) if result["is_error"])
        await env.astep(f"<answer>{HOSTILE_QUERIES[seed % len(HOSTILE_QUERIES)]}</answer>")
        tally.hostile["episodes"] += 1
        seed += 1


async def hostile_answer_loop(env: Any, seed: int, stop_at: float, tally: Tally) -> None:
    while time.monotonic() < stop_at:
        _, info = await env.areset(seed=seed)
        attacks = hostile_answers(info["task"]["gold_sql"])
        started = time.monotonic()
        _, _, _, _, step = await env.astep(f"<answer>{attacks[seed % len(attacks)]}</answer>")
        tally.hostile_answer_s.append(time.monotonic() - started)
        clock = step.get("answer_clock", {})  # none when the env ended the episode without a check
        tally.hostile_checks.append((clock.get("took_s", tally.hostile_answer_s[-1]), clock.get("stopped_s", 0.0)))
        tally.hostile["episodes"] += 1
        seed += 1


async def in_own_loop(loops: list[Any]) -> None:
    """``loops`` (coroutines) on an event loop of their own, in another thread (another worker of the trainer)."""
    async def together() -> None:
        await asyncio.gather(*loops)

    await asyncio.to_thread(asyncio.run, together())


async def run(honest: list[Any], hostile: list[Any], seconds: float, loop: Any = hostile_tool_loop,
              own_loop: bool = False) -> dict[str, Any]:
    """One run: ``honest`` envs in ``honest_loop``, ``hostile`` ones in ``loop``, for ``seconds``."""
    tally = Tally()
    stop_at = time.monotonic() + seconds
    rss_samples: list[float] = []

    async def sample_rss() -> None:
        while time.monotonic() < stop_at:
            rss_samples.append(current_rss_mb())
            await asyncio.sleep(0.2)

    hostile_work = [loop(env, i, stop_at, tally) for i, env in enumerate(hostile)]
    await asyncio.gather(sample_rss(), *([in_own_loop(hostile_work)] if own_loop and hostile else hostile_work),
                         *(honest_loop(env, i * 1000, stop_at, tally) for i, env in enumerate(honest)))
    every = tally.latencies["tool"] + tally.latencies["answer"]
    return {"honest_steps": len(every), **percentiles("", every), **percentiles("tool_", tally.latencies["tool"]),
            **percentiles("answer_", tally.latencies["answer"]), "honest_tool_errors": tally.honest_errors,
            "honest_tool_calls": len(tally.latencies["tool"]), "hostile": tally.hostile,
            "hostile_answer_max_s": max(tally.hostile_answer_s, default=0.0),
            "hostile_check_max_clocked_s": max((took - stopped for took, stopped in tally.hostile_checks), default=0.0),
            "hostile_check_max_s": max((took for took, _ in tally.hostile_checks), default=0.0),
            "hostile_clock_stopped_max_s": max((stopped for _, stopped in tally.hostile_checks), default=0.0),
            "hostile_answers": len(tally.hostile_answer_s), "max_rss_mb": max(rss_samples, default=0.0)}


def percentiles(prefix: str, latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies) or [float("nan")]
    return {f"{prefix}p50_s": statistics.median(ordered),
            f"{prefix}p99_s": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]}


async def bench(n_honest: int, n_tools: int, n_answers: int, seconds: float, data_path: str | None,
                batching: bool, threads: int | None = None) -> dict[str, Any]:
    """Every run of the module docstring, on one set of envs per reward setting."""
    plain = make_envs(n_honest + n_tools, data_path, batching, threads)
    suites = make_envs(n_honest + n_answers, data_path, batching, threads, test_suite="generate")
    suites[0].runtime.reward_model.answer_clock = True  # the envs share one reward: its checks' clocks in info
    runs: dict[str, Any] = {}
    timeout_s = float(plain[0].runtime.settings.serving.query_timeout_s)
    try:
        await run(plain[:4], [], 2.0)  # warm-up: server start, imports, gold caches
        runs["quiet"] = await run(plain[:n_honest], [], seconds)
        runs["tools_same_loop"] = await run(plain[:n_honest], plain[n_honest:], seconds)
        runs["tools_own_loop"] = await run(plain[:n_honest], plain[n_honest:], seconds, own_loop=True)
        await run(suites[:n_honest], [], min(seconds, 5.0))  # warm-up: test suites built or read, gold cached
        runs["quiet_suites"] = await run(suites[:n_honest], [], seconds)
        runs["answers"] = await run(suites[:n_honest], suites[n_honest:], seconds, loop=hostile_answer_loop)
    finally:
        for env in plain + suites:
            env.close()
    return {"data": data_path or "embedded sample", "batching": batching, "threads": threads, "honest": n_honest,
            "hostile_tools": n_tools, "hostile_answers": n_answers, "seconds": seconds, "timeout_s": timeout_s,
            **runs, "peak_rss_mb": peak_rss_mb()}


P99_RATIO_TARGET = 2.0
RSS_TARGET_MB = 1024


def ratio_row(report: dict[str, Any], name: str, run_name: str, quiet: str, kind: str) -> dict[str, Any]:
    """A row: the honest ``kind`` step's p99 in ``run_name`` over ``quiet``'s, PASS within 2x (and, for tool steps,
    no honest query left unrun)."""
    hostile, baseline, seconds = report[run_name], report[quiet], report["seconds"]
    ratio = hostile[f"{kind}_p99_s"] / baseline[f"{kind}_p99_s"]
    unrun = hostile["honest_tool_errors"] / max(hostile["honest_tool_calls"], 1)
    return {"name": name, "n": report["honest"], "seconds": [seconds], "median_s": seconds, "min_s": seconds,
            "metric": f"honest {kind} step p99 / quiet p99", "value": ratio, "target": f"<= {P99_RATIO_TARGET:g}x",
            "pass": ratio <= P99_RATIO_TARGET and (kind != "tool" or unrun == 0),
            f"honest_{kind}_p50_s": hostile[f"{kind}_p50_s"], f"honest_{kind}_p99_s": hostile[f"{kind}_p99_s"],
            f"quiet_{kind}_p99_s": baseline[f"{kind}_p99_s"], "honest_queries_not_run": unrun,
            "hostile_calls": hostile["hostile"]["calls"], "hostile_episodes": hostile["hostile"]["episodes"]}


def answer_bound_row(report: dict[str, Any]) -> dict[str, Any]:
    """``sql_hostile_answer_bound``: the longest hostile answer check, from its arrival, less its clock's stops (the
    reward's ``answer_clock``: opening databases, gold results, waits behind light answers that came first), PASS
    within the wall clock an answer's check may take (``WALL_FACTOR`` times its CPU budget). The longest env step
    around it is reported too (it adds the env's own work and the event loop's delays)."""
    from rlfactory_reward_models.sql.answer_check import WALL_FACTOR

    seconds, answers = report["seconds"], report["answers"]
    longest, bound = answers["hostile_check_max_clocked_s"], WALL_FACTOR * report["timeout_s"]
    return {"name": "sql_hostile_answer_bound", "n": answers["hostile_answers"], "seconds": [seconds],
            "median_s": seconds, "min_s": seconds, "metric": "longest hostile answer check less its clock's stops (s)",
            "value": longest, "target": f"<= {bound:g} s", "pass": 0 < longest <= bound,
            "cpu_budget_s": report["timeout_s"], "longest_check_s": answers["hostile_check_max_s"],
            "longest_clock_stops_s": answers["hostile_clock_stopped_max_s"],
            "longest_step_s": answers["hostile_answer_max_s"]}


def peak_rss_row(report: dict[str, Any]) -> dict[str, Any]:
    """``sql_hostile_peak_rss``: the highest RSS sampled during the runs, PASS under 1 GB. Sampled, because the
    process's own peak (``ru_maxrss``) also holds whatever ran before (a test session)."""
    peak = max(report[name]["max_rss_mb"] for name in RUNS)
    seconds = len(RUNS) * report["seconds"]
    return {"name": "sql_hostile_peak_rss", "n": report["honest"], "seconds": [seconds], "median_s": seconds,
            "min_s": seconds, "metric": "MB", "value": peak, "target": f"< {RSS_TARGET_MB} MB",
            "pass": peak < RSS_TARGET_MB, "process_peak_rss_mb": report["peak_rss_mb"]}


RUNS = ("quiet", "tools_same_loop", "tools_own_loop", "quiet_suites", "answers")
ROWS = ("sql_hostile_tools_same_loop", "sql_hostile_tools_own_loop", "sql_hostile_answers",
        "sql_hostile_answer_bound", "sql_hostile_peak_rss")


def rows_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of ``ROWS``."""
    return [ratio_row(report, "sql_hostile_tools_same_loop", "tools_same_loop", "quiet", "tool"),
            ratio_row(report, "sql_hostile_tools_own_loop", "tools_own_loop", "quiet", "tool"),
            ratio_row(report, "sql_hostile_answers", "answers", "quiet_suites", "answer"),
            answer_bound_row(report), peak_rss_row(report)]


def bench_sql_hostile(context: BenchContext) -> tuple[list[dict[str, Any]], list[str]]:
    """``rlf bench --only sql_hostile``: the rows of ``ROWS``. One repeat whatever ``context.repeats``: each run is
    already many steps."""
    honest, tools, answers, seconds = (16, 8, 12, 5.0) if context.quick else (64, 32, 48, 20.0)
    report = asyncio.run(bench(honest, tools, answers, seconds, spider_dev(context), batching=True))
    notes = [f"sql_hostile: {report['data']}; honest tool step p99 {report['quiet']['tool_p99_s']:.3f} s quiet, "
             f"{report['tools_same_loop']['tool_p99_s']:.3f} s beside {tools} hostile envs on the same loop, "
             f"{report['tools_own_loop']['tool_p99_s']:.3f} s on their own; honest answer step p99 "
             f"{report['quiet_suites']['answer_p99_s']:.3f} s quiet, {report['answers']['answer_p99_s']:.3f} s beside "
             f"{answers} hostile answers"]
    return rows_of(report), notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlfactory_envs.sql.hostile_bench",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each run")
    parser.add_argument("--honest", type=int, default=64)
    parser.add_argument("--hostile-tools", type=int, default=32)
    parser.add_argument("--hostile-answers", type=int, default=48)
    parser.add_argument("--data-dir", type=Path, help="the reference data folder, read for spider/dev.json (default: "
                        "none, the embedded sample)")
    parser.add_argument("--no-batching", action="store_true", help="one MCP request per call (no merging)")
    parser.add_argument("--threads", type=int, help="the SQL server's worker threads (its default when absent)")
    parser.add_argument("--out", type=Path, help="write the report as JSON here too")
    options = parser.parse_args(argv)
    data_path = spider_dev(BenchContext(data_dir=options.data_dir))
    report = asyncio.run(bench(options.honest, options.hostile_tools, options.hostile_answers, options.seconds,
                               data_path, not options.no_batching, options.threads))
    report["rows"] = rows_of(report)
    text = json.dumps(report, indent=2)
    print(text)
    if options.out:
        options.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
