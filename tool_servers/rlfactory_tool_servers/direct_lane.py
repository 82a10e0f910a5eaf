"""``tools/call`` to a server that lives in this process, without the MCP SDK's in-process request path.

An in-process entry (a user's ``tools=[fn]``, a server built from our toolsets, the bench's sleep server) is served
by an ``MCPServer`` object held here. Through the SDK's ``Client(server)`` each call is still a whole request: the
params and result are pydantic models built, dumped and validated again, the request crosses a dispatcher task, a
span and the request-state middleware. ``DirectLane`` runs the server's own ``tools/call`` handler
(``MCPServer._handle_call_tool``: the tool's argument validation, its errors as ``isError`` results, its log) in the
caller's task and hands its ``CallToolResult`` over as it is; a handler's exception reaches the caller as the
``MCPError`` the SDK's client would raise for it.

It takes a call only when nothing else of the SDK's path could show, as the stdio fast lane does
(``fast_lane``): the server's middleware is the SDK's defaults and ours, no OpenTelemetry
tracer provider is set, no cache hint applies, requests are not logged at ``INFO``, the tool exists, takes no
context or only reads its request's ``_meta`` (``LIGHT_CONTEXT``), and lists no output schema (the SDK's client
checks structured content against it). Every other call goes the SDK's way. The result departs from the SDK's in
one point: its ``_meta`` carries no ``serverInfo`` stamp (nothing here reads it).
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import mcp_types
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.runner import modern_error_data

from rlfactory_tool_servers.fast_lane import known_middleware, tracing_on
from rlfactory_tool_servers.request_log import logger as request_log
from rlfactory_tool_servers.tool_signature import LIGHT_CONTEXT

METHOD = "tools/call"


class DirectLane:
    """The ``tools/call`` requests to one in-process ``MCPServer`` that skip the SDK's request path."""

    def __init__(self, server: Any, protocol_version: str):
        """``protocol_version``: the one the SDK's client session to ``server`` negotiated."""
        self._server: MCPServer | None = server if isinstance(server, MCPServer) else None
        self._version = protocol_version
        self._ids = itertools.count(1)

    def takes(self, name: str) -> bool:
        """Whether a call to tool ``name`` goes the direct way (see the module)."""
        server = self._server
        if server is None or request_log.isEnabledFor(logging.INFO) or METHOD in server._lowlevel_server.cache_hints:
            return False
        tool = server._tool_manager.get_tool(name)
        return (tool is not None and tool.output_schema is None
                and (tool.context_kwarg is None or getattr(tool.fn, LIGHT_CONTEXT, False))
                and known_middleware(server) and not tracing_on())

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        meta: dict[str, Any] | None = None) -> mcp_types.CallToolResult:
        """The server's answer to ``tools/call`` of ``name`` (``meta``: the request's ``_meta``); ``MCPError`` where
        the SDK's client would raise one."""
        assert self._server is not None
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta is not None:
            params["_meta"] = meta
        typed = mcp_types.CallToolRequestParams.model_validate(params, by_name=False)
        context = ServerRequestContext(session=None, lifespan_context=None,  # type: ignore[arg-type]
                                       protocol_version=self._version, method=METHOD, params=params,
                                       request_id=next(self._ids), meta=typed.meta)
        try:
            result = await self._server._handle_call_tool(context, typed)
        except MCPError:
            raise
        except Exception as exc:  # noqa: BLE001 - mapped as the SDK maps a handler's exception
            raise MCPError.from_error_data(modern_error_data(exc)) from exc
        if not isinstance(result, mcp_types.CallToolResult):
            raise MCPError(mcp_types.INTERNAL_ERROR, f"the tool {name!r} asked for input, which needs a session")
        return result
