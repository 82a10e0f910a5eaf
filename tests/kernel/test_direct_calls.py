"""The direct lane to an in-process server answers a ``tools/call`` exactly as the MCP SDK's in-process request path
does: the same ``CallToolResult`` (content, structured content, ``isError``) or the same ``MCPError``, over
success, tool errors, invalid arguments, unknown tools, structured output, every kind of return value, sync and
async functions and the batched forms; and it takes only the calls it may."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import pydantic
from mcp import MCPError
from mcp.server.mcpserver import MCPServer

from rlfactory_envs.kernel.mcp.config import InProcessServerEntry
from rlfactory_envs.kernel.mcp.session import McpSession
from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.tool_call import ToolCall
from rlfactory_tool_servers import functions, wire
from rlfactory_tool_servers.request_log import logger as request_log
from rlfactory_tool_servers.toolset import Episode

EPISODES = "rlfactory/episodes"


class Point(pydantic.BaseModel):
    x: int
    y: int


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def nothing() -> None:
    """Return nothing."""


def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def as_dict(key: str, value: float = 1.5) -> dict[str, Any]:
    """A dict."""
    return {key: value, "nested": [1, None, "x"]}


def as_list(n: int) -> list[int]:
    """A list."""
    return list(range(n))


def point(x: int, y: int) -> Point:
    """A pydantic model."""
    return Point(x=x, y=y)


def divide(a: int, b: int) -> float:
    """Raises on zero."""
    return a / b


async def add_async(a: int, b: int) -> int:
    """Add, awaited."""
    await asyncio.sleep(0)
    return a + b


async def fail_async(reason: str) -> str:
    """Raise, awaited."""
    raise RuntimeError(reason)


def whose(episode: Episode = "none") -> str:
    """The episode of the call."""
    return f"episode {episode}"


def measured(text: str) -> Point:
    """Structured output with a schema: the lane leaves it to the SDK."""
    return Point(x=len(text), y=0)


FUNCTIONS = [add, nothing, shout, as_dict, as_list, point, divide, add_async, fail_async, whose]


def build_server(args: Sequence[str]) -> MCPServer:
    """The in-process server under test: the functions server of ``FUNCTIONS``, and a structured-output tool."""
    server = functions.build_server([functions.local_ref(fn) for fn in FUNCTIONS])
    server.add_tool(measured, structured_output=True)
    return server


ENTRY = InProcessServerEntry(module=__name__)
CALLS: list[tuple[str, Any, dict[str, Any] | None]] = [
    ("add", {"a": 2, "b": 3}, None),
    ("add", {"a": "two", "b": 3}, None),  # invalid arguments
    ("add", {"a": 1}, None),  # a missing one
    ("add", {"a": 1, "b": 2, "c": 3}, None),  # an extra one
    ("nothing", {}, None),
    ("shout", {"text": "héllo"}, None),
    ("as_dict", {"key": "k"}, None),
    ("as_list", {"n": 3}, None),
    ("point", {"x": 1, "y": 2}, None),
    ("divide", {"a": 1, "b": 0}, None),  # the function raises
    ("add_async", {"a": 4, "b": 5}, None),
    ("fail_async", {"reason": "no luck"}, None),
    ("whose", {}, {wire.EPISODE: "ep-7"}),
    ("whose", {}, None),
    ("measured", {"text": "abc"}, None),  # structured output: the SDK's way
    ("no_such_tool", {}, None),
    ("add_batch", {"calls": [{"a": 1, "b": 2}, {"a": "x"}, 7, {"a": 0, "b": 0, "z": 1}], "deadline_s": 5}, None),
    ("divide_batch", {"calls": [{"a": 1, "b": 0}, {"a": 4, "b": 2}]}, None),
    ("add_async_batch", {"calls": [{"a": 1, "b": 1}, {"b": 2}]}, None),
    ("point_batch", {"calls": [{"x": 1, "y": 2}]}, None),
    ("whose_batch", {"calls": [{}, {}]}, {EPISODES: ["a", None]}),
    ("whose_batch", {"calls": [{}]}, {EPISODES: ["a", "b"]}),  # misaligned episodes: the batch's error
    ("add_batch", {"calls": "not a list"}, None),
    ("add_batch", {"calls": [], "collect": "no-such-ticket"}, None),
]


def shown(outcome: Any) -> Any:
    """A result as the env reads it (its ``_meta``, a server stamp, left out), or the error raised."""
    if isinstance(outcome, MCPError):
        return ("MCPError", outcome.code, outcome.message)
    if isinstance(outcome, BaseException):
        return ("raised", type(outcome).__name__, str(outcome))
    return outcome.model_dump(by_alias=True, mode="json", exclude={"meta"})


async def outcomes(direct: bool) -> tuple[list[Any], list[bool]]:
    """Every call of ``CALLS`` through one session to the in-process server, and which went the direct way."""
    session = McpSession("fns", ENTRY, direct=direct)
    await session.open()
    try:
        await session.list_tools(meta={wire.SHOW_BATCH_FORMS: True})
        taken = [session._direct is not None and session._direct.takes(name) for name, _, _ in CALLS]
        results = await asyncio.gather(*(session.call_tool(name, arguments, meta) for name, arguments, meta in CALLS),
                                       return_exceptions=True)
        return [shown(result) for result in results], taken
    finally:
        await session.close()


async def test_the_direct_lane_answers_as_the_sdk_does():
    (direct, taken), (sdk, none_taken) = await outcomes(True), await outcomes(False)
    assert not any(none_taken)
    for call, mine, theirs in zip(CALLS, direct, sdk):
        assert mine == theirs, call
    by_call = dict(zip((f"{name}{i}" for i, (name, _, _) in enumerate(CALLS)), sdk))
    assert by_call["add0"]["content"][0]["text"] == "5" and by_call["add0"]["isError"] is False
    assert by_call["add1"]["isError"] is True and "validation error" in by_call["add1"]["content"][0]["text"]
    assert by_call["divide9"]["content"][0]["text"] == ("Error executing tool divide: ZeroDivisionError: "
                                                         "division by zero")
    assert by_call["whose12"]["content"][0]["text"] == "episode ep-7"
    assert by_call["measured14"]["structuredContent"] == {"x": 3, "y": 0}
    assert by_call["no_such_tool15"]["isError"] is True
    assert [e["is_error"] for e in by_call["add_batch16"]["structuredContent"]["results"]] == [False, True, True, True]
    assert [e["text"] for e in by_call["whose_batch20"]["structuredContent"]["results"]] == ["episode a",
                                                                                             "episode none"]


async def test_the_lane_takes_only_what_it_may():
    _, taken = await outcomes(True)
    left = {name for (name, _, _), went in zip(CALLS, taken) if not went}
    assert left == {"measured", "no_such_tool"}


async def test_a_plain_mcp_server_without_our_middleware_goes_the_sdks_way():
    server = build_server([])
    server.middleware.append(lambda ctx, call_next: call_next(ctx))
    session = McpSession("fns", ENTRY, server=server)
    await session.open()
    try:
        assert session._direct is not None and not session._direct.takes("add")
        assert (await session.call_tool("add", {"a": 1, "b": 2})).content[0].text == "3"  # type: ignore[union-attr]
    finally:
        await session.close()


def test_a_deadline_cuts_a_direct_call_and_the_server_stays_usable():
    """Unmerged calls go the direct way one by one; the deadline, counters and later calls work as on the SDK's."""
    entry = {"module": "rlfactory_tool_servers.sleep", "timeout_s": 0.3, "batching": False}
    with Toolbox({"mcpServers": {"sleep": entry}}) as toolbox:
        session = toolbox._clients["sleep"]._sessions[0]
        assert session is not None and session._direct is not None and session._direct.takes("sleep")
        slow, bad, fast = toolbox.call_many([ToolCall("sleep", {"ms": 60_000}), ToolCall("sleep", {"ms": -1}),
                                             ToolCall("sleep", {"ms": 1})])
        assert slow.is_error and slow.failure == "timeout" and "deadline" in slow.text
        assert bad.is_error and "between 0 and" in bad.text and bad.failure is None
        assert (fast.is_error, fast.text) == (False, "slept 1 ms")
        assert toolbox.stats()["servers"]["sleep"]["tools"]["sleep"]["timeouts"] == 1


async def test_logged_requests_go_the_sdks_way():
    """At ``INFO`` the request log writes a line per request, which only the SDK's path does."""
    session = McpSession("fns", ENTRY)
    await session.open()
    try:
        assert session._direct is not None and session._direct.takes("add")
        request_log.setLevel(logging.INFO)
        assert not session._direct.takes("add")
    finally:
        request_log.setLevel(logging.NOTSET)
        await session.close()
