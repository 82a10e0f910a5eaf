"""``rlf bench --only sql``: NL2SQL on the Spider dev databases of the reference data (``spider/dev.json``; the
embedded sample when absent, with a note). Every row says which in ``data``.

- ``sql_queries``: queries/s of N ``rlf/NL2SQL-Spider-v0`` trajectories (32 with ``--quick``, else 256; one
  ``EnvBatch``) each running its task's gold query through ``run_query`` in one step, merged into
  ``run_query_batch`` requests; ``sql_queries_unmerged``: one MCP request per call.
- ``sql_reward``: pairs verified/s (and ms an answer, wall and CPU) of the execution reward's ``score_batch`` over
  every question of the task set (its gold query as the prediction), with a cold start (gold results, learnt
  column counts and prepared statements forgotten, parsed texts kept: both queries executed) and a warm one
  (``sql_reward_warm``: the prediction only, a text seen before), on each database of the default test suite
  (generated variants) and on the task's database alone (``*_single_db``). ``sql_reward_fresh``: gold results
  cached, each prediction a text never seen (the gold query behind a comment naming the round), as in training:
  its parse and prepares count.
- ``sql_suite_build``: seconds per database to generate and distil its test suite from an empty cache (at most 2
  repeats).

``rlfactory_envs/sql/hostile_bench.py`` (``sql_hostile``) measures hostile trajectories beside honest ones, and
``python -m rlfactory_envs.sql.hack_rates`` how farmable the reward is.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from rlfactory_envs.benchmarking import BATCHING, BenchContext, Timing, row, timed_repeats, timed_repeats_sync
from rlfactory_envs.kernel.batch import EnvBatch

SPIDER_DEV = "spider/dev.json"
"""Spider's dev questions in the reference data (``BenchContext.data``); its databases lie beside them."""


def spider_dev(context: BenchContext) -> str | None:
    """The Spider dev questions file of ``context``'s reference data, or ``None`` (then: the embedded sample)."""
    found = context.data(SPIDER_DEV)
    return str(found) if found else None


def sql_db_dir(data_path: str | None) -> Path:
    """The database folder of the questions file ``data_path`` (the embedded sample's when ``None``)."""
    from rlfactory_envs.sql.tasks import SAMPLE_DB_DIR, default_db_dir

    return default_db_dir(data_path) if data_path else SAMPLE_DB_DIR


def sql_task_set(data_path: str | None) -> tuple[list[Any], Path, dict[str, list[str]]]:
    """The tasks of ``data_path`` (the embedded sample when ``None``), their database folder and their gold queries
    per database."""
    from rlfactory_envs.sql.tasks import gold_queries, load_sql_tasks

    tasks = list(load_sql_tasks(data_path))
    return tasks, sql_db_dir(data_path), gold_queries(tasks)


async def sql_query_timing(data_path: str | None, n: int, batching: bool, repeats: int) -> Timing:
    """Timing of one ``astep`` in which all ``n`` envs run their task's gold query."""
    from rlfactory_envs.sql.env import SqlEnv, sql_server_config

    config = sql_server_config(str(sql_db_dir(data_path)), tuning={"batching": batching})
    batch = EnvBatch([SqlEnv(data_path=data_path, tool_servers=config, max_turns=repeats + 3) for _ in range(n)])
    try:
        resets = await batch.areset(seeds=list(range(n)))
        actions = ['<tool_call>{"name": "run_query", "arguments": {"sql": %s}}</tool_call>'
                   % json.dumps(info["task"]["gold_sql"]) for _, info in resets]

        async def step() -> None:
            results = await batch.astep(actions)
            errors = [r.info["tool_results"][0]["text"] for r in results if r and r.info["tool_results"][0]["is_error"]]
            if errors:
                raise RuntimeError(f"{len(errors)} queries failed, e.g. {errors[0]}")
        return await timed_repeats(repeats, None, step)
    finally:
        batch.close()


async def sql_reward_timing(data_path: str | None, repeats: int, test_suite: str) -> tuple[list[Timing], int]:
    """Gold queries verified against themselves: cold, warm and fresh (see the module docstring). Generated test
    suites are built (or read) before the clock starts: that is a one-time cost per database, reported apart."""
    from rlfactory_reward_models.base import RewardInput
    from rlfactory_reward_models.sql.execution import SqlExecutionReward
    from rlfactory_tool_servers.sql.sandbox.engine import forget_column_counts

    tasks, db_dir, queries = sql_task_set(data_path)
    timings = [Timing(), Timing(), Timing()]
    for i in range(repeats + 1):
        reward = SqlExecutionReward(db_dir, test_suite=test_suite, suite_queries=queries)
        try:
            for db_id in queries:
                reward.databases(db_id)
            forget_column_counts()
            golds = [RewardInput(task, task.gold_sql) for task in tasks]
            fresh = [RewardInput(task, f"/* round {i} */ {task.gold_sql}") for task in tasks]
            for timing, answers in zip(timings, (golds, golds, fresh)):
                with timing.measure(keep=i > 0):
                    results = await reward.score_batch(answers)
                if any(r.value != 1.0 and "unscored" not in (r.reason or "") for r in results):
                    raise RuntimeError("a gold query did not verify against itself")
        finally:
            reward.close()
    return timings, len(tasks)


def sql_suite_build_timing(data_path: str | None, repeats: int) -> tuple[Timing, int]:
    """Building the generated test suites of every database of the task set, from an empty cache."""
    from rlfactory_reward_models.sql.execution import SqlExecutionReward

    _, db_dir, queries = sql_task_set(data_path)

    def build() -> None:
        with tempfile.TemporaryDirectory(prefix="rlf-bench-suites-") as folder:
            reward = SqlExecutionReward(db_dir, suite_queries=queries, suite_dir=folder)
            try:
                for db_id in queries:
                    reward.databases(db_id)
            finally:
                reward.close()
    return timed_repeats_sync(repeats, build), len(queries)


def sql_query_rows(data_path: str | None, n: int, repeats: int, label: str) -> list[dict[str, Any]]:
    """``sql_queries`` and ``sql_queries_unmerged``."""
    rows = []
    for batching, suffix in BATCHING:
        timing = asyncio.run(sql_query_timing(data_path, n, batching, repeats))
        rows.append(row(f"sql_queries{suffix}", n, timing, "queries/s", n / statistics.median(timing.walls),
                        data=label))
    return rows


def sql_reward_rows(data_path: str | None, repeats: int, label: str) -> list[dict[str, Any]]:
    """``sql_reward``, ``sql_reward_warm`` and ``sql_reward_fresh``, on generated test suites and on the task's
    database alone."""
    rows = []
    for test_suite, suffix in (("generate", ""), ("off", "_single_db")):
        timings, pairs = asyncio.run(sql_reward_timing(data_path, repeats, test_suite))
        for name, timing in zip(("sql_reward", "sql_reward_warm", "sql_reward_fresh"), timings):
            rows.append(row(f"{name}{suffix}", pairs, timing, "pairs/s", pairs / statistics.median(timing.walls),
                            data=label, ms_per_answer=1e3 * statistics.median(timing.walls) / pairs,
                            cpu_ms_per_answer=1e3 * statistics.median(timing.cpus) / pairs))
    return rows


def sql_suite_build_row(data_path: str | None, repeats: int, label: str) -> dict[str, Any]:
    """``sql_suite_build``: at most 2 repeats (each builds every suite from nothing)."""
    timing, databases = sql_suite_build_timing(data_path, 1 if repeats <= 1 else 2)
    return row("sql_suite_build", databases, timing, "s/database", statistics.median(timing.walls) / databases,
               data=label)


def bench_sql(context: BenchContext) -> tuple[list[dict[str, Any]], list[str]]:
    """The ``sql_*`` rows (see the module docstring)."""
    n, repeats, data_path = 32 if context.quick else 256, context.repeats, spider_dev(context)
    label = "spider_dev" if data_path else "sample"
    notes = [] if data_path else [context.absent("sql measured on the embedded sample", SPIDER_DEV)]
    rows = [*sql_query_rows(data_path, n, repeats, label), *sql_reward_rows(data_path, repeats, label),
            sql_suite_build_row(data_path, repeats, label)]
    return rows, notes
