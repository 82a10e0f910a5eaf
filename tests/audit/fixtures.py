"""Rewards and envs the audit's tests name: a farmable reward, one that pays nothing, an env without a reference
answer and an env with hacks of its own."""

from __future__ import annotations

from typing import Any

from rlfactory_envs.generic.env import McpEnv
from rlfactory_envs.generic.tooling import GenericTooling
from rlfactory_envs.kernel.reward_hacks import FixedResponseHack, RewardHack, final_answer
from rlfactory_envs.kernel.families import tooling_of


def substring_reward(answer: str | None, ground_truth: Any) -> float:
    """Farmable on purpose: pays whenever the ground truth occurs anywhere in the answer."""
    return float(answer is not None and str(ground_truth) in answer)


def no_reward(answer: str | None, ground_truth: Any) -> float:
    """Pays nothing, whatever the answer: it resists every hack, and the control must say so."""
    return 0.0


class NoReference(GenericTooling):
    def reference_answer(self, env: Any, task: Any) -> str | None:
        return None


class EnvWithoutReference(McpEnv):
    """The generic env's sample, with no reference answer to give."""

    tooling = NoReference()


class OwnHacks(GenericTooling):
    def reward_hacks(self, env: Any) -> list[RewardHack]:
        return [FixedResponseHack("empty_answer", "the family's own empty answer", lambda env: final_answer(env, "")),
                FixedResponseHack("reference_twice", "the reference written twice",
                                  lambda env: final_answer(env, 2 * tooling_of(env).reference_answer(env, env.task)))]


class EnvWithOwnHacks(McpEnv):
    """The generic env's sample with two hacks of its own: one replaces the generic ``empty_answer``, one is new."""

    tooling = OwnHacks()
