"""What tooling needs of the NL2SQL family: its baseline (explore, then guess), its reward hacks and the reference
answer (the gold query), its semantics-test options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlfactory_envs.kernel.families import FamilyTooling
from rlfactory_envs.kernel.reward_hacks import RewardHack
from rlfactory_envs.sql.baseline import ExploreThenGuessPolicy
from rlfactory_envs.sql.hacks import sql_hacks
from rlfactory_envs.sql.task import SqlTask


class SqlTooling(FamilyTooling):
    def baseline_policy(self, env: Any) -> ExploreThenGuessPolicy:
        return ExploreThenGuessPolicy()

    def reward_hacks(self, env: Any) -> list[RewardHack]:
        return sql_hacks()

    def reference_answer(self, env: Any, task: SqlTask) -> str | None:
        return task.gold_sql

    def semantics_options(self, env_id: str) -> Mapping[str, Any]:
        from rlfactory_envs.sql.semantics import semantics_options  # hypothesis: the testing extra

        return semantics_options(env_id)
