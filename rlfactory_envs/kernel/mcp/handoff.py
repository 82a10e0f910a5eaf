"""Coalescing hand-over of work from callers' event loops to a ``LoopThread``, and back.

Trainers step each sample in a coroutine of its own (verl's agent loop, OpenRLHF's agent executor), so thousands
of ``astep`` calls may each want the toolbox loop at once. Each thread hop costs a wake-up of the other thread;
``CoalescingHandoff`` gathers every request that the coroutines of one caller loop make within the same loop
iteration and hands them over in ONE hop. There they all start in the same iteration (so the toolbox can merge
their tool calls), and each result goes back as soon as it is ready: a caller never waits for another caller's
slow work. Results that are ready in the same iteration of the toolbox loop go back in one hop.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from rlfactory_envs.kernel.mcp.loop_thread import LoopThread

ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")

Waiting = list[tuple[Any, "asyncio.Future[Any]"]]
Answer = tuple["asyncio.Future[Any]", Any, "BaseException | None"]


class CoalescingHandoff(Generic[ItemT, ResultT]):
    """``await submit(item)`` starts ``start_one(item, deliver)`` on ``thread``, handed over together with the
    other items of this loop iteration, and returns what it hands ``deliver`` (or raises the exception it raises).
    ``start_one`` runs on the thread's loop, starts the item's work without waiting for it, and calls ``deliver``
    once, on that loop, when the result is ready."""

    def __init__(self, thread: LoopThread, start_one: Callable[[ItemT, Callable[[ResultT], None]], None]):
        self._thread = thread
        self._start_one = start_one
        self._waiting: dict[asyncio.AbstractEventLoop, Waiting] = {}
        self._lock = threading.Lock()

    async def submit(self, item: ItemT) -> ResultT:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ResultT] = loop.create_future()
        with self._lock:
            queue = self._waiting.setdefault(loop, [])
            queue.append((item, future))
            first = len(queue) == 1
        if first:
            loop.call_soon(self._flush, loop)
        return await future

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            batch = self._waiting.pop(loop, [])
        if not batch:
            return
        try:
            done = self._thread.submit(self._run_batch(loop, batch))
        except RuntimeError as exc:  # the thread was stopped
            _answer([(future, None, exc) for _, future in batch])
            return

        def answer_the_rest(finished: Future[None]) -> None:
            if finished.cancelled() or finished.exception() is not None:  # the thread was stopped mid-batch
                stopped = RuntimeError("the loop thread was stopped")
                _send_back(loop, [(future, None, stopped) for _, future in batch])

        done.add_done_callback(answer_the_rest)

    async def _run_batch(self, loop: asyncio.AbstractEventLoop, batch: Waiting) -> None:
        """Start every item, and wait until each has answered (stopping the thread meanwhile answers the rest)."""
        outbox = _Outbox(loop, len(batch))
        for item, future in batch:
            try:
                self._start_one(item, functools.partial(outbox.deliver, future))
            except Exception as exc:  # noqa: BLE001 - the caller gets it
                outbox.put((future, None, exc))
        await outbox.all_sent


class _Outbox:
    """Answers bound for one caller loop; those ready in one iteration of the toolbox loop leave in one hop.
    ``all_sent`` is done once the ``expected`` answers have left."""

    def __init__(self, loop: asyncio.AbstractEventLoop, expected: int):
        self._loop = loop
        self._ready: list[Answer] = []
        self._expected = expected
        self.all_sent: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if not expected:
            self.all_sent.set_result(None)

    def deliver(self, future: asyncio.Future[Any], result: Any) -> None:
        self.put((future, result, None))

    def put(self, answer: Answer) -> None:
        self._ready.append(answer)
        if len(self._ready) == 1:
            asyncio.get_running_loop().call_soon(self._send)

    def _send(self) -> None:
        ready, self._ready = self._ready, []
        _send_back(self._loop, ready)
        self._expected -= len(ready)
        if self._expected <= 0 and not self.all_sent.done():
            self.all_sent.set_result(None)


def _send_back(loop: asyncio.AbstractEventLoop, answers: list[Answer]) -> None:
    try:
        loop.call_soon_threadsafe(_answer, answers)
    except RuntimeError:  # the caller's loop is gone; nobody is waiting
        pass


def _answer(answers: list[Answer]) -> None:
    for future, result, error in answers:
        if future.done():  # answered already, or the caller was cancelled
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
