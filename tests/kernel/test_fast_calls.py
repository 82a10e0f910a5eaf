"""``FastCalls`` and the stdio transport it rides on. On the wire: ids the session never uses, the protocol ``_meta``
the session put on its last request and the call's own, the requests of one loop iteration in two writes at most,
replies read by msgspec exactly as the SDK reads them (the lines it cannot read go the SDK's way), a courtesy cancel
when a call is abandoned, every waiting call failed when the connection closes. The transport's lines: a line over
the cap dropped as it comes, never held. Then against a real server process, beside the session's own requests."""

from __future__ import annotations

import asyncio
import json
import sys

import mcp_types
import pydantic
import pytest
from mcp import MCPError
from mcp.shared.message import SessionMessage

from rlfactory_envs.kernel.mcp.config import StdioServerEntry
from rlfactory_envs.kernel.mcp.fast_calls import FastCalls
from rlfactory_envs.kernel.mcp.session import McpSession
from rlfactory_envs.kernel.mcp.stdio_transport import LineSplitter, session_item

PROTOCOL = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "0"}}


class Stdin:
    """Where an attached ``FastCalls`` writes, in this process: each write's bytes (or a closed pipe)."""

    def __init__(self, closed: bool = False) -> None:
        self.writes: list[bytes] = []
        self.closed = closed

    def write(self, data: bytes) -> None:
        if self.closed:
            raise BrokenPipeError
        self.writes.append(data)

    def requests(self) -> list[dict]:
        return [json.loads(line) for data in self.writes for line in data.splitlines()]


def attached(closed: bool = False) -> tuple[FastCalls, Stdin]:
    calls, stdin = FastCalls(), Stdin(closed)
    calls.attach(stdin.write)
    calls.note(SessionMessage(mcp_types.JSONRPCRequest(jsonrpc="2.0", id=7, method="tools/list",
                                                       params={"_meta": {**PROTOCOL, "other": 1}})))
    return calls, stdin


def line(request_id: str, result: dict | None = None, error: dict | None = None) -> bytes:
    member = {"error": error} if error is not None else {"result": result}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, **member}).encode()


async def settle() -> None:
    """Let the calls started so far run up to their reply (their requests written)."""
    for _ in range(3):
        await asyncio.sleep(0)


def read(calls: FastCalls, reply: bytes) -> None:
    """Hand ``reply`` to ``calls`` as the transport does: its own reading first, then the SDK's."""
    assert calls.take(reply) or calls.claim(session_item(reply))


async def test_a_call_carries_its_own_id_and_the_sessions_protocol_meta_and_reads_the_reply():
    calls, stdin = attached()
    call = asyncio.ensure_future(calls.call_tool("sleep", {"ms": 1}, {"rlfactory/episode": "e1"}))
    await asyncio.sleep(0)
    [sent] = stdin.requests()
    assert sent["id"].startswith("rlf-") and sent["method"] == "tools/call"
    assert sent["params"] == {"name": "sleep", "arguments": {"ms": 1}, "_meta": {"rlfactory/episode": "e1", **PROTOCOL}}
    assert not calls.take(line("rlf-999", {"content": []}))  # not ours (any more): the session's to drop
    assert not calls.claim(SessionMessage(mcp_types.JSONRPCResponse(jsonrpc="2.0", id=7, result={})))
    assert calls.take(line(sent["id"], {"content": [{"type": "text", "text": "slept 1 ms"}]}))
    result = await call
    assert isinstance(result, mcp_types.CallToolResult) and result.content[0].text == "slept 1 ms"


REPLIES = [
    {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "é\n💥"}]},
    {"content": [], "structuredContent": {"results": [{"text": "x", "is_error": False, "n": 1.5}], "ticket": None},
     "isError": True, "resultType": "complete", "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s"}}},
    {"content": [{"type": "text", "text": "t", "annotations": {"priority": 0.5}}]},  # the SDK's reading
    {"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]},  # the SDK's reading
    {"content": [], "isError": 1},  # pydantic coerces it: the SDK's reading
    {"content": [], "structuredContent": None, "extra": "ignored"},
]


@pytest.mark.parametrize("reply", REPLIES)
async def test_a_reply_reads_the_same_whichever_reading_took_it(reply):
    calls, stdin = attached()
    call = asyncio.ensure_future(calls.call_tool("t", {}))
    await asyncio.sleep(0)
    read(calls, line(stdin.requests()[0]["id"], reply))
    expected = mcp_types.CallToolResult.model_validate(reply)
    assert (await call).model_dump(by_alias=True, exclude_none=True) == expected.model_dump(by_alias=True,
                                                                                           exclude_none=True)


async def test_errors_and_wrong_shapes_raise_as_the_sdk_raises_them():
    calls, stdin = attached()
    failing = asyncio.ensure_future(calls.call_tool("t", {}))
    shapeless = asyncio.ensure_future(calls.call_tool("t", {}))
    badly_coded = asyncio.ensure_future(calls.call_tool("t", {}))
    await settle()
    ids = [request["id"] for request in stdin.requests()]
    assert calls.take(line(ids[0], error={"code": -32602, "message": "bad params", "data": [1]}))
    with pytest.raises(MCPError, match="bad params") as failed:
        await failing
    assert failed.value.error.data == [1]
    read(calls, line(ids[1], {"content": "not a list"}))
    with pytest.raises(pydantic.ValidationError, match="content"):
        await shapeless
    read(calls, line(ids[2], error={"code": "oops"}))  # the SDK's reading: a PARSE_ERROR for that id
    with pytest.raises(MCPError, match="Failed to parse JSON response") as unreadable:
        await badly_coded
    assert unreadable.value.error.code == mcp_types.PARSE_ERROR


async def test_an_abandoned_call_is_cancelled_on_the_wire_and_a_closed_connection_fails_the_rest():
    calls, stdin = attached()
    abandoned = asyncio.ensure_future(calls.call_tool("t", {}))
    await asyncio.sleep(0)
    request_id = stdin.requests()[0]["id"]
    abandoned.cancel()
    with pytest.raises(asyncio.CancelledError):
        await abandoned
    await asyncio.sleep(0)
    notice = stdin.requests()[-1]
    assert notice["method"] == "notifications/cancelled" and notice["params"]["requestId"] == request_id
    assert not calls.take(line(request_id, {"content": []}))  # its late reply is not ours any more
    waiting = asyncio.ensure_future(calls.call_tool("t", {}))
    await asyncio.sleep(0)
    calls.fail_all("Connection closed: the process exited with code 7")
    for call in (waiting, calls.call_tool("later", {})):
        with pytest.raises(MCPError, match="exited with code 7") as failed:
            await call
        assert failed.value.error.code == mcp_types.CONNECTION_CLOSED


async def test_the_calls_of_one_iteration_go_out_in_two_writes():
    calls, stdin = attached()
    waiting = [asyncio.ensure_future(calls.call_tool("sleep", {"ms": i}, {"rlfactory/episode": f"e{i}"}))
               for i in range(50)]
    await settle()
    assert len(stdin.writes) == 2 and all(data.endswith(b"\n") for data in stdin.writes)
    assert stdin.writes[0].count(b"\n") == 1  # the first at once, the others at the end of the iteration
    requests = stdin.requests()
    assert [r["params"]["arguments"]["ms"] for r in requests] == list(range(50))
    assert requests[3] == {"jsonrpc": "2.0", "id": requests[3]["id"], "method": "tools/call", "params": {
        "name": "sleep", "arguments": {"ms": 3}, "_meta": {"rlfactory/episode": "e3", **PROTOCOL}}}
    for request in requests:
        assert calls.take(line(request["id"], {"content": [{"type": "text", "text": "ok"}]}))
    assert [(await call).content[0].text for call in waiting] == ["ok"] * 50


async def test_a_failed_write_fails_the_calls_it_carried_as_a_closed_connection():
    calls, _ = attached(closed=True)
    failed = await asyncio.wait_for(asyncio.gather(*(calls.call_tool("t", {}) for _ in range(3)),
                                                  return_exceptions=True), 10)
    assert [f.error.code for f in failed] == [mcp_types.CONNECTION_CLOSED] * 3


def test_lines_are_split_across_chunks_and_a_line_over_the_cap_is_dropped_as_it_comes():
    drops = []
    lines = LineSplitter(max_bytes=10, on_drop=lambda: drops.append(1))
    assert lines.feed(b"ab") == [] and lines.feed(b"c\nd") == [b"abc"]
    assert lines.feed(b"efghijklmnop") == [] and drops == [1]  # "defghijklmnop" passed the cap: dropped at once
    assert lines.feed(b"x" * 100) == [] and len(lines._partial) == 0  # what follows it is not kept either
    assert lines.feed(b"yy\n0123456789\n01234567890\nz") == [b"0123456789"] and drops == [1, 1]
    assert lines.feed(b"\n") == [b"z"]


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
