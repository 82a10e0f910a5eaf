"""Requests before indexing: while the server answers a request, the indexing thread waits between its blocks.

Indexing is Python work that holds the GIL; a request answered beside it gets the interpreter about half the time,
so a page opened while a large file is indexed waited twice as long for its columns. ``Foreground`` counts the
requests being answered; ``RunIndex`` calls ``wait_idle`` before each block, never waiting longer than its
``timeout``, so that a client asking without pause slows indexing but cannot stop it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Foreground:
    """The requests being answered now; background work waits (``wait_idle``) while there are any."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._idle = threading.Event()
        self._idle.set()

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Count one request being answered for the block's duration."""
        self._change(1)
        try:
            yield
        finally:
            self._change(-1)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no request is being answered, at most ``timeout`` seconds; whether none is."""
        return self._idle.wait(timeout)

    def _change(self, by: int) -> None:
        with self._lock:
            self._active += by
            if self._active:
                self._idle.clear()
            else:
                self._idle.set()
