"""``FairShares``: ``total`` slots shared by clients so that none starves the others: when a slot frees, the waiting
item of the client holding the fewest goes first (then the oldest). A trainer that sends 4,096 items in one request
takes every free slot while it is alone, and one slot in two as soon as a second trainer asks."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager

__all__ = ["FairShares"]


class FairShares:
    """Slots for the items of many clients, used from one event loop (see the module docstring)."""

    def __init__(self, total: int):
        if total < 1:
            raise ValueError("total must be at least 1")
        self.total = total
        self.holding: dict[Hashable, int] = {}
        self._busy = 0
        self._waiting: list[tuple[int, Hashable, asyncio.Future[None]]] = []
        self._order = itertools.count()

    @asynccontextmanager
    async def slot(self, client: Hashable) -> AsyncIterator[None]:
        """Hold one slot for ``client`` while the block runs."""
        admitted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((next(self._order), client, admitted))
        self._admit()
        try:
            await asyncio.shield(admitted)
        except BaseException:
            if admitted.done() and not admitted.cancelled():
                self._leave(client)  # admitted just as the wait was cancelled
            else:
                self._waiting = [entry for entry in self._waiting if entry[2] is not admitted]
                admitted.cancel()
            raise
        try:
            yield
        finally:
            self._leave(client)

    def _admit(self) -> None:
        while self._busy < self.total and self._waiting:
            chosen = min(self._waiting, key=lambda entry: (self.holding.get(entry[1], 0), entry[0]))
            self._waiting.remove(chosen)
            _, client, admitted = chosen
            self.holding[client] = self.holding.get(client, 0) + 1
            self._busy += 1
            admitted.set_result(None)

    def _leave(self, client: Hashable) -> None:
        self._busy -= 1
        left = self.holding[client] - 1
        if left:
            self.holding[client] = left
        else:
            del self.holding[client]
        self._admit()
