"""The elements of a batched request running together, and the runs that answered early and are still collectable.

A batch's elements run concurrently, each as its tool runs: an async tool's element as a task of its own, a sync
tool's inline, one after another (a toolset's lookups are quick), and a blocking sync tool's in worker threads,
one hop per batch (``ThreadedRun``). Slow elements need not hold the fast ones back: with ``reply_after_s`` (and a
deadline) the request answers once every element is done or ``reply_after_s`` after the first one is, whichever
comes first; the rest keep running until the deadline and are collected later by the run's ticket (``wire``).
"""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

RUN_KEPT_S = 60.0
"""How long past its deadline a batch that answered early stays collectable."""

MAX_RUNS = 4096
"""Batches that answered early and still run, per tool at most; past that a batch waits for all its elements."""

MAX_WORKER_THREADS = 64
"""Worker threads of blocking tools, per process: a tool that hangs holds one until it returns."""

SPILL_AFTER_S = 0.005
"""A blocking batch's worker still in one element after this long, with elements left, gets a sibling thread."""

FLUSH_EVERY_S = 0.005
"""How often at most a worker thread hands the results it has to the loop (the first one at once)."""

_WORKERS = ThreadPoolExecutor(MAX_WORKER_THREADS, thread_name_prefix="rlf-tool")


class ElementDeadline(Exception):
    """One element of a batch outlived the batch's ``deadline_s``."""


Element = Callable[[], Any]
"""One element, ready to run: a no-argument function that gives its value (an awaitable for an async tool)."""


class Run:
    """The elements of one batch, by position; each reply hands out those done since the last one.

    Elements are started by ``start`` (an awaitable value becomes a task) and report through ``finish``. An
    element still running at the deadline is cancelled and reported as ``ElementDeadline``. One timer serves the
    whole batch, and no ``gather(return_exceptions=True)``: that gather can finish normally after the client gave
    up on the request, and a handler that answers a cancelled request takes the SDK's server session down (mcp 2.3).
    """

    def __init__(self, positions: Iterable[int], deadline_s: float | None):
        self._loop = asyncio.get_running_loop()
        self._deadline_s = deadline_s
        self._unreported = set(positions)
        self._done: dict[int, Any] = {}
        self._tasks: dict[asyncio.Task[Any], int] = {}
        self._wake: asyncio.Future[None] | None = None
        self._wake_on_first = False
        self._timer = (self._loop.call_later(deadline_s, self.cancel)
                       if deadline_s is not None and self._unreported else None)

    @classmethod
    def of(cls, calls: dict[int, Element], deadline_s: float | None) -> Run:
        """A run of ``calls``, each started at once (a sync tool's runs to its end here)."""
        run = cls(calls, deadline_s)
        for position, call in calls.items():
            run.start(position, call)
        return run

    def start(self, position: int, call: Element) -> None:
        """Run ``call``: its value, or its exception, is the element's result; an awaitable one becomes a task."""
        try:
            value = call()
        except Exception as exc:  # one element's failure is its own result
            self.finish(position, exc)
            return
        if not inspect.isawaitable(value):
            self.finish(position, value)
            return
        task = self._loop.create_task(self._run_task(position, value))
        self._tasks[task] = position

    async def _run_task(self, position: int, awaitable: Awaitable[Any]) -> None:
        """The element's task: its value, its exception or its cancellation, recorded (no done callback)."""
        try:
            value = await awaitable
        except asyncio.CancelledError:
            value = self._late()
        except Exception as exc:  # one element's failure is its own result
            value = exc
        del self._tasks[asyncio.current_task()]  # type: ignore[arg-type]
        self.finish(position, value)

    def finish(self, position: int, value: Any) -> None:
        """Record the result of the element at ``position`` (a repeat is ignored), waking a reply due now."""
        if position not in self._unreported or position in self._done:
            return
        self._done[position] = value
        if self._wake is not None and not self._wake.done() and (
                self._wake_on_first or len(self._done) == len(self._unreported)):
            self._wake.set_result(None)

    @property
    def finished(self) -> bool:
        """Every element has been reported."""
        return not self._unreported

    async def next_reply(self, reply_after_s: float | None) -> dict[int, Any]:
        """The values of the elements done since the last reply, by position. Waits until all are done, or, with
        ``reply_after_s``, until one is and then ``reply_after_s`` more (or all are)."""
        try:
            if reply_after_s is None:
                await self._until(first=False, timeout_s=None)
            else:
                await self._until(first=True, timeout_s=None)
                await self._until(first=False, timeout_s=reply_after_s)
        except asyncio.CancelledError:  # the client gave up on the request
            self.cancel()
            raise
        done, self._done = self._done, {}
        self._unreported.difference_update(done)
        if self.finished and self._timer is not None:
            self._timer.cancel()
        return done

    async def _until(self, first: bool, timeout_s: float | None) -> None:
        """Wait until one element (``first``) or every one not yet reported is done, at most ``timeout_s``."""
        if len(self._done) == len(self._unreported) or (first and self._done):
            return
        self._wake, self._wake_on_first = self._loop.create_future(), first
        timer = self._loop.call_later(timeout_s, _wake, self._wake) if timeout_s is not None else None
        try:
            await self._wake
        finally:
            self._wake = None
            if timer is not None:
                timer.cancel()

    def _late(self) -> ElementDeadline:
        return ElementDeadline(f"no answer within {self._deadline_s:g} s (deadline); the call was abandoned")

    def cancel(self) -> None:
        """Abandon every element still running (the deadline passed, or the client gave up)."""
        for task in list(self._tasks):
            task.cancel()

    @property
    def kept_s(self) -> float:
        return (self._deadline_s or 0.0) + RUN_KEPT_S


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class ThreadedRun(Run):
    """The elements of a blocking tool, run in worker threads: one thread takes them in order, and another joins it
    whenever one element holds a thread ``SPILL_AFTER_S`` with elements left, so a hanging call holds back no other.
    Each worker hands its results to the loop at the first, then every ``FLUSH_EVERY_S``, and at the end. At the
    deadline, elements not done are reported as ``ElementDeadline`` and none is started any more (a call already
    running cannot be stopped: its thread returns when it does)."""

    def __init__(self, calls: dict[int, Element], deadline_s: float | None):
        super().__init__(calls, deadline_s)
        self._queue = deque(calls.items())
        self._busy_since: dict[int, float] = {}
        self._stopped = False
        self._workers = 0
        self._spill: asyncio.TimerHandle | None = None
        if self._queue:
            self._add_worker()

    def _add_worker(self) -> None:
        self._workers += 1
        self._loop.run_in_executor(_WORKERS, self._work, self._workers)
        self._spill = self._loop.call_later(SPILL_AFTER_S, self._check_spill)

    def _check_spill(self) -> None:
        self._spill = None
        if self._stopped or not self._queue:
            return
        now = time.monotonic()
        if any(now - since >= SPILL_AFTER_S for since in list(self._busy_since.values())):
            self._add_worker()
        else:
            self._spill = self._loop.call_later(SPILL_AFTER_S, self._check_spill)

    def _work(self, worker: int) -> None:
        """A worker thread: the next element while any is left and the run goes on."""
        results: list[tuple[int, Any]] = []
        flushed_at = 0.0
        while not self._stopped:
            try:
                position, call = self._queue.popleft()
            except IndexError:
                break
            self._busy_since[worker] = time.monotonic()
            try:
                value = call()
            except Exception as exc:  # one element's failure is its own result
                value = exc
            results.append((position, value))
            now = time.monotonic()
            if now - flushed_at >= FLUSH_EVERY_S:
                self._hand_over(results)
                results, flushed_at = [], now
        self._busy_since.pop(worker, None)
        if results:
            self._hand_over(results)

    def _hand_over(self, results: list[tuple[int, Any]]) -> None:
        try:
            self._loop.call_soon_threadsafe(self._accept, results)
        except RuntimeError:  # the loop is closed: nobody waits for these any more
            pass

    def _accept(self, results: list[tuple[int, Any]]) -> None:
        for position, value in results:
            self.finish(position, value)

    def cancel(self) -> None:
        """Start no more elements and report those not done as abandoned."""
        self._stopped = True
        if self._spill is not None:
            self._spill.cancel()
        for position in list(self._unreported):
            self.finish(position, self._late())


class Runs:
    """The batches of one tool that answered early, by ticket, each kept until collected whole or ``kept_s``."""

    def __init__(self) -> None:
        self._runs: dict[str, Run] = {}

    def has_room(self) -> bool:
        return len(self._runs) < MAX_RUNS

    def add(self, run: Run) -> str:
        ticket = uuid.uuid4().hex
        self._runs[ticket] = run

        def forget() -> None:
            if self._runs.pop(ticket, None) is not None:
                run.cancel()

        asyncio.get_running_loop().call_later(run.kept_s, forget)
        return ticket

    def get(self, ticket: str) -> Run | None:
        return self._runs.get(ticket)

    def drop(self, ticket: str) -> None:
        self._runs.pop(ticket, None)
