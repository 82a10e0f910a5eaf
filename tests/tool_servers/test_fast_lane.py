"""The stdio fast lane answers a ``tools/call`` exactly as the MCP SDK's request path does (the same JSON-RPC reply,
errors and results alike), takes only what it may, and a cancelled call gets no answer."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest

from rlfactory_tool_servers import sleep
from rlfactory_tool_servers.fast_lane import FastLane
from tests.conftest import REPO_ROOT

ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"}}
OPENING = {"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {"_meta": ENVELOPE}}


def call(request_id: Any, name: str, arguments: Any, **meta: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": {**ENVELOPE, **meta}}}


TAKEN = [
    call(1, "sleep", {"ms": 0}),
    call("s-2", "sleep", {"ms": -1}),  # the tool's own error
    call(3, "sleep", {"ms": "soon"}),  # invalid arguments
    call(4, "sleep", {"ms": 0, "extra": 1}),
    call(5, "sleep_batch", {"calls": [{"ms": 0}, {"ms": "x"}, 7, {"ms": 1}], "deadline_s": 5},
         **{"rlfactory/episodes": ["a", None, "b", "c"]}),
    call(6, "sleep_batch", {"calls": [{"ms": 0}]}, **{"rlfactory/episodes": ["a", "b"]}),  # misaligned episodes
    call(7, "sleep_batch", {"calls": "not a list"}),
    call(8, "exit_process", {"code": "no"}),  # a plain tool (no context), invalid arguments: nothing exits
]
LEFT_TO_THE_SDK = [
    call(20, "no_such_tool", {}),
    {**call(21, "sleep", {"ms": 0}), "params": {"name": "sleep", "arguments": {"ms": 0}}},  # no envelope
    call(22, "sleep", {"ms": 0}, **{"io.modelcontextprotocol/protocolVersion": "1999-01-01"}),
    call(23, "sleep", [1, 2]),  # arguments not an object
    {**call(24, "sleep", {"ms": 0}), "params": {"name": "sleep", "arguments": {"ms": 0}, "_meta": ENVELOPE,
                                               "requestState": "forged"}},
]


async def answers(lines: list[dict[str, Any]], *options: str) -> dict[Any, dict[str, Any]]:
    """The replies of a real sleep server over stdio to ``lines`` (the opening request first), by id."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rlfactory_tool_servers.sleep", "--log-level", "error", *options, cwd=str(REPO_ROOT),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    replies: dict[Any, dict[str, Any]] = {}
    try:
        for message in [OPENING, *lines]:
            process.stdin.write((json.dumps(message) + "\n").encode())
        await process.stdin.drain()
        while len(replies) < len(lines) + 1:
            reply = json.loads(await asyncio.wait_for(process.stdout.readline(), 30))
            replies[reply["id"]] = reply
    finally:
        process.kill()
        await process.wait()
    return replies


async def test_the_lane_answers_as_the_sdk_does():
    requests = TAKEN + LEFT_TO_THE_SDK
    fast, sdk = await asyncio.gather(answers(requests), answers(requests, "--no-fast-lane"))
    assert fast == sdk
    assert sdk[1]["result"]["content"] == [{"type": "text", "text": "slept 0 ms"}]
    assert sdk["s-2"]["result"]["isError"] is True
    assert [entry["is_error"] for entry in sdk[5]["result"]["structuredContent"]["results"]] == [
        False, True, True, False]
    assert "error" in sdk[22]


class Collected:
    """Where the lane writes, in this process: the replies it wrote."""

    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []

    async def send(self, data: bytes) -> None:
        self.replies.append(json.loads(data))


async def test_the_lane_takes_only_what_it_may_and_a_cancelled_call_gets_no_answer():
    out = Collected()
    lane = FastLane(sleep.build_server([]), out)  # type: ignore[arg-type]
    assert not lane.take(json.dumps(call(1, "sleep", {"ms": 0})))  # the first request opens the era: the SDK's
    assert not lane.take(json.dumps(OPENING))
    assert [lane.take(json.dumps(message)) for message in TAKEN] == [True] * len(TAKEN)
    assert [lane.take(json.dumps(message)) for message in LEFT_TO_THE_SDK] == [False] * len(LEFT_TO_THE_SDK)
    assert not lane.take("not json") and not lane.take('"tools/call"')
    assert lane.take(json.dumps(call(30, "sleep", {"ms": 60_000})))
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 30}}
    assert lane.take(json.dumps(cancel))
    assert not lane.take(json.dumps({**cancel, "params": {"requestId": 31}}))  # not the lane's: the SDK's
    for _ in range(100):
        await asyncio.sleep(0.01)
        if len(out.replies) == len(TAKEN):
            break
    await asyncio.sleep(0.05)
    assert sorted(str(reply["id"]) for reply in out.replies) == sorted(str(m["id"]) for m in TAKEN)
    lane.close()


async def test_a_legacy_connection_stays_on_the_sdk_path():
    lane = FastLane(sleep.build_server([]), Collected())  # type: ignore[arg-type]
    lane.take(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"_meta": ENVELOPE}}))
    assert not lane.take(json.dumps(call(1, "sleep", {"ms": 0})))


@pytest.mark.parametrize("level", ["info", "debug"])
async def test_logged_requests_take_the_sdk_path(level):
    import logging

    logger = logging.getLogger("rlfactory_tool_servers.requests")
    previous = logger.level
    logger.setLevel(level.upper())
    try:
        lane = FastLane(sleep.build_server([]), Collected())  # type: ignore[arg-type]
        lane.take(json.dumps(OPENING))
        assert not lane.take(json.dumps(call(1, "sleep", {"ms": 0})))
    finally:
        logger.setLevel(previous)
