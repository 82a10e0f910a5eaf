"""The episode semantics every rlf env keeps, as assertions the families' hypothesis properties share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from rlfactory_envs import EpisodeOver


def play_checking_semantics(env: Any, seed: int, episode: Sequence[str]) -> list[tuple[float, dict[str, Any]]]:
    """Reset with ``seed``, step the actions of ``episode`` until the end, and assert on every step: text
    observations in the space, rewards in range and 0.0 before the end, never both terminated and truncated, at
    most ``max_turns`` steps, and at the end an empty observation, the reward parts, and ``EpisodeOver`` on a
    further step. Returns ``(reward, info)`` of each step taken, for family-specific checks."""
    obs, _ = env.reset(seed=seed)
    assert isinstance(obs, str) and env.observation_space.contains(obs)
    low, high = env.reward_range
    steps = []
    for turn, action in enumerate(episode, start=1):
        obs, reward, terminated, truncated, info = env.step(action)
        steps.append((reward, info))
        assert isinstance(obs, str) and env.observation_space.contains(obs)
        assert low <= reward <= high
        assert not (terminated and truncated)
        assert turn <= env.max_turns
        if terminated or truncated:
            assert obs == "" and "reward_parts" in info
            with pytest.raises(EpisodeOver):
                env.step("again")
            break
        assert reward == 0.0
    return steps


def assert_max_turns_truncates(env: Any, seed: int, action: str) -> None:
    """Repeating ``action`` (one that neither answers nor ends) truncates exactly at ``max_turns``, reward 0."""
    env.reset(seed=seed)
    for turn in range(1, env.max_turns + 1):
        _, reward, terminated, truncated, info = env.step(action)
        if turn < env.max_turns:
            assert not (terminated or truncated)
    assert truncated and not terminated and reward == 0.0 and info["truncation_reason"] == "max_turns"
