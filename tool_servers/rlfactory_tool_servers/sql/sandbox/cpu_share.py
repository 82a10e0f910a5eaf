"""Who may use the CPU for SQL in this process: ``LIGHT`` counts the light turns running (heavy work rests while
any does), ``HEAVY_BATON`` is held by the heavy turn on the CPU (one per 8 cores, ``HEAVY_RUNNERS``) and handed
over by rank: to the waiter whose client has used the least CPU. ``fair_pool.Turn`` uses both."""

from __future__ import annotations

import heapq
import itertools
import math
import os
import threading

__all__ = ["HEAVY_BATON", "HEAVY_RUNNERS", "LIGHT", "Baton", "BatonWait", "LightWork", "wait_s"]


def wait_s(timeout: float) -> float | None:
    """A timeout for waits: none for an endless one, never negative."""
    return None if timeout == math.inf else max(timeout, 0.0)


class LightWork:
    """How many light turns run in the process now; ``wait_idle`` returns when none does."""

    def __init__(self) -> None:
        self.running = 0
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()

    def enter(self) -> None:
        with self._lock:
            self.running += 1
            self._idle.clear()

    def leave(self) -> None:
        with self._lock:
            self.running -= 1
            if not self.running:
                self._idle.set()

    def wait_idle(self, timeout: float) -> None:
        self._idle.wait(wait_s(timeout))


class BatonWait:
    """A turn's place in the baton's queue: ``state`` goes from ``waiting`` to ``handed`` (it holds the baton),
    ``withdrawn`` (its pool needs its thread) or ``gone`` (it waited past its deadline)."""

    __slots__ = ("rank", "seq", "event", "state")
    _order = itertools.count()

    def __init__(self, rank: float) -> None:
        self.rank, self.seq, self.event, self.state = rank, next(self._order), threading.Event(), "waiting"

    def __lt__(self, other: BatonWait) -> bool:
        return (self.rank, self.seq) < (other.rank, other.seq)


class Baton:
    """A lock handed over by rank: a releasing thread gives it to the waiter of least rank (the CPU its client has
    used so far, then arrival), so the heavy work that has used the least CPU runs first."""

    def __init__(self, holders: int) -> None:
        self.free = holders
        self._lock = threading.Lock()
        self._queue: list[BatonWait] = []  # a heap

    def take(self, wait: BatonWait) -> bool:
        """Take the baton now if it is free and nobody waits (``True``), else queue ``wait`` for it."""
        with self._lock:
            if self.free and not self._queue:
                self.free -= 1
                wait.state = "handed"
                return True
            heapq.heappush(self._queue, wait)
            return False

    def wait(self, wait: BatonWait, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for the baton to be handed to ``wait`` (queued by ``take``), unless it
        is ``withdraw``n first; whether it was handed."""
        wait.event.wait(wait_s(timeout))
        with self._lock:
            if wait.state == "waiting":
                self._remove(wait, "gone")
            return wait.state == "handed"

    def withdraw(self, wait: BatonWait) -> bool:
        """End ``wait`` without the baton (its thread is needed elsewhere); whether it was still waiting."""
        with self._lock:
            if wait.state != "waiting":
                return False
            self._remove(wait, "withdrawn")
        wait.event.set()
        return True

    def _remove(self, wait: BatonWait, state: str) -> None:
        self._queue.remove(wait)
        heapq.heapify(self._queue)
        wait.state = state

    def release(self) -> None:
        with self._lock:
            if self._queue:
                handed = heapq.heappop(self._queue)
                handed.state = "handed"
                handed.event.set()
            else:
                self.free += 1

    def outranked(self, rank: float) -> bool:
        """Whether a waiter's rank is below ``rank`` (it has used less CPU than the holder has)."""
        queue = self._queue
        return bool(queue) and queue[0].rank < rank


LIGHT = LightWork()
HEAVY_RUNNERS = max(1, (os.cpu_count() or 1) // 8)
HEAVY_BATON = Baton(HEAVY_RUNNERS)
