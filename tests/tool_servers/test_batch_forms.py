"""The batched forms (``NAME_batch``) of every bundled server, as an outside MCP client and as our toolbox see them:
hidden from a plain ``tools/list`` but callable by name, listed when the request's ``_meta`` asks, with a schema
whose ``calls`` elements are the tool's own arguments, answering ``wire.BatchReply`` as structured content, and still
merged into one request by the toolbox."""

from __future__ import annotations

import importlib
import logging
import sys

import pydantic
import pytest
from mcp import Client

from rlfactory_envs.kernel.mcp import server_client
from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.tool_call import ToolCall
from rlfactory_envs.registry import FAMILIES
from rlfactory_tool_servers import wire
from rlfactory_tool_servers.batch_form import MAX_BATCH_CALLS, hide_batch_forms
from rlfactory_tool_servers.wire import BATCH_OF, SHOW_BATCH_FORMS
from tests.conftest import REPO_ROOT, count_requests

QWEN_REPEAT = "tests.tool_servers.qwen_tools_fixtures:RepeatTool"


def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


class Point(pydantic.BaseModel):
    x: int
    y: int


def norm1(point: Point, scale: int = 1) -> int:
    """The L1 norm of ``point``, times ``scale``."""
    return (abs(point.x) + abs(point.y)) * scale


def sample_args(server: str) -> list[str]:
    """The options ``rlf serve SERVER`` would add: the family's embedded sample."""
    return [part for family in FAMILIES for option, value in family.serve_defaults.get(server, {}).items()
            for part in (option, value)]


BUNDLED = {
    "android": [],
    "faulty": [],
    "functions": [f"{__name__}:add", f"{__name__}:norm1"],
    "qwen_tools": [QWEN_REPEAT],
    "search": sample_args("search"),
    "sleep": [],
    "sql": sample_args("sql"),
    "travel": sample_args("travel"),
}


def build(server: str):
    if server == "qwen_tools":
        pytest.importorskip("qwen_agent", reason="qwen-agent is not installed (pip install -e '.[qwen-agent]')")
    return importlib.import_module(f"rlfactory_tool_servers.{server}").build_server(BUNDLED[server])


def test_every_bundled_server_is_covered():
    from rlfactory_envs.kernel.families import discover_servers

    assert set(discover_servers("rlfactory_tool_servers")) == set(BUNDLED)


def test_the_kernel_and_the_servers_share_one_wire_module():
    """The keys and reply shapes are written once, in ``wire``: neither side spells a key of its own."""
    assert server_client.wire is wire
    for module in ("rlfactory_envs/kernel/mcp/server_client.py", "rlfactory_envs/kernel/mcp/toolbox.py",
                   "tool_servers/rlfactory_tool_servers/batch_form.py", "tool_servers/rlfactory_tool_servers/toolset.py",
                   "tool_servers/rlfactory_tool_servers/tool_signature.py"):
        assert '"rlfactory/' not in (REPO_ROOT / module).read_text(encoding="utf-8"), module


@pytest.mark.parametrize("server", sorted(BUNDLED))
async def test_an_outside_client_sees_no_batched_form_and_ours_sees_each_with_its_schema(server):
    async with Client(build(server)) as client:
        shown = {tool.name: tool for tool in (await client.list_tools()).tools}
        every = {tool.name: tool for tool in (await client.list_tools(meta={SHOW_BATCH_FORMS: True})).tools}
    assert shown and not [name for name in shown if name.endswith("_batch")]
    assert not [name for name, tool in shown.items() if BATCH_OF in (tool.meta or {})]
    batched = {name: tool for name, tool in every.items() if BATCH_OF in (tool.meta or {})}
    assert set(every) == set(shown) | set(batched)
    for name, tool in batched.items():
        plain = shown[tool.meta[BATCH_OF]]
        assert name == f"{plain.name}_batch"
        calls = tool.input_schema["properties"]["calls"]
        assert calls["type"] == "array" and calls["maxItems"] == MAX_BATCH_CALLS
        items = calls["items"]  # the tool's own arguments, unknown keys refused
        assert items["properties"] == plain.input_schema["properties"] and items["additionalProperties"] is False
        assert items.get("required", []) == plain.input_schema.get("required", [])
        if "$defs" in plain.input_schema:  # the references of the tool's schema resolve from the top
            assert tool.input_schema["$defs"] == plain.input_schema["$defs"]
    expected_batched = {"qwen_tools": 0, "sleep": 1}.get(server, len(shown))
    assert len(batched) == expected_batched


async def test_a_hidden_batched_form_answers_by_name_and_checks_each_element_alone():
    """The SDK validates a call with the function's model, not the listed schema: elements the schema would refuse
    are each reported alone, and the others run."""
    async with Client(build("functions")) as client:
        result = await client.call_tool("add_batch", {"calls": [{"a": 1, "b": 2}, {"a": "x"}, {"c": 1}, 5, {"a": 4}]})
        points = await client.call_tool("norm1_batch", {"calls": [{"point": {"x": -2, "y": 3}, "scale": 2},
                                                                  {"point": {"x": 1}}]})
    assert not result.is_error and result.content == []
    entries = result.structured_content["results"]
    assert [e["is_error"] for e in entries] == [False, True, True, True, False]
    assert entries[0]["text"] == "3" and entries[4]["text"] == "5"
    assert "a:" in entries[1]["text"] and "c:" in entries[2]["text"] and "JSON object" in entries[3]["text"]
    assert [e["is_error"] for e in points.structured_content["results"]] == [False, True]
    assert points.structured_content["results"][0]["text"] == "10"


def test_the_listing_middleware_is_installed_once_per_server():
    server = build("travel")
    assert server.middleware.count(hide_batch_forms) == 1


@pytest.mark.parametrize("transport", ["in-process", "stdio"])
def test_the_toolbox_still_merges_calls_into_one_batched_request(transport, monkeypatch):
    args = sample_args("search")
    entry = ({"module": "rlfactory_tool_servers.search", "args": args} if transport == "in-process" else
             {"command": sys.executable, "args": ["-m", "rlfactory_tool_servers.search", *args], "cwd": str(REPO_ROOT)})
    seen = count_requests(monkeypatch)
    with Toolbox({"mcpServers": {"search": entry}}) as toolbox:
        assert [spec.name for spec in toolbox.specs] == ["search"]
        results = toolbox.call_many([ToolCall("search", {"query": query, "topk": 1}, call_id=i)
                                     for i, query in enumerate(["ship", "river", "", "mountain"])])
    assert seen == ["search_batch"]
    assert [r.is_error for r in results] == [False, False, True, False]
    assert all(r.text.startswith("Doc 1(Title: ") for r in results if not r.is_error)


def test_every_pooled_session_knows_the_batched_forms(caplog):
    """The SDK's client checks a result against the tool as its own session listed it, and lists again, on every
    call, for a tool it has not seen (with a warning): each pooled session lists the batched forms when it opens."""
    entry = {"module": "rlfactory_tool_servers.sleep", "sessions": 3}
    with caplog.at_level(logging.WARNING, logger="mcp.client.session"), \
            Toolbox({"mcpServers": {"sleep": entry}}) as toolbox:
        for _ in range(6):  # requests go to the sessions in turn
            results = toolbox.call_many([ToolCall("sleep", {"ms": 0}, call_id=i) for i in range(3)])
            assert [r.text for r in results] == ["slept 0 ms"] * 3
    assert "not listed" not in caplog.text


async def test_a_batch_answers_its_finished_elements_early_and_the_rest_are_collected():
    """With reply_after_s, fast elements come back at once and slow ones, collected, as they finish; an element
    past the deadline is reported abandoned; a ticket is forgotten once collected whole."""
    async with Client(build("sleep")) as client:
        async def batch(**arguments):
            result = await client.call_tool("sleep_batch", arguments)
            assert not result.is_error, result.content[0].text
            return result.structured_content

        first = await batch(calls=[{"ms": 0}, {"ms": 300}, {"ms": 5_000}, {"ms": -1}], deadline_s=1.0,
                            reply_after_s=0.05)
        assert first["results"][0] == {"text": "slept 0 ms", "is_error": False, "failure": None}
        assert first["results"][3]["is_error"] and first["results"][3]["failure"] is None
        assert first["results"][2] is None
        ticket, collected, replies = first["ticket"], {}, 0
        while ticket is not None:
            reply = await batch(calls=[], collect=ticket, reply_after_s=0.05)
            assert reply["ticket"] in (ticket, None)
            collected.update(reply["results"])
            ticket, replies = reply["ticket"], replies + 1
        if first["results"][1] is None:
            assert collected.pop("1") == {"text": "slept 300 ms", "is_error": False, "failure": None}
        assert list(collected) == ["2"] and "no answer within 1 s (deadline)" in collected["2"]["text"]
        assert collected["2"]["failure"] == wire.DEADLINE  # typed: the client reads it, not the words
        ticket = first["ticket"]
        gone = await client.call_tool("sleep_batch", {"calls": [], "collect": ticket})
        assert gone.is_error and "no batch" in gone.content[0].text
        whole = await batch(calls=[{"ms": 10}, {"ms": 20}], deadline_s=1.0, reply_after_s=0.5)
        assert [e["text"] for e in whole["results"]] == ["slept 10 ms", "slept 20 ms"] and whole["ticket"] is None
        no_deadline = await batch(calls=[{"ms": 0}, {"ms": 200}], reply_after_s=0.01)
        assert [e["text"] for e in no_deadline["results"]] == ["slept 0 ms", "slept 200 ms"]  # nothing bounds a
        assert no_deadline["ticket"] is None                                                # straggler


async def test_a_toolset_subclass_publishes_its_bases_tools_and_its_own_overrides():
    from rlfactory_tool_servers.toolset import Toolset, publish_toolsets, tool

    class Base(Toolset):
        @tool
        def echo(self, text: str) -> str:
            """Say it back."""
            return text

        @tool
        def shout(self, text: str) -> str:
            """Say it loud."""
            return text.upper()

    class Child(Base):
        @tool
        def echo(self, text: str) -> str:
            """Say it back twice."""
            return text * 2

        def shout(self, text: str) -> str:  # no longer a tool
            return text

        @tool
        def count(self, text: str) -> int:
            """Its length."""
            return len(text)

    assert [name for name, *_ in Child().tool_methods()] == ["echo", "count"]
    async with Client(publish_toolsets("child", [Child()])) as client:
        echoed = await client.call_tool("echo", {"text": "ab"})
    assert echoed.content[0].text == "abab"
