"""The toolbox against an MCP server nobody in this project wrote: the official reference server
``@modelcontextprotocol/server-everything`` from npm, launched by node as a real stdio subprocess.

Install it first with ``bash .ci/mcp_servers.sh``; without node or the package the integration tests skip.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.tool_call import ToolCall, ToolResult
from tests.third_party_servers import EVERYTHING_PACKAGE, EVERYTHING_VERSION, INSTALL_SCRIPT, everything_server_entry

SERVER = "everything"
SUM_TOOL = "get-sum"  # {"a": number, "b": number} -> "The sum of {a} and {b} is {a + b}."
ECHO_TOOL = "echo"  # {"message": string} -> "Echo: {message}"


@pytest.fixture(scope="module")
def everything() -> Iterator[Toolbox]:
    """One toolbox connected to the npm everything server over stdio, shared by this module's tests."""
    with Toolbox({"mcpServers": {SERVER: everything_server_entry()}}) as toolbox:
        yield toolbox


def sum_text(a: int, b: int) -> str:
    """The answer the server's ``get-sum`` gives for ``a + b`` (integers print alike in JavaScript and Python)."""
    return f"The sum of {a} and {b} is {a + b}."


def echo_text(message: str) -> str:
    """The answer the server's ``echo`` gives for ``message``."""
    return f"Echo: {message}"


def assert_answered(result: ToolResult, call: ToolCall, text: str) -> None:
    """``result`` is the server's normal answer ``text`` to ``call``."""
    assert (result.name, result.call_id, result.server) == (call.name, call.call_id, SERVER)
    assert not result.is_error, result.text
    assert result.text == text


def test_install_script_pins_the_tested_version() -> None:
    """``.ci/mcp_servers.sh`` installs exactly the package and version that ``tests/third_party_servers`` expects."""
    script = INSTALL_SCRIPT.read_text(encoding="utf-8")
    assert re.search(rf'^EVERYTHING_PACKAGE="{re.escape(EVERYTHING_PACKAGE)}"$', script, re.MULTILINE)
    assert re.search(rf'^EVERYTHING_VERSION="{re.escape(EVERYTHING_VERSION)}"$', script, re.MULTILINE)


@pytest.mark.integration
def test_the_catalog_lists_the_servers_tools(everything: Toolbox) -> None:
    specs = {spec.name: spec for spec in everything.specs}
    assert len(specs) == len(everything.specs), "tool names must be unique"
    assert {SUM_TOOL, ECHO_TOOL} <= set(specs)
    for spec in specs.values():
        assert spec.server == SERVER
        assert isinstance(spec.description, str) and spec.description
        assert spec.input_schema.get("type") == "object"
        assert spec.openai_schema()["function"]["parameters"] == spec.input_schema
    sum_schema = specs[SUM_TOOL].input_schema
    assert {name: prop["type"] for name, prop in sum_schema["properties"].items()} == {"a": "number", "b": "number"}
    assert sorted(sum_schema["required"]) == ["a", "b"]
    echo_schema = specs[ECHO_TOOL].input_schema
    assert echo_schema["properties"]["message"]["type"] == "string" and echo_schema["required"] == ["message"]


@pytest.mark.integration
@pytest.mark.parametrize(("a", "b"), [(17, 25), (-40, 2), (0, 0), (2**40, 2**40)])
def test_the_server_adds_two_numbers(everything: Toolbox, a: int, b: int) -> None:
    call = ToolCall(SUM_TOOL, {"a": a, "b": b})
    [result] = everything.call_many([call])
    assert_answered(result, call, sum_text(a, b))
    assert result.latency_s >= 0


@pytest.mark.integration
def test_the_server_echoes_a_message(everything: Toolbox) -> None:
    message = "héllo, wörld: {\"json\": [1, 2]} \n second line"
    call = ToolCall(ECHO_TOOL, {"message": message})
    [result] = everything.call_many([call])
    assert_answered(result, call, echo_text(message))


@pytest.mark.integration
def test_bad_arguments_come_back_as_error_results(everything: Toolbox) -> None:
    """The server rejects arguments that break its schema with an error result; nothing raises, and the session
    still answers afterwards."""
    calls = [ToolCall(SUM_TOOL, {"a": "seventeen", "b": 25}, call_id=0),
             ToolCall(SUM_TOOL, {"a": 17}, call_id=1),
             ToolCall(ECHO_TOOL, {}, call_id=2),
             ToolCall("no-such-tool", {}, call_id=3)]
    results = everything.call_many(calls)
    assert [(r.name, r.call_id) for r in results] == [(c.name, c.call_id) for c in calls]
    assert all(r.is_error for r in results), results
    for result, culprit in zip(results, ["a", "b", "message", "no-such-tool"]):
        assert culprit in result.text, result.text
    assert [r.server for r in results] == [SERVER, SERVER, SERVER, None]  # the toolbox itself refuses unknown tools
    good = ToolCall(SUM_TOOL, {"a": 17, "b": 25})
    assert_answered(everything.call_many([good])[0], good, sum_text(17, 25))


@pytest.mark.integration
def test_concurrent_calls_come_back_aligned(everything: Toolbox) -> None:
    """50 calls in one ``call_many`` run concurrently on one stdio session; each result matches its own call."""
    calls, expected = [], []
    for i in range(50):
        if i % 5 == 4:
            message = f"message number {i}"
            calls.append(ToolCall(ECHO_TOOL, {"message": message}, call_id=i))
            expected.append(echo_text(message))
        else:
            a, b = 7 * i - 100, 3 * i * i
            calls.append(ToolCall(SUM_TOOL, {"a": a, "b": b}, call_id=i))
            expected.append(sum_text(a, b))
    results = everything.call_many(calls)
    assert len(results) == len(calls)
    for call, result, text in zip(calls, results, expected):
        assert_answered(result, call, text)
