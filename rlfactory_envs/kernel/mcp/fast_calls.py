"""``tools/call`` over a stdio connection without the SDK's per-request machinery.

The SDK's ``ClientSession`` spends most of a quick tool call on what a call from the toolbox does not use (a
response stream, cancel scopes and telemetry per request, pydantic framing of every message both ways, the tool's
output schema checked again). ``FastCalls`` writes the toolbox's ``tools/call`` requests to the server's stdin itself,
under ids of its own (``"rlf-1"``, ``"rlf-2"``, ...: the session's are integers), and the transport
(``stdio_transport``) hands it each line the server writes before the session sees it; everything else (the
handshake, ``tools/list``, the server's requests and notifications) stays the session's.

- A request carries the protocol ``_meta`` the session put on its last own request (the 2026-07-28 protocol repeats
  the version and client on every request; the older one has none), is encoded once (msgspec), and the requests made
  in one loop iteration go out in two writes at most (the first at once, the others at the iteration's end).
- A reply line to one of its requests is decoded by msgspec into the shapes a plain text result and a JSON-RPC error
  have. A line of any other shape (non-text content, annotations, a value the SDK's pydantic models would coerce, a
  malformed reply) is left to the SDK's reading (``claim``), so a reply reads as the SDK reads it: a JSON-RPC error
  is an ``MCPError``, a result of the wrong shape a pydantic ``ValidationError``.
- A call abandoned at its deadline is cancelled with ``notifications/cancelled``, as the session does. When the connection closes, every call waiting fails
  with ``CONNECTION_CLOSED``, saying why when the transport knows (the server's exit status, its last stderr lines).
  The server's tool output schema is not checked against the reply (the text is what the model reads).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any, Literal

import mcp_types
import msgspec
from mcp import MCPError
from mcp.shared.message import SessionMessage

PROTOCOL_META = "io.modelcontextprotocol/"
"""The prefix of the ``_meta`` keys the session puts on each request for the protocol (version, client)."""
ID_PREFIX = "rlf-"
CONNECTION_CLOSED = "Connection closed"


_ABSENT = msgspec.Raw()


class _Envelope(msgspec.Struct):
    """A JSON-RPC message, its payload left undecoded (an empty ``Raw``: the member is absent)."""

    jsonrpc: Any = None
    id: Any = None
    method: Any = None
    result: msgspec.Raw = _ABSENT
    error: msgspec.Raw = _ABSENT


class _Text(msgspec.Struct, forbid_unknown_fields=True):
    type: Literal["text"]
    text: str


class _Result(msgspec.Struct, forbid_unknown_fields=True):
    """A ``CallToolResult`` whose content is text blocks alone (what the toolbox's tools answer)."""

    content: list[_Text]
    structuredContent: dict[str, Any] | None = None  # noqa: N815 - the wire's names
    isError: bool = False  # noqa: N815
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")
    resultType: str = "complete"  # noqa: N815


class _Error(msgspec.Struct, forbid_unknown_fields=True):
    code: int
    message: str
    data: Any = None


_decode_envelope = msgspec.json.Decoder(_Envelope).decode
_decode_result = msgspec.json.Decoder(_Result).decode
_decode_error = msgspec.json.Decoder(_Error).decode
_encode = msgspec.json.Encoder().encode
_FAST_FAILURES = (msgspec.DecodeError, msgspec.ValidationError)


def _call_result(result: _Result) -> mcp_types.CallToolResult:
    """The SDK's ``CallToolResult`` of a decoded text result, built without validating it again."""
    blocks = [mcp_types.TextContent.model_construct(type="text", text=block.text) for block in result.content]
    return mcp_types.CallToolResult.model_construct(content=blocks, structured_content=result.structuredContent,
                                                    is_error=result.isError, meta=result.meta,
                                                    result_type=result.resultType)


class FastCalls:
    """The toolbox's ``tools/call`` requests of one stdio connection (see the module docstring)."""

    def __init__(self) -> None:
        self._write: Callable[[bytes], None] | None = None
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._protocol_meta: dict[str, Any] = {}
        self._unsent: list[tuple[str, bytes]] | None = None  # None: nothing written in this loop iteration yet
        self._closed_because = CONNECTION_CLOSED

    def attach(self, write: Callable[[bytes], None]) -> None:
        """Write requests with ``write`` (whole lines to the server's stdin; it raises when the pipe is gone)."""
        self._write = write
        self._closed_because = CONNECTION_CLOSED

    def note(self, message: SessionMessage) -> None:
        """Keep the protocol ``_meta`` of a request the session sends."""
        inner = message.message
        if isinstance(inner, mcp_types.JSONRPCRequest) and isinstance(inner.params, dict):
            meta = inner.params.get("_meta")
            if isinstance(meta, dict):
                self._protocol_meta = {key: value for key, value in meta.items() if key.startswith(PROTOCOL_META)}

    def take(self, line: bytes) -> bool:
        """Whether ``line`` is a reply to one of our requests in a shape read here (then it answers it); any other
        line is for ``claim`` after the SDK's reading, or for the session."""
        try:
            envelope = _decode_envelope(line)
        except _FAST_FAILURES:
            return False
        future = self._pending.get(envelope.id) if isinstance(envelope.id, str) else None
        if future is None or envelope.method is not None or envelope.jsonrpc != "2.0":
            return False
        try:
            if envelope.result and not envelope.error:
                outcome: Any = _call_result(_decode_result(envelope.result))
            elif envelope.error and not envelope.result:
                error = _decode_error(envelope.error)
                outcome = MCPError(error.code, error.message, error.data)
            else:
                return False
        except _FAST_FAILURES:
            return False
        del self._pending[envelope.id]
        if not future.done():
            future.set_result(outcome)
        return True

    def claim(self, item: Any) -> bool:
        """Whether ``item``, a line as the SDK read it, is the reply to one of our requests (then it answers it)."""
        message = getattr(item, "message", None)
        if not isinstance(message, (mcp_types.JSONRPCResponse, mcp_types.JSONRPCError)):
            return False
        future = self._pending.pop(message.id, None) if isinstance(message.id, str) else None
        if future is None:
            return False
        if not future.done():
            future.set_result(message)
        return True

    def fail_all(self, because: str = CONNECTION_CLOSED) -> None:
        """The connection closed (``because`` says how): every request waiting fails as the session's own do, and
        so does every later one."""
        self._write = None
        self._closed_because = because
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(MCPError(mcp_types.CONNECTION_CLOSED, because))

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        meta: dict[str, Any] | None = None) -> mcp_types.CallToolResult:
        """One ``tools/call`` (``meta``: its ``_meta``); raises as the SDK's ``call_tool`` does."""
        if self._write is None:
            raise MCPError(mcp_types.CONNECTION_CLOSED, self._closed_because)
        request_id = f"{ID_PREFIX}{next(self._ids)}"
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        protocol = self._protocol_meta
        if meta or protocol:
            params["_meta"] = {**meta, **protocol} if meta else protocol
        line = _encode({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}) + b"\n"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            self._send(request_id, line)
            reply = await future
        except asyncio.CancelledError:
            if self._pending.pop(request_id, None) is not None:
                self._cancel(request_id)
            raise
        if isinstance(reply, mcp_types.CallToolResult):
            return reply
        if isinstance(reply, MCPError):
            raise reply
        if isinstance(reply, mcp_types.JSONRPCError):
            raise MCPError(reply.error.code, reply.error.message, reply.error.data)
        return mcp_types.CallToolResult.model_validate(reply.result)

    def _send(self, request_id: str, line: bytes) -> None:
        """Write ``line`` now if it is the loop iteration's first, else with the iteration's others at its end."""
        if self._unsent is not None:
            self._unsent.append((request_id, line))
            return
        self._unsent = []
        asyncio.get_running_loop().call_soon(self._flush)
        self._written([(request_id, line)], line)

    def _flush(self) -> None:
        """One write of the requests queued since the iteration's first."""
        unsent, self._unsent = self._unsent, None
        if unsent:
            self._written(unsent, b"".join(line for _, line in unsent))

    def _written(self, requests: list[tuple[str, bytes]], data: bytes) -> None:
        """Write ``data`` (the lines of ``requests``); a failed write fails each of them as a closed connection."""
        try:
            if self._write is None:
                raise ConnectionError(self._closed_because)
            self._write(data)
        except Exception:  # noqa: BLE001 - a closed or broken pipe, or anything else: no reply is coming
            for request_id, _ in requests:
                future = self._pending.pop(request_id, None)
                if future is not None and not future.done():
                    future.set_exception(MCPError(mcp_types.CONNECTION_CLOSED, self._closed_because))

    def _cancel(self, request_id: str) -> None:
        """Tell the server a request was abandoned (a courtesy: the connection may be gone)."""
        notice = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": request_id, "reason": "deadline"}}
        line = _encode(notice) + b"\n"
        if self._unsent is not None:
            self._unsent.append(("", line))
        else:
            self._written([], line)
