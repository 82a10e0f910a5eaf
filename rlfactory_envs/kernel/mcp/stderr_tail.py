"""A child process's stderr: forwarded to ours as it arrives, and its last lines kept for an error message.

The child gets the write end of a pipe as its stderr; the event loop reads the other end as data comes, so a
server that writes a lot never blocks on a full pipe, and no thread is involved. Inside ``servers_quiet()`` nothing
is forwarded (the property tests run a server's tools thousands of times); the tail is kept all the same.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import TextIO

END_WAIT_S = 1.0  # for the last of a dead child's stderr; only a descendant still holding the pipe makes it last
_quiet = 0  # how many servers_quiet() blocks are open, in any thread
_quiet_lock = threading.Lock()


@contextlib.contextmanager
def servers_quiet() -> Iterator[None]:
    """While the block runs, children's stderr is not forwarded to ours (its last lines are still kept)."""
    global _quiet
    with _quiet_lock:
        _quiet += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet -= 1


class StderrTail(asyncio.Protocol):
    """``async with StderrTail() as stderr``: spawn the child with ``stderr.errlog`` as its stderr, then call
    ``child_started`` to drop this process's copy of it, so that the stream ends when the child (with any
    descendant sharing it) has gone. Leaving the block closes both ends of the pipe."""

    def __init__(self, max_lines: int = 20, max_bytes: int = 4096) -> None:
        self._max_lines = max_lines
        self._max_bytes = max_bytes
        self._tail = bytearray()
        self._cut = False
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._ended = asyncio.Event()
        self._reader: asyncio.ReadTransport | None = None
        self._errlog: TextIO | None = None

    @property
    def errlog(self) -> TextIO:
        """The write end of the pipe, for the child's stderr."""
        if self._errlog is None:
            raise RuntimeError("the stderr pipe is not open")
        return self._errlog

    async def __aenter__(self) -> StderrTail:
        read_fd, write_fd = os.pipe()
        self._errlog = os.fdopen(write_fd, "w", encoding="utf-8")
        try:
            self._reader, _ = await asyncio.get_running_loop().connect_read_pipe(
                lambda: self, os.fdopen(read_fd, "rb", buffering=0))
        except BaseException:
            os.close(read_fd)
            self.child_started()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.child_started()
        if self._reader is not None:
            await self.ended()  # what the child wrote as it stopped is still forwarded
            self._reader.close()
            await self._ended.wait()  # the read end is closed once the transport reports the connection lost

    def child_started(self) -> None:
        """Close this process's copy of the write end (the child holds its own)."""
        if self._errlog is not None:
            self._errlog.close()

    async def ended(self, timeout_s: float = END_WAIT_S) -> bool:
        """Wait up to ``timeout_s`` for the end of the stream (every writer gone); whether it ended."""
        try:
            await asyncio.wait_for(self._ended.wait(), timeout_s)
        except asyncio.TimeoutError:
            return False
        return True

    def last_lines(self) -> list[str]:
        """The last non-blank lines written so far (at most ``max_lines`` of the last ``max_bytes`` bytes)."""
        lines = [line.rstrip() for line in self._tail.decode("utf-8", "replace").splitlines() if line.strip()]
        if self._cut and len(lines) > 1:
            lines = lines[1:]  # the first line was cut
        return lines[-self._max_lines:]

    # -- asyncio.Protocol ------------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        self._tail += data
        if len(self._tail) > self._max_bytes:
            del self._tail[:-self._max_bytes]
            self._cut = True
        stream = sys.stderr
        if stream is not None and not _quiet:
            with contextlib.suppress(OSError, ValueError):  # our stderr is closed or broken: keep the tail anyway
                stream.write(self._decoder.decode(data))
                stream.flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended.set()
