"""``tools/call`` over a stdio session without the SDK's per-request machinery.

The SDK's ``ClientSession`` spends most of a quick tool call on what a call from the toolbox does not use (a
response stream, cancel scopes and telemetry per request, the tool's output schema checked again). ``FastCalls``
sends the toolbox's ``tools/call`` requests through the same transport streams as the session's own, under ids of
its own (``"rlf-1"``, ``"rlf-2"``, ...: the session's are integers), and takes their replies off the read stream
before the session sees them; everything else (the handshake, ``tools/list``, the server's requests and
notifications) stays the session's. Each request carries the protocol ``_meta`` the session put on its last own
request (the 2026-07-28 protocol repeats the version and client on every request; the older one has none), a reply
is read as the SDK reads it (a JSON-RPC error is an ``MCPError``, a result of the wrong shape a pydantic
``ValidationError``), and a call abandoned at its deadline is cancelled with ``notifications/cancelled``, as the
session does. The server's tool output schema is not checked against the reply (the text is what the model reads).

Given the server's stdin (``attach``), the requests skip the SDK's writer task and pydantic framing: each is encoded
once (msgspec) and the requests made in the same loop iteration go out in one write (thousands of concurrent calls
to a server without batched forms are a few writes, not thousands). A failed write fails the requests it carried as
a closed connection.
"""

from __future__ import annotations

import asyncio
import itertools
from types import TracebackType
from typing import Any

import mcp_types
import msgspec
from mcp import MCPError
from mcp.client._transport import WriteStream
from mcp.shared.message import SessionMessage

PROTOCOL_META = "io.modelcontextprotocol/"
"""The prefix of the ``_meta`` keys the session puts on each request for the protocol (version, client)."""
ID_PREFIX = "rlf-"


class FastCalls:
    """The toolbox's ``tools/call`` requests of one stdio session (see the module docstring)."""

    def __init__(self) -> None:
        self._write: WriteStream[SessionMessage] | None = None
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._protocol_meta: dict[str, Any] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._stdin: Any = None  # the server's stdin (anyio's byte stream), when attached
        self._unsent: list[tuple[str, bytes]] = []

    def attach(self, stdin: Any) -> None:
        """Write requests straight to ``stdin`` (an anyio byte stream with ``send``), beside the SDK's writer."""
        self._stdin = stdin

    def tap(self, write: WriteStream[SessionMessage]) -> WriteStream[SessionMessage]:
        """The session's write stream, as the session is to use it: its requests' protocol ``_meta`` is noted."""
        self._write = write
        return _WriteTap(write, self)

    def note(self, message: SessionMessage) -> None:
        """Keep the protocol ``_meta`` of a request the session sends."""
        inner = message.message
        if isinstance(inner, mcp_types.JSONRPCRequest) and isinstance(inner.params, dict):
            meta = inner.params.get("_meta")
            if isinstance(meta, dict):
                self._protocol_meta = {key: value for key, value in meta.items() if key.startswith(PROTOCOL_META)}

    def claim(self, item: Any) -> bool:
        """Whether ``item``, read off the wire, is the reply to one of our requests (then it answers it)."""
        message = getattr(item, "message", None)
        if not isinstance(message, (mcp_types.JSONRPCResponse, mcp_types.JSONRPCError)):
            return False
        future = self._pending.pop(message.id, None) if isinstance(message.id, str) else None
        if future is None:
            return False
        if not future.done():
            future.set_result(message)
        return True

    def fail_all(self) -> None:
        """The connection closed: every request waiting fails as the session's own do."""
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(MCPError(mcp_types.CONNECTION_CLOSED, "Connection closed"))

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        meta: dict[str, Any] | None = None) -> mcp_types.CallToolResult:
        """One ``tools/call`` (``meta``: its ``_meta``); raises as the SDK's ``call_tool`` does."""
        if self._write is None:
            raise MCPError(mcp_types.CONNECTION_CLOSED, "Connection closed")
        request_id = f"{ID_PREFIX}{next(self._ids)}"
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta or self._protocol_meta:
            params["_meta"] = {**(meta or {}), **self._protocol_meta}
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            if self._stdin is not None:
                self._queue(request_id, {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
            else:
                await self._write.send(SessionMessage(mcp_types.JSONRPCRequest(
                    jsonrpc="2.0", id=request_id, method="tools/call", params=params)))
            reply = await future
        except asyncio.CancelledError:
            if self._pending.pop(request_id, None) is not None and not self._unqueue(request_id):
                self._cancel(request_id)
            raise
        if isinstance(reply, mcp_types.JSONRPCError):
            raise MCPError(reply.error.code, reply.error.message, reply.error.data)
        return mcp_types.CallToolResult.model_validate(reply.result)

    def _queue(self, request_id: str, request: dict[str, Any]) -> None:
        """Encode ``request`` now (a value JSON cannot hold fails its caller) and send it with this iteration's."""
        line = msgspec.json.encode(request) + b"\n"
        if not self._unsent:
            self._keep(asyncio.ensure_future(self._send_unsent()))
        self._unsent.append((request_id, line))

    def _unqueue(self, request_id: str) -> bool:
        """Take a request back before it is written (it never reaches the server); whether it was still queued."""
        kept = [(queued, line) for queued, line in self._unsent if queued != request_id]
        taken, self._unsent = len(kept) < len(self._unsent), kept
        return taken

    async def _send_unsent(self) -> None:
        """One write of the requests queued in this loop iteration; a failed write fails each of them."""
        await asyncio.sleep(0)  # let the iteration's other callers queue theirs
        unsent, self._unsent = self._unsent, []
        try:
            await self._stdin.send(b"".join(line for _, line in unsent))
        except Exception:  # noqa: BLE001 - a closed or broken pipe, or anything else: no reply is coming
            for request_id, _ in unsent:
                future = self._pending.pop(request_id, None)
                if future is not None and not future.done():
                    future.set_exception(MCPError(mcp_types.CONNECTION_CLOSED, "Connection closed"))

    def _keep(self, task: asyncio.Task[None]) -> None:
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _cancel(self, request_id: str) -> None:
        """Tell the server a request was abandoned (in the background: the caller is being cancelled)."""
        notice = mcp_types.JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled",
                                               params={"requestId": request_id, "reason": "deadline"})
        self._keep(asyncio.ensure_future(self._send_quietly(SessionMessage(notice))))

    async def _send_quietly(self, message: SessionMessage) -> None:
        try:
            if self._write is not None:
                await self._write.send(message)
        except Exception:  # noqa: BLE001 - a courtesy: the connection may be gone
            pass


class _WriteTap:
    """A write stream that notes each request's protocol ``_meta`` for ``FastCalls`` before passing it on."""

    def __init__(self, inner: WriteStream[SessionMessage], calls: FastCalls):
        self._inner = inner
        self._calls = calls

    async def send(self, item: SessionMessage, /) -> None:
        self._calls.note(item)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WriteTap:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc_val: BaseException | None,
                        exc_tb: TracebackType | None) -> None:
        await self.aclose()
