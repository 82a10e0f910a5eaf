"""``rlf eval-plans``: score a submission file the way TravelPlanner's ``eval.py`` does, without a model.

    rlf eval-plans submission.jsonl --queries validation.csv --database-dir database/ --flights-path flights.csv

The submission is the official format, one ``{"idx", "query", "plan"}`` a line (``plan``: the list of days,
``null`` when nothing was delivered, or its text). Queries are matched to plans by position, as ``eval.py`` does;
``--queries`` takes any layout ``load_travel_tasks`` reads (the released split files). Without ``--queries`` the
fields are read from each row's query text (``query_text``): a stand-in for users without the split files, whose
numbers can differ where the text is ambiguous, and said so in the output. Prints the benchmark's table;
``--details`` writes each plan's verdict as JSONL, ``--json`` the table's numbers.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.families import FamilyCommand
from rlfactory_envs.kernel.task_files import read_rows
from rlfactory_envs.travel.family import SAMPLE_DATABASE_DIR
from rlfactory_envs.travel.tasks import load_travel_tasks
from rlfactory_reward_models.travel.evaluate import evaluate_plan
from rlfactory_reward_models.travel.lookup import PlanLookup
from rlfactory_reward_models.travel.plan_text import parse_plan
from rlfactory_envs.travel.report import travel_report
from rlfactory_tool_servers.travel.store import open_sandbox


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("submission", help="the plans: JSONL of {idx, query, plan}, in the queries' order")
    parser.add_argument("--queries", help="the queries (the split's file, any layout rlf/Travel-v0 reads); "
                        "default: read from the submission's query texts")
    parser.add_argument("--database-dir", default=str(SAMPLE_DATABASE_DIR),
                        help="TravelPlanner's database/ folder (default: the embedded sample's)")
    parser.add_argument("--flights-path", help="clean_Flights_2022.csv or a reference-information JSONL (default: "
                        "database-dir/flights/clean_Flights_2022.csv when present)")
    parser.add_argument("--strict", action="store_true", help="the reward's strict reading (exact names, only the "
                        "benchmark's modes on each day's route and date, exactly the trip's days) instead of the "
                        "official one")
    parser.add_argument("--details", help="write each plan's verdict here (JSONL)")
    parser.add_argument("--json", help="write the table's numbers here (JSON)")


def _plan(value: Any) -> tuple[list[Any] | None, str]:
    if value is None or value == []:
        return None, "no plan was delivered"
    if isinstance(value, list):
        return value, ""
    plan, why = parse_plan(str(value))
    return plan, why or ""


def eval_plans(args: argparse.Namespace) -> int:
    submission = Path(args.submission)
    try:
        rows = [row.data for row in read_rows(submission, what="plans")]
        queries = list(load_travel_tasks(args.queries or submission, args.database_dir))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if not all(isinstance(row, dict) and "plan" in row for row in rows):
        raise ConfigError(f"{submission}: every line must be an object with a 'plan' (the official submission "
                          "format {\"idx\", \"query\", \"plan\"})")
    if len(queries) != len(rows):
        raise ConfigError(f"{args.queries} holds {len(queries)} queries but {submission} {len(rows)} plans; they are "
                          "matched by position")
    sandbox = open_sandbox(args.database_dir, args.flights_path)
    results = []
    details = Path(args.details).open("w", encoding="utf-8") if args.details else None
    try:
        for query, row in zip(queries, rows):
            plan, why = _plan(row["plan"])
            verdict = evaluate_plan(query, plan, PlanLookup(sandbox, strict=args.strict), not_delivered=why)
            results.append((query, verdict))
            if details is not None:
                details.write(json.dumps({"idx": row.get("idx"), "task_id": query.task_id, **verdict}) + "\n")
    finally:
        if details is not None:
            details.close()
    report = travel_report(results)
    if not args.queries:
        print("queries read from the submission's texts (no --queries): approximate where a text is ambiguous")
    print(report.table())
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rlf eval-plans", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return eval_plans(parser.parse_args(argv))


COMMAND = FamilyCommand("eval-plans", "score TravelPlanner submissions ({idx, query, plan} JSONL) as the official "
                        "evaluation does, without a model", add_arguments, eval_plans)
"""``rlf eval-plans``, the travel family's own command (declared in ``family.py``)."""
