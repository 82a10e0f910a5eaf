"""What tooling needs of the travel family: its baseline (gather, then plan), its reward hacks and the reference plan
they start from, the benchmark's report table, its semantics-test options."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from rlfactory_envs.kernel.families import FamilyTooling
from rlfactory_envs.kernel.reward_hacks import RewardHack
from rlfactory_envs.travel.baseline import GatherThenPlanPolicy
from rlfactory_envs.travel.hacks import travel_hacks
from rlfactory_envs.travel.query import TravelQuery
from rlfactory_envs.travel.reference_plans import reference_plan
from rlfactory_envs.travel.report import TravelReport, travel_report


class TravelTooling(FamilyTooling):
    def baseline_policy(self, env: Any) -> GatherThenPlanPolicy:
        return GatherThenPlanPolicy()

    def reward_hacks(self, env: Any) -> list[RewardHack]:
        return travel_hacks()

    def reference_answer(self, env: Any, task: TravelQuery) -> str | None:
        """The task's reference plan as JSON (``reference_plans``), or ``None`` where there is none."""
        plan = reference_plan(env, task)
        return None if plan is None else json.dumps(plan, ensure_ascii=False)

    def report(self, env: Any, episodes: Sequence[tuple[dict[str, Any], Mapping[str, Any]]]) -> TravelReport:
        """The benchmark's table (``travel_report``) over the episodes' queries and verdicts; an episode that
        ended without a verdict (a failed policy) counts as not delivered."""
        return travel_report((TravelQuery.from_dict(task), info.get("travel_eval") or {"delivered": False})
                             for task, info in episodes)
