"""What tooling needs of the NL2SQL family: its scripted policy (explore, then play the gold query), its reward hacks
and the reference answer (the gold query), its semantics-test options."""

from __future__ import annotations

from typing import Any

from rlfactory_envs.kernel.families import FamilyTooling
from rlfactory_envs.kernel.reward_hacks import RewardHack
from rlfactory_envs.sql.baseline import ExploreThenGoldPolicy
from rlfactory_envs.sql.hacks import sql_hacks
from rlfactory_envs.sql.task import SqlTask


class SqlTooling(FamilyTooling):
    def baseline_policy(self, env: Any) -> ExploreThenGoldPolicy:
        return ExploreThenGoldPolicy()

    def reward_hacks(self, env: Any) -> list[RewardHack]:
        return sql_hacks()

    def reference_answer(self, env: Any, task: SqlTask) -> str | None:
        return task.gold_sql
