"""Coalescing hand-over of work from callers' event loops to a ``LoopThread``.

Trainers step each sample in a coroutine of its own (verl's agent loop, OpenRLHF's agent executor), so thousands
of ``astep`` calls may each want the toolbox loop at once. Each thread hop costs a wake-up of the other thread;
``CoalescingHandoff`` gathers every request that the coroutines of one caller loop make within the same loop
iteration and hands them over in ONE hop, where they run as one group, and delivers each result back to its
caller.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from rlfactory_envs.kernel.mcp.loop_thread import LoopThread

ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")

Pending = list[tuple[Any, "asyncio.Future[Any]"]]


class CoalescingHandoff(Generic[ItemT, ResultT]):
    """``await submit(item)`` runs ``run_group([... item ...])`` on ``thread`` with the other items of this loop
    iteration; ``run_group`` must return one result per item, in order."""

    def __init__(self, thread: LoopThread,
                 run_group: Callable[[list[ItemT]], Coroutine[Any, Any, list[ResultT]]]):
        self._thread = thread
        self._run_group = run_group
        self._pending: dict[asyncio.AbstractEventLoop, Pending] = {}
        self._lock = threading.Lock()

    async def submit(self, item: ItemT) -> ResultT:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ResultT] = loop.create_future()
        with self._lock:
            queue = self._pending.setdefault(loop, [])
            queue.append((item, future))
            first = len(queue) == 1
        if first:
            loop.call_soon(self._flush, loop)
        return await future

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            batch = self._pending.pop(loop, [])
        if not batch:
            return
        try:
            done = self._thread.submit(self._run_group([item for item, _ in batch]))
        except RuntimeError as exc:  # the thread was stopped
            self._deliver(batch, None, exc)
            return

        def hand_back(finished: Future[list[ResultT]]) -> None:
            if finished.cancelled():  # the thread was stopped while the group ran
                results, error = None, RuntimeError("the loop thread was stopped")
            else:
                error = finished.exception()
                results = None if error else finished.result()
            try:
                loop.call_soon_threadsafe(self._deliver, batch, results, error)
            except RuntimeError:  # the caller's loop is gone; nobody is waiting
                pass

        done.add_done_callback(hand_back)

    @staticmethod
    def _deliver(batch: Pending, results: list[Any] | None, error: BaseException | None) -> None:
        for position, (_, future) in enumerate(batch):
            if future.done():  # the caller was cancelled
                continue
            if results is None:
                future.set_exception(error or RuntimeError("no result"))
            else:
                future.set_result(results[position])
