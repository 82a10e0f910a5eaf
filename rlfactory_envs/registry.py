"""The ``rlf/*`` environment ids, registered with Gymnasium on ``import rlfactory_envs``."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

ENVIRONMENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "rlf/Search-NQ-v0": ("rlfactory_envs.search.env:SearchEnv", {"chat_format": "qwen3"}),
    "rlf/Search-NQ-SearchR1-v0": ("rlfactory_envs.search.env:SearchEnv", {"chat_format": "search_r1"}),
    "rlf/NL2SQL-Spider-v0": ("rlfactory_envs.sql.env:SqlEnv", {"dataset": "spider"}),
    "rlf/NL2SQL-BIRD-v0": ("rlfactory_envs.sql.env:SqlEnv", {"dataset": "bird"}),
}


def register_environments() -> None:
    """Register every id once (re-importing is harmless). ``gym.make(id, **kwargs)`` overrides the defaults."""
    for env_id, (entry_point, kwargs) in ENVIRONMENTS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry_point, kwargs=dict(kwargs))
