"""What tooling needs of the Android family: its baseline (the template's reference plan, played from the screen
text), its reward hacks (whose control plays that plan), the ground truth a trainer's data file shows, its
semantics-test options."""

from __future__ import annotations

from typing import Any

from rlfactory_envs.android.baseline import ScriptedPhonePolicy
from rlfactory_envs.android.hacks import android_hacks
from rlfactory_envs.android.tasks import AndroidTask
from rlfactory_envs.kernel.families import FamilyTooling
from rlfactory_envs.kernel.reward_hacks import RewardHack


class AndroidTooling(FamilyTooling):
    def baseline_policy(self, env: Any) -> ScriptedPhonePolicy:
        return ScriptedPhonePolicy()

    def reward_hacks(self, env: Any) -> list[RewardHack]:
        """Endings at once, random actions, the goal's words as the answer; the control plays the reference plan."""
        return android_hacks()

    def ground_truth(self, env: Any, task: AndroidTask) -> dict[str, Any]:
        return task.ground_truth
