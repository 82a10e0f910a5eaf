"""What tooling needs of the search family: its baseline (search, answer the top title), its reward hacks and the
reference answer they hide or stuff, the ground truth a trainer's data file shows, its semantics-test options."""

from __future__ import annotations

from typing import Any

from rlfactory_envs.kernel.families import FamilyTooling
from rlfactory_envs.kernel.reward_hacks import RewardHack
from rlfactory_envs.search.baseline import SearchThenTitlePolicy
from rlfactory_envs.search.hacks import search_hacks
from rlfactory_envs.search.task import SearchTask
from rlfactory_reward_models.qa_match import normalize_answer


class SearchTooling(FamilyTooling):
    def baseline_policy(self, env: Any) -> SearchThenTitlePolicy:
        return SearchThenTitlePolicy()

    def reward_hacks(self, env: Any) -> list[RewardHack]:
        return search_hacks()

    def reference_answer(self, env: Any, task: SearchTask) -> str | None:
        """The first golden answer that exact match can score (``"A+"`` normalises to nothing), else the first."""
        scorable = [answer for answer in task.golden_answers if normalize_answer(answer)]
        return (scorable or list(task.golden_answers) or [None])[0]

    def ground_truth(self, env: Any, task: SearchTask) -> dict[str, list[str]]:
        return task.ground_truth
