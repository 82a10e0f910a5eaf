"""The one process-wide place where what is costly to build is shared: an env id's runtime, and the parts runtimes
are made of (a task set, a toolbox, a reward model).

Each part is built once per key (what it is built from: a data file's version, a server config, settings) and
lent to every holder that asks for the same key; ``release`` gives a loan back. A part with no holder left is
closed at once when it holds processes or connections (a toolbox: its servers exit), or kept among the last
``MAX_IDLE`` idle parts when it is mostly memory that is slow to make again (a task set, a reward's test suites and
gold results), and closed when pushed out. A part kept idle that also holds what the system counts (open files,
threads: the SQL reward's connection pools and workers) gives them back at once through its ``release_idle`` method,
and takes them again when next used: closing every env releases its files. A thousand envs of one id and settings hold one runtime; runtimes that differ
only in a turn limit still share one task set and one toolbox.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

MAX_IDLE = 32
"""Idle parts kept for a later holder (a make, close, make loop) before the least recently used is closed."""


@dataclass
class _Entry:
    value: Any
    close_when_idle: bool
    holders: int = 0
    ready: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


class SharedParts:
    """Parts by key, lent and given back; safe to use from any thread."""

    def __init__(self, max_idle: int = MAX_IDLE):
        self.max_idle = max_idle
        self._lock = threading.Lock()
        self._entries: dict[Hashable, _Entry] = {}
        self._idle: OrderedDict[Hashable, None] = OrderedDict()

    def acquire(self, key: Hashable, build: Callable[[], T], *, close_when_idle: bool = False) -> T:
        """The part for ``key``, built by ``build()`` if no one holds it and it is not kept idle; one more holder.
        Concurrent callers of one key wait for one build; a build that raises is not kept."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry(None, close_when_idle)
                building = True
            else:
                building = False
                self._idle.pop(key, None)
            entry.holders += 1
        if building:
            self._build(key, entry, build)
        else:
            entry.ready.wait()
        if entry.error is not None:  # the failed entry is gone: its holders with it
            raise entry.error
        return entry.value

    def _build(self, key: Hashable, entry: _Entry, build: Callable[[], Any]) -> None:
        try:
            entry.value = build()
        except BaseException as exc:  # every caller waiting for this build gets its error
            entry.error = exc
            with self._lock:
                self._entries.pop(key, None)
        finally:
            entry.ready.set()

    def release(self, key: Hashable) -> None:
        """One holder less; the part is closed, or kept idle, when it was the last."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.holders <= 0:
                return
            entry.holders -= 1
            if entry.holders:
                return
            if entry.close_when_idle:
                del self._entries[key]
                closing = [entry.value]
            else:
                self._idle[key] = None
                closing = [self._entries.pop(old).value for old in self._pushed_out()]
                release_idle(entry.value)  # under the lock: no new holder takes it meanwhile
        for value in closing:
            close_part(value)

    def _pushed_out(self) -> list[Hashable]:
        """The idle keys past ``max_idle``, least recently used first, taken off the idle list."""
        out = []
        while len(self._idle) > self.max_idle:
            out.append(self._idle.popitem(last=False)[0])
        return out

    def holders(self, key: Hashable) -> int:
        """How many hold the part for ``key`` now (0 when it is idle or unknown)."""
        with self._lock:
            entry = self._entries.get(key)
            return entry.holders if entry is not None else 0


def release_idle(value: Any) -> None:
    """Have an idle part give back its files and threads, if it can (``release_idle``); best effort, as
    ``close_part``."""
    release = getattr(value, "release_idle", None)
    if callable(release):
        try:
            release()
        except Exception:  # noqa: BLE001 - best effort, see close_part
            pass


def close_part(value: Any) -> None:
    """Close a part that can be closed; a failure to close is not the caller's (it was done with the part)."""
    close = getattr(value, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # noqa: BLE001 - best effort, see the docstring
            pass


SHARED = SharedParts()
"""The process's shared parts."""
