"""``rlf bench --only travel``: ``rlf/Travel-v0``'s sandbox tools and its plan verification.

- ``travel_tools``: tool calls/s of N trajectories (32 with ``--quick``, else 256; one ``EnvBatch``, the embedded
  sample's sandbox) each asking four sandbox tools (its query's outbound flights, stays, restaurants and
  attractions) in one step, merged into ``*_batch`` requests; ``travel_tools_unmerged``: one MCP request per call.
- ``travel_verify``: the official plan verification (every commonsense and hard constraint) per plan, on the 45
  TravelPlanner training gold plans of the reference data (``travelplanner/``: ``std_travelplanner.jsonl``, its
  ``database`` and ``train_ref_info.jsonl``; the embedded sample's reference plans when absent, with a note).
  Target: under 5 ms a plan.
"""

from __future__ import annotations

import asyncio
import json
import statistics
from typing import Any

from rlfactory_envs.benchmarking import BATCHING, BenchContext, Timing, row, timed_repeats, timed_repeats_sync
from rlfactory_envs.kernel.batch import EnvBatch

TRAVELPLANNER = "travelplanner"
"""TravelPlanner's folder in the reference data (``BenchContext.data``)."""
VERIFY_TARGET_MS = 5.0


def travel_tools_action(task: dict[str, Any]) -> str:
    """One response calling four sandbox tools about ``task``'s first destination."""
    city = task["dest"] if task["visiting_city_number"] == 1 else "Glenhallow"
    calls = [("search_flights", {"origin": task["org"], "destination": city, "date": task["date"][0]}),
             *((name, {"city": city}) for name in ("search_accommodations", "search_restaurants",
                                                   "search_attractions"))]
    return "".join('<tool_call>{"name": "%s", "arguments": %s}</tool_call>' % (name, json.dumps(arguments))
                   for name, arguments in calls)


async def travel_tools_timing(n: int, batching: bool, repeats: int) -> Timing:
    """Timing of one ``astep`` in which all ``n`` envs call four sandbox tools."""
    from rlfactory_envs.travel.env import TravelEnv, travel_server_config
    from rlfactory_envs.travel.family import SAMPLE_DATABASE_DIR

    config = travel_server_config(str(SAMPLE_DATABASE_DIR), tuning={"batching": batching})
    batch = EnvBatch([TravelEnv(tool_servers=config, max_turns=repeats + 3) for _ in range(n)])
    try:
        resets = await batch.areset(seeds=list(range(n)))
        actions = [travel_tools_action(info["task"]) for _, info in resets]

        async def step() -> None:
            results = await batch.astep(actions)
            errors = [t["text"] for r in results if r for t in r.info["tool_results"] if t["is_error"]]
            if errors:
                raise RuntimeError(f"{len(errors)} travel calls failed, e.g. {errors[0]}")
        return await timed_repeats(repeats, None, step)
    finally:
        batch.close()


def travel_plans(context: BenchContext) -> tuple[Any, list[tuple[Any, Any]], str]:
    """The sandbox, the (query, gold plan) pairs and their label: TravelPlanner's training gold plans, else the
    embedded sample's reference plans."""
    from rlfactory_envs.travel.family import SAMPLE_DATABASE_DIR, SAMPLE_PLANS_PATH, SAMPLE_QUERIES_PATH
    from rlfactory_envs.travel.tasks import load_gold_plans, load_travel_tasks
    from rlfactory_tool_servers.travel.store import open_sandbox

    gold, folder = context.data(f"{TRAVELPLANNER}/std_travelplanner.jsonl"), context.data(TRAVELPLANNER)
    if gold is not None and folder is not None:
        sandbox = open_sandbox(folder / "database", folder / "train_ref_info.jsonl")
        return sandbox, list(zip(load_travel_tasks(gold, folder / "database"), load_gold_plans(gold))), \
            "travelplanner_train_gold"
    plans = [json.loads(line)["plan"] for line in SAMPLE_PLANS_PATH.read_text().splitlines()]
    return open_sandbox(SAMPLE_DATABASE_DIR), list(zip(load_travel_tasks(SAMPLE_QUERIES_PATH), plans)), "sample"


def travel_verify_timing(context: BenchContext) -> tuple[Timing, int, str]:
    """Timing of verifying every plan of ``travel_plans``, their count and their label."""
    from rlfactory_reward_models.travel.evaluate import evaluate_plan
    from rlfactory_reward_models.travel.lookup import PlanLookup

    sandbox, pairs, label = travel_plans(context)

    def verify_all() -> None:
        for query, plan in pairs:
            evaluate_plan(query, plan, PlanLookup(sandbox))
    return timed_repeats_sync(context.repeats, verify_all), len(pairs), label


def bench_travel(context: BenchContext) -> tuple[list[dict[str, Any]], list[str]]:
    """The ``travel_*`` rows (see the module docstring)."""
    n = 32 if context.quick else 256
    rows = []
    for batching, suffix in BATCHING:
        timing = asyncio.run(travel_tools_timing(n, batching, context.repeats))
        rows.append(row(f"travel_tools{suffix}", n, timing, "calls/s", 4 * n / statistics.median(timing.walls)))
    timing, plans, label = travel_verify_timing(context)
    per_plan_ms = 1000 * statistics.median(timing.walls) / plans
    rows.append(row("travel_verify", plans, timing, "ms/plan", per_plan_ms, f"< {VERIFY_TARGET_MS:g} ms/plan",
                    per_plan_ms < VERIFY_TARGET_MS, data=label))
    notes = [] if label != "sample" else [context.absent("travel_verify on the embedded sample", f"{TRAVELPLANNER}/")]
    return rows, notes
