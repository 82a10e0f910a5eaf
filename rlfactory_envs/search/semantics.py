"""The search family's env-semantics options (``rlfactory_envs.testing``): a truncated episode scores 0.0."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def truncation_scores_zero(env: Any, action: str, result: Any) -> None:
    """An episode cut short without an answer scores 0.0 (the default format_score)."""
    if result.truncated:
        assert result.reward == 0.0, f"a truncated search episode scored {result.reward!r}, not 0.0"


def semantics_options(env_id: str) -> Mapping[str, Any]:
    return {"env_kwargs": {"max_turns": 3, "max_action_chars": 4096}, "max_examples": 50,
            "check_step": truncation_scores_zero}
