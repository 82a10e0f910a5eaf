"""``FastCalls``: the toolbox's tool calls over a stdio session's own streams. On the wire: ids the session never uses,
the protocol ``_meta`` the session put on its last request and the call's own, replies read as the SDK reads them,
a courtesy cancel when a call is abandoned, every waiting call failed when the connection closes; the session's own
messages pass through untouched. Then against a real server process, beside the session's own requests."""

from __future__ import annotations

import asyncio
import sys

import anyio
import mcp_types
import pydantic
import pytest
from mcp import MCPError
from mcp.shared.message import SessionMessage

from rlfactory_envs.kernel.mcp.config import StdioServerEntry
from rlfactory_envs.kernel.mcp.fast_calls import FastCalls
from rlfactory_envs.kernel.mcp.session import McpSession

PROTOCOL = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "0"}}


def wired() -> tuple[FastCalls, object, object]:
    """A ``FastCalls`` on a memory write stream: (calls, the session's view of the stream, what reaches the wire)."""
    send, wire = anyio.create_memory_object_stream[SessionMessage](100)
    calls = FastCalls()
    return calls, calls.tap(send), wire


def reply(request_id: str, result: dict | None = None, error: dict | None = None) -> SessionMessage:
    if error is not None:
        return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
    return SessionMessage(mcp_types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result))


async def test_a_call_carries_its_own_id_and_the_sessions_protocol_meta_and_reads_the_reply():
    calls, session_stream, wire = wired()
    await session_stream.send(SessionMessage(mcp_types.JSONRPCRequest(
        jsonrpc="2.0", id=7, method="tools/list", params={"_meta": {**PROTOCOL, "other": 1}})))
    assert (await wire.receive()).message.id == 7  # the session's own message passes through
    call = asyncio.ensure_future(calls.call_tool("sleep", {"ms": 1}, {"rlfactory/episode": "e1"}))
    sent = (await wire.receive()).message
    assert isinstance(sent.id, str) and sent.id.startswith("rlf-") and sent.method == "tools/call"
    assert sent.params == {"name": "sleep", "arguments": {"ms": 1}, "_meta": {"rlfactory/episode": "e1", **PROTOCOL}}
    assert not calls.claim(reply("rlf-999", {"content": []}))  # not ours (any more): the session's to drop
    assert not calls.claim(SessionMessage(mcp_types.JSONRPCResponse(jsonrpc="2.0", id=7, result={})))
    assert calls.claim(reply(sent.id, {"content": [{"type": "text", "text": "slept 1 ms"}]}))
    result = await call
    assert isinstance(result, mcp_types.CallToolResult) and result.content[0].text == "slept 1 ms"


async def test_errors_and_wrong_shapes_raise_as_the_sdk_raises_them():
    calls, _, wire = wired()
    failing = asyncio.ensure_future(calls.call_tool("t", {}))
    calls.claim(reply((await wire.receive()).message.id, error={"code": -32602, "message": "bad params"}))
    with pytest.raises(MCPError, match="bad params"):
        await failing
    shapeless = asyncio.ensure_future(calls.call_tool("t", {}))
    calls.claim(reply((await wire.receive()).message.id, {"content": "not a list"}))
    with pytest.raises(pydantic.ValidationError, match="content"):
        await shapeless


async def test_an_abandoned_call_is_cancelled_on_the_wire_and_a_closed_connection_fails_the_rest():
    calls, _, wire = wired()
    abandoned = asyncio.ensure_future(calls.call_tool("t", {}))
    request_id = (await wire.receive()).message.id
    abandoned.cancel()
    with pytest.raises(asyncio.CancelledError):
        await abandoned
    notice = (await wire.receive()).message
    assert notice.method == "notifications/cancelled" and notice.params["requestId"] == request_id
    assert not calls.claim(reply(request_id, {"content": []}))  # its late reply is not ours any more
    waiting = asyncio.ensure_future(calls.call_tool("t", {}))
    await wire.receive()
    calls.fail_all()
    with pytest.raises(MCPError) as failed:
        await waiting
    assert failed.value.error.code == mcp_types.CONNECTION_CLOSED


async def test_over_a_real_stdio_server_calls_go_beside_the_sessions_own_requests():
    session = McpSession("sleep", StdioServerEntry(command=sys.executable, args=["-m", "rlfactory_tool_servers.sleep"]))
    await session.open()
    try:
        listed, *results = await asyncio.gather(session.list_tools(),
                                                *(session.call_tool("sleep", {"ms": i % 5}) for i in range(200)))
        assert {tool.name for tool in listed} >= {"sleep", "process_id"}
        assert [r.content[0].text for r in results] == [f"slept {i % 5} ms" for i in range(200)]
    finally:
        await session.close()


class Stdin:
    """Where an attached ``FastCalls`` writes, in this process: each write's bytes (or a closed pipe)."""

    def __init__(self, closed: bool = False) -> None:
        self.writes: list[bytes] = []
        self.closed = closed

    async def send(self, data: bytes) -> None:
        if self.closed:
            raise anyio.BrokenResourceError
        self.writes.append(data)


async def test_attached_to_the_servers_stdin_the_calls_of_one_iteration_go_out_in_one_write():
    import json

    calls, session_stream, _ = wired()
    await session_stream.send(SessionMessage(mcp_types.JSONRPCRequest(
        jsonrpc="2.0", id=1, method="tools/list", params={"_meta": PROTOCOL})))
    stdin = Stdin()
    calls.attach(stdin)
    waiting = [asyncio.ensure_future(calls.call_tool("sleep", {"ms": i}, {"rlfactory/episode": f"e{i}"}))
               for i in range(50)]
    dropped = asyncio.ensure_future(calls.call_tool("sleep", {"ms": 99}))
    await asyncio.sleep(0)
    dropped.cancel()  # cancelled before it was written: taken back, nothing to cancel on the wire
    for _ in range(3):
        await asyncio.sleep(0)
    assert len(stdin.writes) == 1 and stdin.writes[0].endswith(b"\n")
    requests = [json.loads(line) for line in stdin.writes[0].splitlines()]
    assert [r["params"]["arguments"]["ms"] for r in requests] == list(range(50))
    assert requests[3] == {"jsonrpc": "2.0", "id": requests[3]["id"], "method": "tools/call", "params": {
        "name": "sleep", "arguments": {"ms": 3}, "_meta": {"rlfactory/episode": "e3", **PROTOCOL}}}
    for request in requests:
        assert calls.claim(reply(request["id"], {"content": [{"type": "text", "text": "ok"}]}))
    assert [(await call).content[0].text for call in waiting] == ["ok"] * 50
    assert dropped.cancelled() and not calls._background


async def test_a_failed_write_fails_the_calls_it_carried_as_a_closed_connection():
    calls, _, _ = wired()
    calls.attach(Stdin(closed=True))
    failed = await asyncio.wait_for(asyncio.gather(*(calls.call_tool("t", {}) for _ in range(3)),
                                                  return_exceptions=True), 10)
    assert [f.error.code for f in failed] == [mcp_types.CONNECTION_CLOSED] * 3
