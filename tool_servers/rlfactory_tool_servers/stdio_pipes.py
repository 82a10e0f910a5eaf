"""The stdio transport on the event loop's own pipes, for a server whose stdin and stdout are pipes (as a client that
spawns it makes them).

The MCP SDK's ``stdio_server`` reads each line and writes each message through a worker thread (its files are
blocking): two thread hops a request, more than the rest of a quick tool call costs. Here the lines are read and
written by the loop itself, non-blocking, and handed to the same ``stdio_server`` as its explicit streams; the SDK
still parses and writes every message. As the SDK does, standard input and output are claimed while the server runs:
fd 0 reads the null device and fd 1 writes to stderr, so a tool's stray ``print`` never reaches the wire.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

READ_CHUNK_BYTES = 1 << 16


def are_pipes(*fds: int) -> bool:
    """Whether every one of ``fds`` is a pipe or a socket (what the loop can read and write without threads)."""
    try:
        return all(stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) for mode in (os.fstat(fd).st_mode for fd in fds))
    except OSError:
        return False


class PipeLines:
    """``async for line in PipeLines(reader)``: the lines of a pipe, decoded, each with its newline (any length: a
    batched request may be megabytes; the last line may lack its newline)."""

    def __init__(self, reader: asyncio.StreamReader):
        self._reader = reader
        self._lines: deque[str] = deque()
        self._partial: list[bytes] = []
        self._ended = False

    def __aiter__(self) -> PipeLines:
        return self

    async def __anext__(self) -> str:
        while not self._lines:
            if self._ended:
                raise StopAsyncIteration
            chunk = await self._reader.read(READ_CHUNK_BYTES)
            if chunk:
                self._split(chunk)
                continue
            self._ended = True
            if self._partial:
                self._lines.append(b"".join(self._partial).decode("utf-8", errors="replace"))
        return self._lines.popleft()

    def _split(self, chunk: bytes) -> None:
        *complete, rest = chunk.split(b"\n")
        if complete:
            complete[0] = b"".join([*self._partial, complete[0]])
            self._partial = []
            self._lines.extend((line + b"\n").decode("utf-8", errors="replace") for line in complete)
        if rest:
            self._partial.append(rest)


class PipeWriter:
    """``await write(text)``, ``await flush()`` over a pipe, non-blocking."""

    def __init__(self, writer: asyncio.StreamWriter):
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()

    async def send(self, data: bytes) -> None:
        """Write ``data`` (whole lines, encoded) and wait until the pipe takes more."""
        self._writer.write(data)
        await self._writer.drain()


@asynccontextmanager
async def stdio_pipes() -> AsyncIterator[tuple[PipeLines, PipeWriter] | None]:
    """The process's stdin and stdout as ``(lines, writer)`` on the running loop, claimed for the protocol while
    the block runs; ``None`` (nothing claimed) when they are not both pipes, or on Windows."""
    if sys.platform == "win32" or not are_pipes(0, 1):
        yield None
        return
    sys.stdout.flush()
    saved = os.dup(0), os.dup(1)
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                     os.fdopen(wire_in, "rb", buffering=0))
    write_transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                              os.fdopen(wire_out, "wb", buffering=0))
    try:
        yield PipeLines(reader), PipeWriter(asyncio.StreamWriter(write_transport, protocol, None, loop))
    finally:
        read_transport.close()
        write_transport.close()
        for fd, original in zip((0, 1), saved):  # the standard streams as they were
            os.dup2(original, fd)
            os.close(original)
