"""A process-wide pool of rlf envs for trainers that run one coroutine per sample.

verl's agent loop and OpenRLHF's agent executor create a fresh object per sample; building an env (and
connecting its tool servers) per sample would cost more than the episode. ``lease_env`` lends an idle env built
with the same id and kwargs, or builds one; envs of one id and kwargs share one toolbox (pooled MCP sessions),
so a worker's concurrent episodes send their tool calls over the same sessions.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from rlfactory_envs import make_env
from rlfactory_envs.kernel.env import ToolEnv


def env_key(env_id: str, env_kwargs: Mapping[str, Any] | None) -> str:
    """A stable key for an env id and its kwargs (kwargs must be JSON-ready)."""
    return json.dumps([env_id, dict(env_kwargs or {})], sort_keys=True, default=str)


class EnvPool:
    """Idle envs by ``(env_id, kwargs)``. Thread-safe; an env is lent to one episode at a time."""

    def __init__(self, max_idle_per_key: int = 4096):
        self.max_idle_per_key = max_idle_per_key
        self._idle: dict[str, list[ToolEnv]] = defaultdict(list)
        self._lock = threading.Lock()

    def take(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> ToolEnv:
        """An idle env for ``env_id`` (a registered id or an env spec path) built with ``env_kwargs``, or a new
        one."""
        key = env_key(env_id, env_kwargs)
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                return idle.pop()
        return make_env(env_id, **dict(env_kwargs or {}))

    def give_back(self, env: ToolEnv, env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> None:
        """Return a lent env. An episode still running is aborted first; a surplus env is closed."""
        if not env.done:
            env.abort("the trainer released the env before the episode ended")
        key = env_key(env_id, env_kwargs)
        with self._lock:
            idle = self._idle[key]
            if len(idle) < self.max_idle_per_key:
                idle.append(env)
                return
        env.close()

    @contextlib.contextmanager
    def lease(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> Iterator[ToolEnv]:
        env = self.take(env_id, env_kwargs)
        try:
            yield env
        finally:
            self.give_back(env, env_id, env_kwargs)

    def close(self) -> None:
        """Close every idle env (their toolboxes shut down when the last env of each closes)."""
        with self._lock:
            envs = [env for idle in self._idle.values() for env in idle]
            self._idle.clear()
        for env in envs:
            env.close()

    def idle_count(self) -> int:
        with self._lock:
            return sum(len(idle) for idle in self._idle.values())


SHARED_POOL = EnvPool()


@contextlib.asynccontextmanager
async def lease_env(env_id: str, env_kwargs: Mapping[str, Any] | None = None,
                    pool: EnvPool | None = None) -> AsyncIterator[ToolEnv]:
    """``async with lease_env(id, kwargs) as env``: an unwrapped env from the shared pool, returned on exit.

    A new env is built in a worker thread: loading a large dataset must not stall the caller's other episodes."""
    pool = pool or SHARED_POOL
    taking = asyncio.ensure_future(asyncio.to_thread(pool.take, env_id, env_kwargs))
    try:
        env = await asyncio.shield(taking)
    except asyncio.CancelledError:
        # the thread goes on and takes (or builds) an env no one will use: back to the pool with it
        taking.add_done_callback(lambda done: done.cancelled() or done.exception() is not None
                                 or pool.give_back(done.result(), env_id, env_kwargs))
        raise
    try:
        yield env
    finally:
        pool.give_back(env, env_id, env_kwargs)
