"""How farmable the NL2SQL reward is, measured on Spider dev or the embedded sample.

Run ``python -m rlfactory_envs.sql.hack_rates [--data-dir DIR | --data FILE] [--out report.json]``: the questions
are ``spider/dev.json`` of the reference data folder ``--data-dir``, or any Spider/BIRD questions file ``--data``;
the embedded sample with neither. For each reward setting (single database, as the official evaluator on one file
per folder; generated test suites, the default) it reports:

- ``gold``: the gold query scored against itself (1.0, or unscored when its result is empty everywhere);
- ``literal``: the result of the gold query on the task's database, read as a model reads it with ``run_query``,
  answered as a constant (``SELECT 6``), on questions whose gold result has at most 50 rows;
- ``empty``: ``SELECT NULL, ... WHERE 0`` with the gold's width;
- ``neighbours``: queries mutated from the gold (``rlfactory_reward_models.sql.test_suite.neighbours``) that return
  the gold's result on the task's database; ``different`` are those a 60-database reference suite (another seed)
  shows to differ.

The generated setting is measured twice: distilled for the task set (the default), and ``undistilled`` (suites
built with no gold queries: the first K random variants), which shows what the suites catch beyond the
neighbours they were chosen for.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rlfactory_envs.benchmarking import BenchContext
from rlfactory_envs.sql.bench import spider_dev, sql_task_set
from rlfactory_reward_models.base import RewardInput
from rlfactory_reward_models.sql.execution import SqlExecutionReward
from rlfactory_reward_models.sql.test_suite.neighbours import neighbour_queries
from rlfactory_tool_servers.sql.sandbox.engine import QueryError, QueryLimits

MAX_LITERAL_ROWS = 50
_LIMITS = QueryLimits(timeout_s=5.0)


def sql_literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def constant_query(columns: int, rows: list[tuple[Any, ...]]) -> str:
    """A query with no table that returns ``rows`` (in order), or no rows of ``columns`` columns."""
    if not rows:
        return f"SELECT {', '.join(['NULL'] * max(columns, 1))} WHERE 0"
    return " UNION ALL ".join("SELECT " + ", ".join(map(sql_literal, row)) for row in rows)


def _score_all(reward: SqlExecutionReward, pairs: list[tuple[Any, str]]) -> list[Any]:
    return asyncio.run(reward.score_batch([RewardInput(task, answer) for task, answer in pairs]))


def _paid(results: list[Any]) -> int:
    return sum(result.value == 1.0 for result in results)


def measure(data_path: str | None, suite_dir: str) -> dict[str, Any]:
    tasks, db_dir, queries = sql_task_set(data_path)
    settings = {
        "single": dict(test_suite="off", empty_gold="match"),
        "generated": dict(test_suite="generate", suite_queries=queries, suite_dir=suite_dir),
        "undistilled": dict(test_suite="generate", suite_queries={}, suite_dir=suite_dir),
    }
    reference = SqlExecutionReward(db_dir, test_suite="generate", suite_size=60, suite_candidates=60, suite_seed=1,
                                   suite_queries={}, suite_dir=suite_dir, empty_gold="match",
                                   constant_gold="match")
    literal, empty, neighbours = [], [], []
    for task in tasks:
        try:
            gold = reference.catalog.get(task.db_id).execute(task.gold_sql, _LIMITS, truncate=False)
        except QueryError:
            continue
        if len(gold.rows) <= MAX_LITERAL_ROWS:
            literal.append((task, constant_query(len(gold.columns), gold.rows)))
        empty.append((task, constant_query(len(gold.columns), [])))
        for neighbour in neighbour_queries(task.gold_sql):
            try:
                found = reference.catalog.get(task.db_id).execute(neighbour, _LIMITS, truncate=False)
            except QueryError:
                continue
            if sorted(map(repr, found.rows)) == sorted(map(repr, gold.rows)) and len(found.columns) == len(
                    gold.columns):
                neighbours.append((task, neighbour))
    different = [pair for pair, result in zip(neighbours, _score_all(reference, neighbours)) if result.value < 1.0]
    report: dict[str, Any] = {"data": data_path or "sample", "tasks": len(tasks), "literal_tasks": len(literal),
                              "neighbours": len(neighbours), "neighbours_different": len(different), "settings": {}}
    for name, options in settings.items():
        reward = SqlExecutionReward(db_dir, **options)
        try:
            started = time.perf_counter()
            for db_id in queries:  # build (or read) every suite first: its time is not the reward's
                reward.databases(db_id)
            built = time.perf_counter() - started
            golds = _score_all(reward, [(task, task.gold_sql) for task in tasks])
            unscored = sum("unscored" in (result.reason or "") for result in golds)
            caught = len(different) - _paid(_score_all(reward, different))
            report["settings"][name] = {
                "suite_build_s": round(built, 2),
                "gold_paid": _paid(golds), "gold_unscored": unscored, "gold_other": len(golds) - _paid(golds) - unscored,
                "literal_paid": _paid(_score_all(reward, literal)),
                "empty_paid": _paid(_score_all(reward, empty)),
                "neighbours_paid": _paid(_score_all(reward, neighbours)),
                "different_caught": caught,
            }
        finally:
            reward.close()
    reference.close()
    return report


def table(report: dict[str, Any]) -> str:
    lines = [f"data: {report['data']} ({report['tasks']} tasks; {report['literal_tasks']} with at most "
             f"{MAX_LITERAL_ROWS} gold rows; {report['neighbours']} neighbours agree with the gold on the original, "
             f"{report['neighbours_different']} of them shown different by a 60-database reference suite)",
             f"{'setting':<12} {'gold 1.0':>9} {'unscored':>9} {'literal':>14} {'empty':>12} {'neighbours':>14} "
             f"{'different caught':>18}"]
    for name, row in report["settings"].items():
        def rate(paid: int, total: int) -> str:
            return f"{paid} ({100 * paid / total:.1f}%)" if total else "-"

        lines.append(f"{name:<12} {row['gold_paid']:>9} {row['gold_unscored']:>9} "
                     f"{rate(row['literal_paid'], report['literal_tasks']):>14} "
                     f"{rate(row['empty_paid'], report['tasks']):>12} "
                     f"{rate(row['neighbours_paid'], report['neighbours']):>14} "
                     f"{rate(row['different_caught'], report['neighbours_different']):>18}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlfactory_envs.sql.hack_rates",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, help="the reference data folder, read for spider/dev.json "
                        "(default: none, the embedded sample)")
    parser.add_argument("--data", help="a Spider/BIRD questions file (instead of --data-dir's Spider dev)")
    parser.add_argument("--out", help="write the report as JSON here")
    args = parser.parse_args(argv)
    data_path = args.data or spider_dev(BenchContext(data_dir=args.data_dir))
    with tempfile.TemporaryDirectory(prefix="rlf-suites-") as suite_dir:
        report = measure(data_path, suite_dir)
    print(table(report))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
