"""One long-lived MCP client session, opened and closed by a task of its own.

The SDK's ``Client`` is an async context manager whose task group must be entered and exited by the same task.
A pooled session outlives the request that opened it, so an owner task holds the context open until ``close``
or until the transport dies; requests from any task of the same loop go through ``call_tool``.
"""

from __future__ import annotations

import asyncio
import importlib
from contextlib import AbstractAsyncContextManager
from typing import Any

import mcp_types
import pydantic
from mcp import Client, MCPError

from rlfactory_envs.kernel.mcp.config import HttpServerEntry, InProcessServerEntry, ServerEntry, StdioServerEntry
from rlfactory_envs.kernel.mcp.errors import UNREADABLE_REPLY, MalformedReply, TransportError, describe, root_cause
from rlfactory_envs.kernel.mcp.fast_calls import FastCalls
from rlfactory_envs.kernel.mcp.http_connect import http_client_session
from rlfactory_envs.kernel.mcp.stdio_connect import stdio_client_session
from rlfactory_tool_servers.direct_lane import DirectLane


def build_inprocess_server(name: str, entry: InProcessServerEntry) -> Any:
    """``module.build_server(args)`` of an in-process entry; ``TransportError`` when it cannot be built."""
    try:
        return importlib.import_module(entry.module).build_server(list(entry.args))
    except SystemExit as exc:  # the server's argparse refused its arguments
        raise TransportError(f"server {name!r} refused its arguments (exit status {exc.code}); "
                             "see its usage message above") from None
    except Exception as exc:
        raise TransportError(f"cannot build server {name!r}: {exc}") from exc


class McpSession:
    """A connected session to one server. ``open`` raises ``TransportError`` when the server cannot be reached."""

    def __init__(self, name: str, entry: ServerEntry, server: Any = None, direct: bool = True):
        """``server``: the already built server object of an in-process entry (built once, shared by sessions);
        ``direct``: its tools are called without the SDK's request path where they can be
        (``rlfactory_tool_servers.direct_lane``)."""
        self.name = name
        self.entry = entry
        self._server = server
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._fast_calls = FastCalls() if isinstance(entry, StdioServerEntry) else None
        self._direct_lane = direct and isinstance(entry, InProcessServerEntry)
        self._direct: DirectLane | None = None

    @property
    def alive(self) -> bool:
        return self._client is not None and self._owner is not None and not self._owner.done()

    async def open(self) -> None:
        """Connect and handshake within ``connect_timeout_s``; ``TransportError`` naming the server and the cause."""
        connection = self._connection()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # seen, even if nobody awaits it now
        self._owner = asyncio.create_task(self._own(connection, ready), name=f"mcp-session-{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.entry.connect_timeout_s)
        except asyncio.TimeoutError:
            await self._abandon()
            raise TransportError(f"server {self.name!r} did not answer within {self.entry.connect_timeout_s:g} s "
                                 f"(mcpServers.{self.name}.connect_timeout_s)") from None
        except asyncio.CancelledError:
            await self._abandon()
            raise
        except TransportError:
            await self.close()
            raise
        except Exception as exc:
            await self.close()
            raise TransportError(f"cannot connect to server {self.name!r}: {describe(root_cause(exc))}") from exc

    def _connection(self) -> AbstractAsyncContextManager[Client]:
        """What ``_own`` enters to get a connected client (a ``Client`` enters as itself)."""
        if isinstance(self.entry, StdioServerEntry):
            return stdio_client_session(self.name, self.entry, self._fast_calls)
        if isinstance(self.entry, HttpServerEntry):
            return http_client_session(self.name, self.entry)
        if self._server is None:
            self._server = build_inprocess_server(self.name, self.entry)
        return Client(self._server, cache=None, raise_exceptions=False)

    async def _own(self, connection: AbstractAsyncContextManager[Client], ready: asyncio.Future[None]) -> None:
        try:
            async with connection as client:
                self._client = client
                if self._direct_lane:
                    self._direct = DirectLane(self._server, client.protocol_version)
                ready.set_result(None)
                await self._closing.wait()
        except BaseException as exc:  # the owner must record any failure, cancellation included
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else TransportError(repr(exc)))
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            self._client = None

    async def list_tools(self, meta: dict[str, Any] | None = None) -> list[mcp_types.Tool]:
        """Every tool the server lists, page after page; each ``tools/list`` request carries ``meta`` as ``_meta``."""
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(100):
            result = await self._guard(self._require().list_tools(cursor=cursor, meta=meta))
            tools.extend(result.tools)
            cursor = result.next_cursor
            if not cursor:
                break
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        meta: dict[str, Any] | None = None) -> mcp_types.CallToolResult:
        """One ``tools/call`` (``meta``: the request's ``_meta``). Raises ``TransportError`` when the session is
        unusable, ``MalformedReply`` when the reply cannot be read (the session stays usable); tool errors are
        results. Over stdio the call goes by ``FastCalls``, beside the SDK session's own requests; to an in-process
        server by ``DirectLane`` where it can."""
        client = self._require()
        if self._direct is not None and self._direct.takes(name):
            return await self._guard(self._direct.call_tool(name, arguments, meta))
        if self._fast_calls is not None:
            return await self._guard(self._fast_calls.call_tool(name, arguments, meta))
        return await self._guard(client.call_tool(name, arguments, meta=meta))

    def _require(self) -> Client:
        if not self.alive:
            raise TransportError(f"the session to server {self.name!r} is closed")
        assert self._client is not None
        return self._client

    async def _guard(self, awaitable: Any) -> Any:
        try:
            return await awaitable
        except pydantic.ValidationError as exc:  # a JSON-RPC result, but not the shape the method's result has
            raise MalformedReply(self.name, str(exc)) from exc
        except MCPError as exc:
            if exc.error.code == mcp_types.CONNECTION_CLOSED or not self.alive:
                raise TransportError(f"server {self.name!r} closed the connection: {exc}") from exc
            if exc.error.code == mcp_types.PARSE_ERROR and exc.error.message.startswith(UNREADABLE_REPLY):
                raise MalformedReply(self.name, exc.error.message) from exc
            raise
        except (OSError, EOFError, asyncio.IncompleteReadError) as exc:
            raise TransportError(f"server {self.name!r} is unreachable: {exc!r}") from exc
        except Exception as exc:
            if not self.alive or type(exc).__module__.startswith(("anyio", "httpx")):
                raise TransportError(f"server {self.name!r} failed: {exc!r}") from exc
            raise

    async def _abandon(self) -> None:
        """Stop a session whose handshake is still under way (a stdio server process is stopped)."""
        if self._owner is not None and self._client is None:
            self._owner.cancel()
        await self.close()

    async def close(self) -> None:
        """Close the session and wait for its owner to finish (a stdio server process is stopped)."""
        self._closing.set()
        if self._fast_calls is not None:
            self._fast_calls.fail_all()
        owner = self._owner
        if owner is not None and not owner.done():
            try:
                await asyncio.wait_for(asyncio.shield(owner), 5.0)
            except (asyncio.TimeoutError, Exception):
                owner.cancel()
                await asyncio.gather(owner, return_exceptions=True)
        self._client = None
