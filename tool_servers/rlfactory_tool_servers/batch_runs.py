"""The elements of a batched request running together, and the runs that answered early and are still collectable.

A batch's elements run concurrently. Slow ones need not hold the fast ones back: with ``reply_after_s`` (and a
deadline) the request answers once every element is done or ``reply_after_s`` after the first one is, whichever
comes first; the rest keep running until the deadline and are collected later by the run's ticket (``wire``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

RUN_KEPT_S = 60.0
"""How long past its deadline a batch that answered early stays collectable."""

MAX_RUNS = 4096
"""Batches that answered early and still run, per tool at most; past that a batch waits for all its elements."""


class ElementDeadline(Exception):
    """One element of a batch outlived the batch's ``deadline_s``."""


async def _outcome(call: Callable[[], Awaitable[Any]]) -> Any:
    try:
        return await call()
    except Exception as exc:  # one element's failure is its own result
        return exc


class Run:
    """The elements of one batch, running concurrently; each reply hands out those done since the last one.

    ``calls`` maps an element's position to a no-argument coroutine function that runs it. An element still running
    at the deadline is cancelled and reported as ``ElementDeadline``. One timer serves the whole batch, and no
    ``gather(return_exceptions=True)``: that gather can finish normally after the client gave up on the request,
    and a handler that answers a cancelled request takes the SDK's server session down (mcp 2.3).
    """

    def __init__(self, calls: dict[int, Callable[[], Awaitable[Any]]], deadline_s: float | None):
        self._deadline_s = deadline_s
        self._unreported = {position: asyncio.ensure_future(_outcome(call)) for position, call in calls.items()}
        self._timer = (asyncio.get_running_loop().call_later(deadline_s, self.cancel)
                       if deadline_s is not None and self._unreported else None)

    @property
    def finished(self) -> bool:
        """Every element has been reported."""
        return not self._unreported

    async def next_reply(self, reply_after_s: float | None) -> dict[int, Any]:
        """The values of the elements done since the last reply, by position. Waits until all are done, or, with
        ``reply_after_s``, until one is and then ``reply_after_s`` more (or all are)."""
        try:
            pending = set(self._unreported.values())
            if pending and reply_after_s is None:
                await asyncio.wait(pending)
            elif pending:
                _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                if pending:
                    await asyncio.wait(pending, timeout=reply_after_s)
        except asyncio.CancelledError:  # the client gave up on the request
            self.cancel()
            raise
        done = {position: task for position, task in self._unreported.items() if task.done()}
        for position in done:
            del self._unreported[position]
        if self.finished and self._timer is not None:
            self._timer.cancel()
        return {position: self._late() if task.cancelled() else task.result() for position, task in done.items()}

    def _late(self) -> ElementDeadline:
        return ElementDeadline(f"no answer within {self._deadline_s:g} s (deadline); the call was abandoned")

    def cancel(self) -> None:
        for task in self._unreported.values():
            task.cancel()

    @property
    def kept_s(self) -> float:
        return (self._deadline_s or 0.0) + RUN_KEPT_S


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
