"""``tools/call`` over stdio without the MCP SDK's per-request machinery, answered as the SDK answers it.

On a stdio connection of the 2026-07-28 protocol, the SDK spends most of a quick tool call on what a call to one of
our tools does not use: a relay stream, a dispatcher task and cancel scope, an OpenTelemetry span, the request-state
middleware, a ``Connection`` and a ``ServerSession`` per request, pydantic framing of the JSON-RPC message both
ways. ``FastLane`` takes such a request off the line before the SDK reads it and runs the SDK's own pieces that
decide the answer: the envelope ladder (``classify_inbound_request``), the request's surface validation, the
MCPServer's ``tools/call`` handler (the tool's argument validation, its errors as ``isError`` results, its log), the
result's per-version surface, ``resultType`` and the ``serverInfo`` stamp; a JSON-RPC error as the SDK maps it.

It takes a line only when nothing else of the SDK's path could show: the connection opened in the modern era, the
tool takes no context or only reads its request's ``_meta`` (``LIGHT_CONTEXT``, set by ``toolset``), the request
carries no multi-round-trip state, the server's middleware is the SDK's defaults, ``hide_batch_forms`` and
``log_requests`` (at ``INFO`` the request is logged, so it goes the SDK's way), no OpenTelemetry tracer provider
is set and no cache hint applies. Every other line, and any line it cannot read, goes to the SDK unchanged.
``notifications/cancelled`` for one of its requests cancels it (no answer is written, as the SDK writes none).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import mcp_types
import msgspec
import pydantic
from mcp import MCPError
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.request_state import RequestStateBoundary
from mcp.server.runner import modern_error_data
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp_types import methods as surface

from rlfactory_tool_servers.batch_form import hide_batch_forms
from rlfactory_tool_servers.request_log import log_requests
from rlfactory_tool_servers.stdio_pipes import PipeWriter
from rlfactory_tool_servers.tool_signature import LIGHT_CONTEXT

METHOD = "tools/call"
CANCELLED = "notifications/cancelled"
MRTR_KEYS = ("requestState", "inputResponses")


def known_middleware(server: MCPServer) -> bool:
    """Whether ``server``'s middleware is the SDK's defaults and ours, which do nothing to a ``tools/call`` answer
    but log it (``log_requests``, checked per request) and trace it (checked by ``tracing_on``)."""
    return all(isinstance(m, (OpenTelemetryMiddleware, RequestStateBoundary)) or m in (hide_batch_forms, log_requests)
               for m in server.middleware)


def tracing_on() -> bool:
    """Whether an OpenTelemetry tracer provider is set (the SDK's spans are no-ops otherwise)."""
    from opentelemetry import trace

    return type(trace.get_tracer_provider()).__name__ not in ("ProxyTracerProvider", "NoOpTracerProvider")


class FastLane:
    """The ``tools/call`` requests of one stdio connection that skip the SDK's request path (see the module)."""

    def __init__(self, server: MCPServer, writer: PipeWriter):
        self._server = server
        self._lowlevel = server._lowlevel_server  # its cache hints and serverInfo stamp (mcp 2.3)
        self._writer = writer
        self._era: str | None = None  # "modern" or "legacy", as the connection's first request decides
        self._running: dict[Any, asyncio.Task[None]] = {}
        self._open = known_middleware(server) and not tracing_on() and METHOD not in self._lowlevel.cache_hints
        self._log = logging.getLogger("rlfactory_tool_servers.requests")

    def take(self, line: str) -> bool:
        """Whether the lane takes ``line`` (then it answers it; else the SDK is to read it)."""
        if not self._open or (self._era is not None and self._era != "modern"):
            return False
        if self._era is None or METHOD in line or CANCELLED in line:
            message = _object(line)
            if message is None:
                return False
            if self._era is None:
                self._note_era(message)
                return False
            if message.get("method") == CANCELLED:
                return self._cancel(message)
            return self._start(message)
        return False

    def _note_era(self, message: dict[str, Any]) -> None:
        """The era the SDK serves the connection in: its first request decides (``serve_dual_era_loop``)."""
        if "id" in message and isinstance(message.get("method"), str):
            params = message.get("params")
            meta = params.get("_meta") if isinstance(params, dict) else None
            modern = (message["method"] != "initialize" and isinstance(meta, dict)
                      and mcp_types.PROTOCOL_VERSION_META_KEY in meta)
            self._era = "modern" if modern else "legacy"

    def _start(self, message: dict[str, Any]) -> bool:
        request_id, params = message.get("id"), message.get("params")
        if (message.get("jsonrpc") != "2.0" or message.get("method") != METHOD or isinstance(request_id, bool)
                or not isinstance(request_id, (int, str)) or request_id in self._running
                or not isinstance(params, dict) or any(params.get(key) is not None for key in MRTR_KEYS)
                or self._log.isEnabledFor(logging.INFO)):
            return False
        tool = self._server._tool_manager.get_tool(params.get("name"))  # type: ignore[arg-type]
        if tool is None or not (tool.context_kwarg is None or getattr(tool.fn, LIGHT_CONTEXT, False)):
            return False
        route = classify_inbound_request(message)
        if isinstance(route, InboundLadderRejection):
            return False
        try:
            surface.validate_client_request(METHOD, route.protocol_version, params)
            typed = mcp_types.CallToolRequestParams.model_validate(params, by_name=False)
        except (KeyError, ValueError):  # pydantic's ValidationError is a ValueError: the SDK words the answer
            return False
        task = asyncio.ensure_future(self._answer(request_id, route.protocol_version, params, typed))
        self._running[request_id] = task
        task.add_done_callback(lambda _: self._running.pop(request_id, None))
        return True

    def _cancel(self, message: dict[str, Any]) -> bool:
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        task = self._running.get(request_id) if isinstance(request_id, (int, str)) else None
        if task is None:
            return False
        task.cancel()
        return True

    async def _answer(self, request_id: Any, version: str, params: dict[str, Any],
                      typed: mcp_types.CallToolRequestParams) -> None:
        """Run the call as the SDK's handler does and write its answer (nothing when it was cancelled)."""
        try:
            reply: dict[str, Any] = {"result": await self._result(request_id, version, params, typed)}
        except asyncio.CancelledError:
            return
        except Exception as exc:  # noqa: BLE001 - mapped to the wire error as the SDK maps it
            error = exc.error if isinstance(exc, MCPError) else modern_error_data(exc)
            reply = {"error": error.model_dump(by_alias=True, mode="json", exclude_none=True)}
        try:
            await self._write({"jsonrpc": "2.0", "id": request_id, **reply})
        except (OSError, RuntimeError):  # the client closed the pipe (a closed transport raises RuntimeError)
            pass

    async def _result(self, request_id: Any, version: str, params: dict[str, Any],
                      typed: mcp_types.CallToolRequestParams) -> dict[str, Any]:
        """The wire ``result`` of the call, shaped as ``ServerRunner._serialize`` shapes a ``tools/call`` one."""
        meta = typed.meta
        context = ServerRequestContext(session=None, lifespan_context=None, protocol_version=version,  # type: ignore
                                       method=METHOD, params=params, request_id=request_id, meta=meta)
        result = await self._server._handle_call_tool(context, typed)
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        result_type = dumped.get("resultType")
        if not isinstance(result_type, str) or result_type in mcp_types.CORE_RESULT_TYPES:
            try:
                dumped = surface.serialize_server_result(METHOD, version, dumped)
            except pydantic.ValidationError:
                logging.getLogger("mcp.server.runner").exception("handler for %r returned an invalid result", METHOD)
                raise MCPError(code=mcp_types.INTERNAL_ERROR, message="Handler returned an invalid result") from None
        if dumped.get("resultType") is None:
            dumped["resultType"] = "complete"
        stamp = dumped.get("_meta")
        if stamp is None:
            dumped["_meta"] = {mcp_types.SERVER_INFO_META_KEY: self._lowlevel.server_info_stamp}
        elif isinstance(stamp, dict) and stamp.get(mcp_types.SERVER_INFO_META_KEY) is None:
            dumped["_meta"] = {**stamp, mcp_types.SERVER_INFO_META_KEY: self._lowlevel.server_info_stamp}
        return dumped

    async def _write(self, message: dict[str, Any]) -> None:
        """One reply line, encoded as the SDK's writer would (compact UTF-8; NaN and infinities as null)."""
        await self._writer.send(msgspec.json.encode(message) + b"\n")

    def close(self) -> None:
        """Cancel the calls still running (the connection is closing)."""
        for task in list(self._running.values()):
            task.cancel()


_decode = msgspec.json.Decoder().decode


def _object(line: str) -> dict[str, Any] | None:
    try:
        message = _decode(line)
    except msgspec.DecodeError:  # not JSON, or JSON msgspec does not read (NaN, a lone surrogate): the SDK's line
        return None
    return message if isinstance(message, dict) else None


async def lines_past(lane: FastLane, lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The lines of ``lines`` that ``lane`` does not take, for the SDK's ``stdio_server``."""
    async for line in lines:
        if not lane.take(line):
            yield line

