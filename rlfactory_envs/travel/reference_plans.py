"""Reference plans: a plan known to pass for a task, for the audit's control and the hacks that start from one.

The embedded sample's ``reference_plans.jsonl`` (matched by ``idx`` and query text), or the gold plan of each row of
a chat-row file (``std_travelplanner.jsonl``, one per row, in file order). A runtime reads them once, when first
asked (``TravelRuntime.reference_plans``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rlfactory_envs.kernel.task_source import TaskSource
from rlfactory_envs.travel.family import SAMPLE_PLANS_PATH, SAMPLE_QUERIES_PATH
from rlfactory_envs.travel.query import TravelQuery
from rlfactory_envs.travel.tasks import load_gold_plans


def reference_plans(tasks: TaskSource[TravelQuery]) -> Mapping[str, tuple[str, list[Any]]]:
    """``{task_id: (query text, plan)}`` for every task of ``tasks`` with a known reference plan."""
    if tasks.path is None:
        return {}
    if tasks.path == str(SAMPLE_QUERIES_PATH):
        rows = [json.loads(line) for line in SAMPLE_PLANS_PATH.read_text(encoding="utf-8").splitlines() if line]
        return {str(row["idx"]): (str(row["query"]), row["plan"]) for row in rows}
    try:
        plans = load_gold_plans(tasks.path)
    except (ValueError, OSError):  # not chat rows: the file carries no plans
        return {}
    if len(plans) != len(tasks):
        return {}
    return {task.task_id: (task.query, plan) for task, plan in zip(tasks, plans)}


def reference_plan(env: Any, task: TravelQuery) -> list[Any] | None:
    """The reference plan of ``task`` (a task of ``env``'s runtime, matched by id and query text), or ``None``."""
    plans = getattr(env.runtime, "reference_plans", None) or {}
    query, plan = plans.get(task.task_id, (None, None))
    return plan if query == task.query else None
