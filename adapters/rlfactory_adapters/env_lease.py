"""An env for each sample, on the process's one runtime for its id and settings.

verl's agent loop and OpenRLHF's agent executor run one coroutine per sample. An env is light (one episode's state)
and what it plays on (tasks, toolbox, reward) is its runtime, shared through ``rlfactory_envs.kernel.shared``: the
first sample of an id and settings builds the runtime in a worker thread (loading a large dataset must not stall the
other samples) and holds it for the rest of the process, so the next training step finds the tool servers running;
every sample gets a fresh env on it, in microseconds, closed when the sample ends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from rlfactory_envs.env_spec import env_class, is_spec_path, resolve, split_options
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.runtime import runtime_for, settings_key
from rlfactory_envs.kernel.shared import SHARED

RELEASED_MID_EPISODE = "the trainer released the env before the episode ended"


@dataclass(frozen=True)
class Registered:
    """An env to lease: its class, the settings of its runtime (its registered defaults under the caller's), and
    the env's own options (``render_mode``, ``record_timings``). ``gym.make``'s own (``max_episode_steps``) do not
    apply to a leased env: ``max_turns`` bounds its episode."""

    cls: type[ToolEnv]
    settings: dict[str, Any]
    options: dict[str, Any]

    def held(self) -> bool:
        """Whether its runtime is built and held (a sample's env is then made at once)."""
        return SHARED.holders(settings_key(self.cls, self.settings)) > 0

    def hold(self) -> None:
        """Build its runtime (blocking) and hold it for the rest of the process."""
        runtime_for(self.cls, self.settings)

    def env(self) -> ToolEnv:
        return self.cls(**self.settings, **self.options)


def registered(env_id: str, env_kwargs: Mapping[str, Any] | None) -> Registered:
    """The env ``env_id`` names (a registered id, or an env spec file) with ``env_kwargs`` over its defaults."""
    if is_spec_path(env_id):
        spec = resolve(env_id, env_kwargs)
        env_id, env_kwargs = spec.env_id, spec.kwargs
    if env_id not in gym.registry:
        raise ConfigError(f"unknown env {env_id!r}: give a registered id (see `rlf list`) or the path of an env spec "
                          "file (.yaml, .yml, .json)")
    cls = env_class(env_id)
    if cls is None or not issubclass(cls, ToolEnv):
        raise ConfigError(f"{env_id!r} is not an rlf tool env")
    return Registered(cls, *split_options({**gym.spec(env_id).kwargs, **dict(env_kwargs or {})}))


def sample_env(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> ToolEnv:
    """A fresh env for one sample, on the held runtime of ``env_id`` and ``env_kwargs`` (built here the first
    time: blocking)."""
    entry = registered(env_id, env_kwargs)
    if not entry.held():
        entry.hold()
    return entry.env()


async def asample_env(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> ToolEnv:
    """``sample_env`` from a trainer's loop: a runtime not built yet is built in a worker thread. A caller
    cancelled meanwhile leaves the build to finish, and its runtime held for the next sample."""
    entry = registered(env_id, env_kwargs)
    if not entry.held():
        await asyncio.shield(asyncio.ensure_future(asyncio.to_thread(entry.hold)))
    return entry.env()


def give_back(env: ToolEnv) -> None:
    """End ``env``'s sample: an episode still running is aborted, and the env closed (its runtime stays held)."""
    if not env.done:
        env.abort(RELEASED_MID_EPISODE)
    env.close()


@contextlib.asynccontextmanager
async def alease_env(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> AsyncIterator[ToolEnv]:
    """``async with alease_env(id, kwargs) as env``: a fresh env for one sample (``asample_env``), given back on
    exit (``give_back``)."""
    env = await asample_env(env_id, env_kwargs)
    try:
        yield env
    finally:
        give_back(env)


@contextlib.contextmanager
def lease_env(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> Iterator[ToolEnv]:
    """``alease_env`` for sync code."""
    env = sample_env(env_id, env_kwargs)
    try:
        yield env
    finally:
        give_back(env)
