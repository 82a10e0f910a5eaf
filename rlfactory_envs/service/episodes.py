"""The episodes a server holds: one light ``ToolEnv`` per session, all on the served env's one runtime.

``ServedEnv`` is the env a server serves: built once from an id or an env spec, its runtime (tasks, toolbox, reward)
kept for the server's life by a prototype env that never plays. ``EpisodeTable`` holds the sessions: at most
``max_sessions`` at once (one more is refused with ``SessionLimitReached``), each closed after ``idle_timeout_s``
without a request, and each closed whole (``ToolEnv.aclose``: a phone or a SQL session goes back at once). Every
step of every session runs on the server's one loop and hands its tool calls to the shared toolbox, so the calls of
the sessions that step together are merged as in an ``EnvBatch``.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import os
import re
import threading
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from rlfactory_envs.env_spec import make_env, resolve
from rlfactory_envs.kernel.env import ToolEnv

MIB = 1024 * 1024


@dataclass(frozen=True)
class ServiceLimits:
    """What a server takes: sessions at once, idle time before a session is closed, the size of a request body or
    WebSocket frame, and the time one step (or reset) may take."""

    max_sessions: int = 8192
    idle_timeout_s: float = 600.0
    max_request_bytes: int = 4 * MIB
    step_timeout_s: float = 300.0


class SessionLimitReached(Exception):
    """A session was asked for while ``max_sessions`` were open."""

    def __init__(self, active: int, limit: int):
        super().__init__(f"{active} sessions are open, the server's limit (--max-sessions {limit}); close one or "
                         "try again later")
        self.active = active
        self.limit = limit


MAX_WAITING = 16
"""Requests of one session that may wait for its turn; one more is refused (a session steps one at a time)."""


class TooManyWaiting(Exception):
    """A session was sent a request while ``MAX_WAITING`` others waited for its turn."""


class StepTimeout(Exception):
    """A reset or step took longer than ``step_timeout_s``; it was cancelled and left no trace in the episode."""


@dataclass
class ServedEnv:
    """The env a server serves: ``ref`` (an id or a spec path), the id it resolves to, its settings, and the
    prototype env that holds the runtime every session plays on."""

    ref: str
    env_id: str
    kwargs: dict[str, Any]
    prototype: ToolEnv

    @classmethod
    def open(cls, ref: str, kwargs: Mapping[str, Any] | None = None) -> ServedEnv:
        """Build the env ``ref`` names (``ConfigError`` on a bad id, spec or setting) and start its tools."""
        spec = resolve(ref, kwargs)
        prototype = make_env(ref, **dict(kwargs or {}))
        prototype.toolbox.start()
        return cls(ref, spec.env_id, dict(spec.kwargs), prototype)

    @property
    def name(self) -> str:
        """A path-safe name: the id in lower case, ``/`` and other separators as ``-`` (``rlf-search-nq-v0``)."""
        return re.sub(r"[^a-z0-9]+", "-", self.env_id.lower()).strip("-") or "env"

    @property
    def description(self) -> str:
        doc = (type(self.prototype).__doc__ or "").strip().split("\n\n")[0]
        return " ".join(doc.split()) or f"the rlf env {self.env_id}"

    @property
    def version(self) -> str:
        """The installed rlfactory-envs version."""
        return importlib.metadata.version("rlfactory-envs")

    def new_env(self) -> ToolEnv:
        return self.prototype.sibling()

    def close(self) -> None:
        self.prototype.close()


@dataclass
class Episode:
    """One session's env, when it was last asked something, and how many steps it took."""

    env: ToolEnv
    last_active: float = field(default_factory=time.monotonic)
    steps: int = 0
    client_episode_id: str | None = None
    opening: list[dict[str, Any]] = field(default_factory=list)
    """The chat messages the episode opened with (its last reset's)."""
    waiting: int = 0
    """Requests of this session waiting for its reset or step to finish."""
    closed: bool = False
    """The session was closed (by its client, or after ``idle_timeout_s`` without a request)."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def reset(self, timeout_s: float, seed: int | None, options: dict[str, Any] | None,
                    ) -> tuple[str, dict[str, Any]]:
        """``areset`` within ``timeout_s``; one reset or step of the episode at a time."""
        async with self._turn():
            self.steps = 0
            prompt, info = await _within(self.env.areset(seed=seed, options=options), timeout_s, "reset")
            self.opening = [dict(m) for m in info.get("messages", [])]
            return prompt, info

    async def step(self, timeout_s: float, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """``astep`` within ``timeout_s``; one reset or step of the episode at a time."""
        async with self._turn():
            result = await _within(self.env.astep(action), timeout_s, "step")
            self.steps += 1
            return result

    async def truncate(self, timeout_s: float, reason: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """End the running episode as truncated for ``reason`` (``ToolEnv.atruncate``), within ``timeout_s``."""
        async with self._turn():
            return await _within(self.env.atruncate(reason), timeout_s, "truncation")

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """Hold the episode for one reset or step; ``TooManyWaiting`` when ``MAX_WAITING`` requests already wait."""
        if self.waiting >= MAX_WAITING:
            raise TooManyWaiting(f"{self.waiting} requests of this session already wait for its turn; send the next "
                                 "after the last is answered")
        self.waiting += 1
        try:
            async with self.lock:
                self.last_active = time.monotonic()
                yield
        finally:
            self.waiting -= 1
            self.last_active = time.monotonic()

    def state(self) -> dict[str, Any]:
        """What OpenEnv's ``state`` shows: the episode's ids, step count, task, whether it ended, its messages."""
        env = self.env
        return {"episode_id": self.client_episode_id or env.episode_id or None, "step_count": self.steps,
                "turn": env.turn, "done": env.done, "task_id": getattr(env.task, "task_id", None),
                "reward": None if env.last_reward is None else float(env.last_reward.value),
                "messages": env.messages}


async def _within(coroutine: Any, timeout_s: float, what: str) -> Any:
    try:
        if hasattr(asyncio, "timeout"):  # Python 3.11+: no task of its own per step, unlike wait_for
            async with asyncio.timeout(timeout_s):
                return await coroutine
        return await asyncio.wait_for(coroutine, timeout_s)
    except (TimeoutError, asyncio.TimeoutError):
        raise StepTimeout(f"the {what} took longer than {timeout_s:g} s (--step-timeout-s) and was cancelled") \
            from None


class EpisodeTable:
    """The open sessions of one server, by id."""

    def __init__(self, served: ServedEnv, limits: ServiceLimits):
        self.served = served
        self.limits = limits
        self._episodes: dict[str, Episode] = {}
        self.opened = 0
        self.closed = 0

    def __len__(self) -> int:
        return len(self._episodes)

    def open(self, session_id: str | None = None) -> tuple[str, Episode]:
        """A new session (``session_id``, or a fresh one); ``SessionLimitReached`` when the table is full."""
        if len(self._episodes) >= self.limits.max_sessions:
            raise SessionLimitReached(len(self._episodes), self.limits.max_sessions)
        session_id = session_id or uuid.uuid4().hex
        episode = Episode(self.served.new_env())
        self._episodes[session_id] = episode
        self.opened += 1
        return session_id, episode

    def get(self, session_id: str) -> Episode | None:
        """The session's episode (marked active now), or ``None``."""
        episode = self._episodes.get(session_id)
        if episode is not None:
            episode.last_active = time.monotonic()
        return episode

    async def close(self, session_id: str) -> bool:
        """Close the session and release its env; ``False`` when there was none."""
        episode = self._episodes.pop(session_id, None)
        if episode is None:
            return False
        self.closed += 1
        episode.closed = True
        with contextlib.suppress(Exception):  # a failed release is the server's to log, never the caller's
            await episode.env.aclose()
        return True

    async def close_idle(self) -> int:
        """Close every session idle for longer than ``idle_timeout_s`` (none mid-step); how many were."""
        deadline = time.monotonic() - self.limits.idle_timeout_s
        idle = [sid for sid, episode in self._episodes.items()
                if episode.last_active < deadline and not episode.waiting]
        for session_id in idle:
            await self.close(session_id)
        return len(idle)

    async def reap_forever(self) -> None:
        """``close_idle`` every quarter of the idle timeout (at most every 30 s), until cancelled."""
        interval = min(max(self.limits.idle_timeout_s / 4, 0.05), 30.0)
        while True:
            await asyncio.sleep(interval)
            await self.close_idle()

    def stats(self) -> dict[str, Any]:
        """``GET /rlf/stats``: the sessions open, opened and closed, the toolbox's counters, and the process's
        threads and file descriptors (flat over any number of sessions opened and closed)."""
        fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
        return {"env_id": self.served.env_id, "sessions": len(self._episodes), "opened": self.opened,
                "closed": self.closed, "max_sessions": self.limits.max_sessions,
                "threads": threading.active_count(), "open_fds": fds,
                "toolbox": self.served.prototype.toolbox.stats()}

    async def close_all(self) -> None:
        for session_id in list(self._episodes):
            await self.close(session_id)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        """An ASGI app's life: idle sessions reaped while it serves, every session closed when it stops."""
        reaper = asyncio.create_task(self.reap_forever())
        try:
            yield
        finally:
            reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reaper
            await self.close_all()
