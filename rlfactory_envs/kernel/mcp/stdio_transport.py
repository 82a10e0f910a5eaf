"""The stdio client transport of our sessions: a server subprocess and its pipes, on the loop's own pipe transports.

The SDK's ``stdio_client`` hands every line to the session through anyio memory streams and a pydantic
``JSONRPCMessage``, and writes every message through a writer task; at a quick tool call that is a third of the
client's cost. Here one reader task splits the server's stdout into lines and offers each first to ``FastCalls``,
which answers its own ``tools/call`` replies with msgspec (``take``); every other line is read as the SDK reads it and
goes to the session (the handshake, ``tools/list``, the server's notifications and requests), except a reply to one
of ``FastCalls``' requests in a shape only the SDK reads (``claim``). What it keeps of the SDK's transport:

- the server is spawned in a new session with the SDK's default environment plus the entry's, and stopped as the
  SDK stops it (stdin closed, ``STOP_WAIT_S`` for it to exit, then the process group terminated, then killed), the
  process transport closed even when a descendant still holds a pipe (no zombie, no open descriptor);
- a line that is no valid JSON-RPC message but a JSON object with an ``id`` and no ``method`` (a reply, malformed)
  becomes a ``PARSE_ERROR`` reply to that id, worded as the SDK's HTTP transport words one: the request it answers
  fails at once, not at its deadline; any other unreadable line is the SDK's exception, which the session drops.

And what it adds: a line longer than ``MAX_LINE_BYTES`` is dropped as it arrives (its bytes are not kept; a warning
names the server), and when the server's stdout ends every waiting call fails with the process's exit status and the
last lines of its stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import mcp_types
import pydantic
from mcp.client._transport import TransportStreams
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from rlfactory_envs.kernel.mcp.config import StdioServerEntry
from rlfactory_envs.kernel.mcp.errors import UNREADABLE_REPLY
from rlfactory_envs.kernel.mcp.fast_calls import CONNECTION_CLOSED, FastCalls

READ_CHUNK_BYTES = 1 << 16
MAX_LINE_BYTES = 64 << 20
"""The longest line read from a server's stdout (a merged reply of 1,024 long search results is a few MB)."""
STOP_WAIT_S = 2.0  # for the server to exit after its stdin closed, then after SIGTERM, then after SIGKILL
EXIT_STATUS_WAIT_S = 0.2  # for a server whose stdout ended to exit, so its status can be told
SESSION_BUFFER = 32  # lines read ahead for the session (its own replies, the server's notifications)
_log = logging.getLogger(__name__)


class LineSplitter:
    """The lines of a byte stream fed in chunks, without their newlines; a line longer than ``max_bytes`` is
    dropped as it arrives (``on_drop`` is told), so no more than ``max_bytes`` are ever held."""

    def __init__(self, max_bytes: int = MAX_LINE_BYTES, on_drop: Callable[[], None] | None = None):
        self._max = max_bytes
        self._partial = bytearray()
        self._dropping = False
        self._on_drop = on_drop

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines ``chunk`` completes."""
        *complete, rest = chunk.split(b"\n")
        lines = []
        for piece in complete:
            if self._dropping:
                self._dropping = False
                continue
            if self._partial:
                self._partial += piece
                piece, self._partial = bytes(self._partial), bytearray()
            if len(piece) > self._max:
                self._dropped()
            else:
                lines.append(piece)
        if rest and not self._dropping:
            self._partial += rest
            if len(self._partial) > self._max:
                self._partial = bytearray()
                self._dropping = True
                self._dropped()
        return lines

    def _dropped(self) -> None:
        if self._on_drop is not None:
            self._on_drop()


def session_item(line: bytes) -> SessionMessage | Exception:
    """``line`` as the SDK's stdio transport reads it, except that a malformed reply that names its request id
    becomes a ``PARSE_ERROR`` reply to it (see the module docstring)."""
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except pydantic.ValidationError as failure:
        message = _unreadable_message(failure)
        request_id = None if message is None or "method" in message else message.get("id")
        if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
            return failure
        error = mcp_types.ErrorData(code=mcp_types.PARSE_ERROR, message=f"{UNREADABLE_REPLY}{failure}")
        return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
    except ValueError as failure:
        return failure


def _unreadable_message(failure: pydantic.ValidationError) -> dict[str, Any] | None:
    """The JSON object a line that failed JSON-RPC validation held: pydantic gives it as the input of a field
    missing from one of the message types; ``None`` for a line that was not a JSON object."""
    for error in failure.errors():
        if error["type"] == "missing" and len(error["loc"]) == 2 and isinstance(error.get("input"), dict):
            return error["input"]
    return None


class StdioWire:
    """One server process and its pipes: ``async with wire.streams() as (read, write)`` for the SDK's ``Client``;
    ``FastCalls`` writes beside it and reads its replies first. ``process`` is set once it is spawned."""

    def __init__(self, name: str, entry: StdioServerEntry, errlog: Any, calls: FastCalls,
                 stderr_lines: Callable[[], list[str]]):
        self.name = name
        self.entry = entry
        self.process: subprocess.Popen[bytes] | None = None
        self._stdin: Any = None  # the process's pipes on the loop, once connected
        self._stdout: Any = None
        self._stdout_transport: Any = None
        self._errlog = errlog
        self._calls = calls
        self._stderr_lines = stderr_lines
        self._to_session, self._session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](
            SESSION_BUFFER)
        self._session_writes, self._from_session = anyio.create_memory_object_stream[SessionMessage](SESSION_BUFFER)
        self._lines = LineSplitter(on_drop=self._warn_dropped)

    @contextlib.asynccontextmanager
    async def streams(self) -> AsyncIterator[TransportStreams]:
        """Spawn the server and yield the session's streams; on exit the server has been stopped."""
        entry = self.entry
        self.process = process = subprocess.Popen(  # as the SDK's anyio spawns it: execve, no shell fallback
            [entry.command, *entry.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._errlog,
            cwd=entry.cwd, env=get_default_environment() | (entry.env or {}), start_new_session=True)
        try:
            self._stdin, self._stdout, self._stdout_transport = await _loop_pipes(process)
        except BaseException:
            await self._stop_process()
            raise
        self._calls.attach(self._stdin.write)
        tasks = [asyncio.ensure_future(self._read()), asyncio.ensure_future(self._write())]
        try:
            yield self._session_reads, self._session_writes
        finally:
            with anyio.CancelScope(shield=True):
                await self._stop(tasks)

    async def _read(self) -> None:
        """Read the server's stdout until it ends; then every waiting call fails, and the session sees the end."""
        stdout, calls = self._stdout, self._calls
        try:
            while chunk := await stdout.read(READ_CHUNK_BYTES):
                for line in self._lines.feed(chunk):
                    if line and not line.isspace() and not calls.take(line):
                        await self._to_session_or_claimed(session_item(line))
        except (OSError, ValueError):  # the pipe broke (ValueError: closed under the read)
            pass
        finally:
            calls.fail_all(await self._closed_because())
            self._to_session.close()

    async def _to_session_or_claimed(self, item: SessionMessage | Exception) -> None:
        if self._calls.claim(item):
            return
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._to_session.send(item)  # the session is gone: the line is drained all the same

    async def _write(self) -> None:
        """Write the session's own messages (pydantic-framed, as the SDK writes them)."""
        stdin = self._stdin
        try:
            async for message in self._from_session:
                self._calls.note(message)
                stdin.write(message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")
                await stdin.drain()
        except (OSError, RuntimeError):  # the pipe is gone: the session sees the connection end
            self._to_session.close()

    async def _closed_because(self) -> str:
        """Why the connection closed, as calls still waiting are told: the exit status, the last stderr lines."""
        process = self.process
        status = None
        if process is not None and await _exited(process, EXIT_STATUS_WAIT_S):
            status = exit_status(process.returncode)
        because = f"{CONNECTION_CLOSED}: " + (f"the process {status}" if status else "the process closed its stdout")
        lines = self._stderr_lines()
        return because + ("; last lines of its stderr: " + " | ".join(lines[-3:]) if lines else "")

    async def _stop(self, tasks: list[asyncio.Task[None]]) -> None:
        """Stop the server as the SDK does, then the tasks and the pipes. Its stdout is read on meanwhile (and
        dropped: the session is gone), so a server still writing can exit."""
        for stream in (self._session_reads, self._session_writes, self._from_session):
            stream.close()
        self._stdin.close()
        await self._stop_process()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._stdout_transport.close()  # a descendant may still hold the pipe: close ours anyway

    async def _stop_process(self) -> None:
        """Wait ``STOP_WAIT_S`` for the server to exit, then terminate its process group, then kill it."""
        process = self.process
        assert process is not None
        if self._stdin is None:  # the pipes never reached the loop
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()
        if await _gone(process, STOP_WAIT_S):
            return
        for stop in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, stop)
            if await _gone(process, STOP_WAIT_S):
                return
        _log.warning("MCP server %r (pid %d) is still alive after SIGKILL; abandoning it", self.name, process.pid)

    def _warn_dropped(self) -> None:
        _log.warning("server %r wrote a line longer than %d MB on stdout; it was dropped unread", self.name,
                     MAX_LINE_BYTES >> 20)


async def _loop_pipes(process: subprocess.Popen[bytes]
                      ) -> tuple[asyncio.StreamWriter, asyncio.StreamReader, asyncio.ReadTransport]:
    """The process's stdin and stdout on the running loop's own pipe transports (and stdout's transport)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_CHUNK_BYTES)
    read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), process.stdout)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, process.stdin)
    return asyncio.StreamWriter(transport, protocol, None, loop), reader, read_transport


async def _exited(process: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Whether ``process`` exits (and is reaped) within ``timeout_s``."""
    return await _until(lambda: process.poll() is not None, timeout_s)


async def _gone(process: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Whether ``process`` and every other process of its group (its session's) are gone within ``timeout_s``."""
    return await _until(lambda: process.poll() is not None and not _group_alive(process.pid), timeout_s)


async def _until(done: Callable[[], bool], timeout_s: float) -> bool:
    """Whether ``done()`` holds within ``timeout_s``, asked every 10 ms."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not done():
        if asyncio.get_running_loop().time() >= deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def _group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is left (only ``ESRCH`` proves none is)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def exit_status(code: Any) -> str:
    """How a process ended, in words, from its return code."""
    if not isinstance(code, int):
        return "exited"
    if code >= 0:
        return f"exited with code {code}"
    try:
        return f"was killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"was killed by signal {-code}"


