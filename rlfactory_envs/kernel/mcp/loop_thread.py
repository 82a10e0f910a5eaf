"""An event loop on a daemon thread of its own, for I/O that must outlive whichever loop the caller runs.

MCP sessions are bound to the loop they were opened on. Trainers call environments from their own loops (one
coroutine per sample), tests from a fresh loop per test, plain scripts from no loop at all. Keeping every
session on one private loop makes all of those safe; a caller pays one thread hop per request it hands over,
which the toolbox amortises by handing over a whole batch of tool calls at once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import CancelledError, Future
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """Owns an asyncio loop running forever on a daemon thread until ``stop()``."""

    def __init__(self, name: str = "rlf-loop"):
        self._stopping = False
        self._loop = _new_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def is_current(self) -> bool:
        """True when called from code already running on this loop."""
        return threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Schedule ``coro`` on the loop; a concurrent future for its result."""
        if self._loop.is_closed() or not self._thread.is_alive():
            coro.close()
            raise RuntimeError("the loop thread has been stopped")
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and block until it finishes (not callable from the loop itself)."""
        if self.is_current():
            coro.close()
            raise RuntimeError("LoopThread.run would deadlock when called from its own loop; await arun()")
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except CancelledError:
            raise self._stopped_error(future) from None

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the loop from any loop: directly when already there, else by one thread hop.

        ``RuntimeError`` when the loop is stopped while ``coro`` runs (cancelling the caller is the caller's)."""
        if self.is_current():
            return await coro
        future = self.submit(coro)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            if self._stopping and future.cancelled():
                raise self._stopped_error(future) from None
            raise

    def _stopped_error(self, future: Future[Any]) -> BaseException:
        if self._stopping and future.cancelled():
            return RuntimeError("the loop thread was stopped while the work ran")
        return CancelledError()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop and join the thread. Pending tasks are cancelled. Idempotent."""
        if self._loop.is_closed():
            return
        self._stopping = True
        if self._thread.is_alive():
            async def cancel_pending() -> None:
                tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

            if not self.is_current():
                try:
                    self.submit(cancel_pending()).result(timeout)
                except Exception:
                    pass
            self._loop.call_soon_threadsafe(self._loop.stop)
            if not self.is_current():
                self._thread.join(timeout)
        if not self._thread.is_alive():
            self._loop.close()


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop where it is installed (its pipes, timers and callbacks cost a fraction of asyncio's), else
    asyncio's."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - Windows
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()
