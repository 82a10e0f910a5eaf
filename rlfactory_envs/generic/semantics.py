"""The generic family's env-semantics options (``rlfactory_envs.testing``), on its embedded sample: exact match
pays 0.0 or 1.0."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def rewards_in_the_sample_are_binary(env: Any, action: str, result: Any) -> None:
    assert result.reward in (0.0, 1.0), f"exact_match gave {result.reward!r}"


def semantics_options(env_id: str) -> Mapping[str, Any]:
    return {"env_kwargs": {"max_turns": 3}, "max_examples": 25, "check_step": rewards_in_the_sample_are_binary,
            "call_tools": ["calculate"]}  # the sample's tool is a plain function: no annotations say it is safe
