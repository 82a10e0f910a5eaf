"""Connecting to a stdio server: its command is checked before anything is spawned, its stderr is forwarded to
ours with the last lines kept, a server that dies during start is reported with its exit status and those lines,
and an unreadable line that answers one of our requests fails that request at once (see ``ReplyErrorsById``)."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from types import TracebackType
from typing import Any

import anyio
import mcp_types
import pydantic
from mcp import Client, MCPError, StdioServerParameters
from mcp.client._transport import ReadStream, TransportStreams
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.shared.message import SessionMessage

from rlfactory_envs.kernel.mcp.config import StdioServerEntry
from rlfactory_envs.kernel.mcp.errors import UNREADABLE_REPLY, TransportError, describe, root_cause
from rlfactory_envs.kernel.mcp.fast_calls import FastCalls
from rlfactory_envs.kernel.mcp.stderr_tail import StderrTail

EXIT_WAIT_S = 0.5  # for a server whose handshake failed to exit by itself, before it is stopped


def command_problem(entry: StdioServerEntry) -> tuple[str, str] | None:
    """Why ``entry.command`` cannot be run from ``entry.cwd`` with the ``PATH`` the server gets, as ``(the entry's
    field to fix, the reason)``; ``None`` if it can.

    A command with a directory part is a file relative to ``cwd``; a bare name is looked up on ``PATH``, whose
    relative directories are relative to ``cwd`` too, as when the process is spawned."""
    cwd = entry.cwd or os.curdir
    if not os.path.isdir(cwd):
        return "cwd", f"working directory {entry.cwd!r} does not exist"
    command = entry.command
    if os.path.dirname(command):
        path = os.path.join(cwd, command)
        if not os.path.isfile(path):
            return "command", f"command {command!r} not found (no such file)"
        if not os.access(path, os.X_OK):
            return "command", f"command {command!r} is not executable"
        return None
    search_path = (get_default_environment() | (entry.env or {})).get("PATH", os.defpath)
    directories = os.pathsep.join(os.path.join(cwd, directory) for directory in search_path.split(os.pathsep))
    if shutil.which(command, path=directories) is None:
        return "command", f"command {command!r} not found (not on PATH and not a file)"
    return None


@asynccontextmanager
async def stdio_client_session(name: str, entry: StdioServerEntry,
                               fast_calls: FastCalls | None = None) -> AsyncIterator[Client]:
    """A connected ``Client`` to the stdio server ``name``, stopped on exit (``fast_calls``: sends its tool calls
    on the same streams). ``TransportError`` with the cause in its first line when the command cannot run or the
    server does not complete the handshake."""
    problem = command_problem(entry)
    if problem is not None:
        field, reason = problem
        raise TransportError(f"server {name!r}: {reason}; fix mcpServers.{name}.{field}")
    async with AsyncExitStack() as stack:
        stderr = await stack.enter_async_context(StderrTail())
        launch = _Launch(entry, stderr, fast_calls)
        try:
            client = await stack.enter_async_context(Client(launch.transport(), cache=None, raise_exceptions=False))
        except Exception as exc:
            raise TransportError(await launch.failure(name, exc)) from exc
        yield client


class _Launch:
    """One spawn of a server through the SDK's ``stdio_client``, with what it takes to say why it failed."""

    def __init__(self, entry: StdioServerEntry, stderr: StderrTail, fast_calls: FastCalls | None = None):
        self._params = StdioServerParameters(command=entry.command, args=entry.args, env=entry.env, cwd=entry.cwd)
        self._stderr = stderr
        self._fast_calls = fast_calls
        self._spawned = False
        self._exited_first = False
        self._process: Any = None

    @asynccontextmanager
    async def transport(self) -> AsyncIterator[TransportStreams]:
        """The SDK's stdio transport with our stderr pipe; on exit the server process has been stopped."""
        sdk_transport = stdio_client(self._params, errlog=self._stderr.errlog)
        async with sdk_transport as streams:
            self._spawned = True
            self._stderr.child_started()
            self._process = _spawned_process(sdk_transport)
            read_stream, write_stream = streams
            fast = self._fast_calls
            if fast is not None and getattr(self._process, "stdin", None) is not None:
                fast.attach(self._process.stdin)
            try:
                yield ReplyErrorsById(read_stream, fast), (write_stream if fast is None else fast.tap(write_stream))
            except Exception:
                # Before the SDK stops the server: did it exit by itself (its stderr ends with it)?
                self._exited_first = await self._stderr.ended(EXIT_WAIT_S)
                raise

    async def failure(self, name: str, exc: Exception) -> str:
        """Why the start failed: a headline naming the cause, then the last lines of the server's stderr."""
        cause = root_cause(exc)
        if not self._spawned:
            reason = cause.strerror if isinstance(cause, OSError) and cause.strerror else describe(cause)
            return (f"server {name!r}: cannot start command {self._params.command!r}: {reason}; "
                    f"fix mcpServers.{name}.command")
        await self._stderr.ended()
        if isinstance(cause, MCPError) and cause.error.code == mcp_types.CONNECTION_CLOSED:
            if self._exited_first:
                headline = f"server {name!r}: the process {_exit_status(self._process)} during start"
            else:
                headline = f"server {name!r}: the process closed its stdout during start without exiting"
        else:
            headline = f"server {name!r}: the MCP handshake failed: {describe(cause)}"
        lines = self._stderr.last_lines()
        if not lines:
            return f"{headline}; it wrote nothing to stderr"
        return f"{headline}; last lines of its stderr:\n" + "\n".join(f"    {line}" for line in lines)


class ReplyErrorsById:
    """The SDK's stdio read stream, where a line that is no valid JSON-RPC message but is a JSON object with an
    ``id`` and no ``method`` (a reply, malformed) becomes a ``PARSE_ERROR`` reply to that id, worded as the SDK's
    HTTP transport words one: the request it answers fails at once, not at its deadline. Any other unreadable line
    (not JSON, no id) passes on as the SDK's exception, which the session drops: no request can be told from it.
    The replies to ``fast_calls``' requests go to it, not to the session."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], fast_calls: FastCalls | None = None):
        self._inner = inner
        self._fast_calls = fast_calls

    @property
    def last_context(self) -> Any:
        """The sender's context of the last item, where the SDK's stream keeps one."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            try:
                item = self._readable(await self._inner.receive())
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                if self._fast_calls is not None:
                    self._fast_calls.fail_all()
                raise
            if self._fast_calls is None or not self._fast_calls.claim(item):
                return item

    @staticmethod
    def _readable(item: SessionMessage | Exception) -> SessionMessage | Exception:
        if not isinstance(item, pydantic.ValidationError):
            return item
        message = _unreadable_message(item)
        request_id = None if message is None or "method" in message else message.get("id")
        if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
            return item
        error = mcp_types.ErrorData(code=mcp_types.PARSE_ERROR, message=f"{UNREADABLE_REPLY}{item}")
        return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))

    def __aiter__(self) -> ReplyErrorsById:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> ReplyErrorsById:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc_val: BaseException | None,
                        exc_tb: TracebackType | None) -> None:
        await self.aclose()


def _unreadable_message(failure: pydantic.ValidationError) -> dict[str, Any] | None:
    """The JSON object a line that failed JSON-RPC validation held: pydantic gives it as the input of a field
    missing from one of the message types; ``None`` for a line that was not a JSON object."""
    for error in failure.errors():
        if error["type"] == "missing" and len(error["loc"]) == 2 and isinstance(error.get("input"), dict):
            return error["input"]
    return None


def _spawned_process(sdk_transport: AbstractAsyncContextManager[Any]) -> Any:
    """The process ``stdio_client`` spawned, for its exit status: mcp 2.3 exposes it nowhere but as a local
    variable of the suspended generator. ``None`` when a later SDK keeps it elsewhere (no exit status then)."""
    frame = getattr(getattr(sdk_transport, "gen", None), "ag_frame", None)
    return None if frame is None else frame.f_locals.get("process")


def _exit_status(process: Any) -> str:
    code = getattr(process, "returncode", None)
    if not isinstance(code, int):
        return "exited"
    if code >= 0:
        return f"exited with code {code}"
    try:
        return f"was killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"was killed by signal {-code}"
