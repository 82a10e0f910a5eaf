"""The ``rlf/*`` environment ids: every family's, found by ``discover_families`` and registered with Gymnasium on
``import rlfactory_envs``."""

from __future__ import annotations

import gymnasium as gym

from rlfactory_envs.kernel.families import EnvEntry, Family, discover_families

FAMILIES: list[Family] = discover_families()
ENVIRONMENTS: dict[str, EnvEntry] = {env_id: entry for family in FAMILIES
                                     for env_id, entry in family.environments.items()}


def register_environments() -> None:
    """Register every id once (re-importing is harmless). ``gym.make(id, **kwargs)`` overrides the defaults."""
    for env_id, entry in ENVIRONMENTS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry.entry_point, kwargs=dict(entry.kwargs))
