"""Connecting to a stdio server: its command is checked before anything is spawned, its stderr is forwarded to
ours with the last lines kept, and a server that dies during start is reported with its exit status and those lines.
The transport itself (pipes, lines, replies) is ``stdio_transport``'s."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import mcp_types
from mcp import Client, MCPError
from mcp.client._transport import TransportStreams
from mcp.client.stdio import get_default_environment

from rlfactory_envs.kernel.mcp.config import StdioServerEntry
from rlfactory_envs.kernel.mcp.errors import TransportError, describe, root_cause
from rlfactory_envs.kernel.mcp.fast_calls import FastCalls
from rlfactory_envs.kernel.mcp.stderr_tail import StderrTail
from rlfactory_envs.kernel.mcp.stdio_transport import StdioWire, exit_status

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
    beside the session and reads their replies first; see ``stdio_transport``). ``TransportError`` with the cause in
    its first line when the command cannot run or the server does not complete the handshake."""
    problem = command_problem(entry)
    if problem is not None:
        field, reason = problem
        raise TransportError(f"server {name!r}: {reason}; fix mcpServers.{name}.{field}")
    async with AsyncExitStack() as stack:
        stderr = await stack.enter_async_context(StderrTail())
        launch = _Launch(name, entry, stderr, fast_calls or FastCalls())
        try:
            client = await stack.enter_async_context(Client(launch.transport(), cache=None, raise_exceptions=False))
        except Exception as exc:
            raise TransportError(await launch.failure(exc)) from exc
        yield client


class _Launch:
    """One spawn of a server through ``StdioWire``, with what it takes to say why it failed."""

    def __init__(self, name: str, entry: StdioServerEntry, stderr: StderrTail, fast_calls: FastCalls):
        self._name = name
        self._command = entry.command
        self._stderr = stderr
        self._wire = StdioWire(name, entry, stderr.errlog, fast_calls, stderr.last_lines)
        self._exited_first = False

    @asynccontextmanager
    async def transport(self) -> AsyncIterator[TransportStreams]:
        """The server's streams for the session; on exit the server process has been stopped."""
        async with self._wire.streams() as streams:
            self._stderr.child_started()
            try:
                yield streams
            except Exception:
                # Before the server is stopped: did it exit by itself (its stderr ends with it)?
                self._exited_first = await self._stderr.ended(EXIT_WAIT_S)
                raise

    async def failure(self, exc: Exception) -> str:
        """Why the start failed: a headline naming the cause, then the last lines of the server's stderr."""
        cause, name, process = root_cause(exc), self._name, self._wire.process
        if process is None:
            reason = cause.strerror if isinstance(cause, OSError) and cause.strerror else describe(cause)
            return (f"server {name!r}: cannot start command {self._command!r}: {reason}; "
                    f"fix mcpServers.{name}.command")
        await self._stderr.ended()
        if isinstance(cause, MCPError) and cause.error.code == mcp_types.CONNECTION_CLOSED:
            if self._exited_first:
                headline = f"server {name!r}: the process {exit_status(process.returncode)} during start"
            else:
                headline = f"server {name!r}: the process closed its stdout during start without exiting"
        else:
            headline = f"server {name!r}: the MCP handshake failed: {describe(cause)}"
        lines = self._stderr.last_lines()
        if not lines:
            return f"{headline}; it wrote nothing to stderr"
        return f"{headline}; last lines of its stderr:\n" + "\n".join(f"    {line}" for line in lines)
