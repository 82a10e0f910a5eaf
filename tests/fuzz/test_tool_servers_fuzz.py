"""Every bundled tool server's tools, called through a real in-process MCP client with fuzzed arguments.

Arguments are drawn from each tool's own input schema, mixed with hostile values: huge strings, wrong types,
nested objects, integers past 64 bits, NaN and infinities, lone surrogates, missing and unknown keys. The batched
form (``NAME_batch``) of every tool gets lists of such argument objects. Every call must come back as a result
(``is_error`` or not), never a protocol error or an exception, within a generous deadline, and its text must stay
bounded whatever the arguments' size.

Each server is built once per module with the arguments ``tests/tool_servers/test_batch_forms.py`` gives it, and
held open by one client in a blocking portal, so hypothesis drives it from plain (synchronous) examples. Some tools
are fuzzed within bounds of their own contract: ``sleep`` and ``slow_sometimes`` really wait up to ten minutes, so
their valid ``ms`` values are drawn small (out-of-range ones are still drawn), and the test fixture
``fixture_repeat`` builds ``text * times`` before the server caps it, so ``times`` stays small; the fault tools
that end, hang or fill the process on purpose (``exit_process``, ``crash``, ``hang``, ``leak``) are not called.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import anyio
import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.tool_call import ToolCall
from rlfactory_tool_servers.wire import BATCH_OF, SHOW_BATCH_FORMS
from tests.fuzz import FUZZ_EXAMPLES, json_values, wire_char
from tests.tool_servers.test_batch_forms import BUNDLED, build

CALL_DEADLINE_S = 60.0
MAX_RESULT_CHARS = 200_000
"""Far above any honest answer of these servers, far below the megabytes of text the fuzz sends."""
NOT_CALLED = {"exit_process", "hang", "crash", "leak"}
"""Tools that end, block or fill the process by design (the sleep and faulty servers' fault injection)."""
ECHOES = {("faulty", "echo")}
"""Tools whose answer is their argument: bounded by the argument's size, not by ``MAX_RESULT_CHARS``."""
ANDROID_TEMPLATES = ("ContactsAddContact", "ContactsPhoneNumber")

FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

huge_text = st.builds(lambda piece, times: piece * times, st.sampled_from(("x", "é", "💥", "' OR 1=1 --", "{[")),
                      st.sampled_from((1_000, 100_000, 400_000)))
hostile_value = (json_values(wire_char) | huge_text | st.text(wire_char, max_size=50)
                 | st.sampled_from([math.nan, math.inf, -math.inf, 2**63, -2**63 - 1, 10**30, [], {}, "", " ", None]))


class ServerClients:
    """One open MCP client per bundled server (built on first use), in one portal thread; ``call`` is blocking."""

    def __init__(self, portal, stack: ExitStack) -> None:
        self.portal = portal
        self.stack = stack
        self.clients: dict[str, Client] = {}
        self.tools: dict[str, dict[str, Any]] = {}

    def open(self, server: str) -> dict[str, Any]:
        """The tools of ``server``, batched forms included, by name (their input schemas)."""
        if server not in self.clients:
            client = self.stack.enter_context(self.portal.wrap_async_context_manager(Client(build(server))))
            listed = self.portal.call(lambda: client.list_tools(meta={SHOW_BATCH_FORMS: True}))
            self.clients[server] = client
            self.tools[server] = {tool.name: tool for tool in listed.tools if tool.name not in NOT_CALLED
                                  and (tool.meta or {}).get(BATCH_OF) not in NOT_CALLED}
        return self.tools[server]

    def call(self, server: str, tool: str, arguments: Any):
        async def bounded():
            with anyio.fail_after(CALL_DEADLINE_S):
                return await self.clients[server].call_tool(tool, arguments)

        return self.portal.call(bounded)


@pytest.fixture(scope="module")
def servers() -> Iterator[ServerClients]:
    with start_blocking_portal() as portal, ExitStack() as stack:
        yield ServerClients(portal, stack)


PLAUSIBLE = {
    "db_id": ("bookshop", "school", "tramways"), "table": ("books", "authors", "sqlite_master"),
    "sql": ("SELECT * FROM books", "SELECT * FROM students", "SELECT count(*) FROM authors",
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c"),
    "query": ("ship", "river", "mountain"), "app_name": ("Contacts", "Clock", "Settings", "Calendar", "Notes"),
    "direction": ("up", "down", "left", "right"), "goal_status": ("complete", "infeasible"), "text": ("hello",),
    "city": ("Arlow", "Penwick", "Harrowgate"), "origin": ("Arlow", "Marlhurst"), "destination": ("Penwick", "Arlow"),
    "date": ("2022-03-16",), "state": ("Calder", "Lunmark"), "mode": ("self-driving", "taxi"),
    "description": ("Flights from Arlow to Penwick",), "index": tuple(range(12)), "seed": (0, 1, 2),
}
"""Values a model would send, so that the fuzz reaches the tools' work and not only their argument checks."""


def value_for(schema: dict[str, Any], defs: dict[str, Any], server: str, name: str) -> st.SearchStrategy:
    """Values that fit ``schema`` (the tool's own property schema), plausible ones where ``PLAUSIBLE`` has some."""
    if name in PLAUSIBLE:
        return st.sampled_from(PLAUSIBLE[name])
    return fitting(schema, defs, server, name)


def fitting(schema: dict[str, Any], defs: dict[str, Any], server: str, name: str) -> st.SearchStrategy:
    """Values of the type ``schema`` names, of any content, but within the bounds of the module docstring."""
    if (server, name) in (("sleep", "ms"), ("faulty", "slow_ms")):
        return st.integers(0, 50) | st.integers(max_value=-1) | st.integers(min_value=600_001)
    if server == "qwen_tools" and name == "times":
        return st.integers(-3, 20)
    if server == "android" and name == "template":
        return st.sampled_from(ANDROID_TEMPLATES)
    if "$ref" in schema:
        return value_for(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, server, name)
    if "anyOf" in schema:
        return st.one_of([value_for(option, defs, server, name) for option in schema["anyOf"]])
    kind = schema.get("type")
    if kind == "integer":
        return st.integers(-5, 100) | st.integers()
    if kind == "number":
        return st.floats()
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "object":
        return arguments_for(schema, defs, server)
    if kind == "array":
        return st.lists(value_for(schema.get("items", {}), defs, server, name), max_size=4)
    return st.text(wire_char, max_size=30) | huge_text


def arguments_for(schema: dict[str, Any], defs: dict[str, Any], server: str) -> st.SearchStrategy:
    """An argument object: every property of ``schema`` fitting, or each fitting, hostile or missing and unknown
    keys beside them."""
    properties = schema.get("properties", {})
    required = set(schema.get("required", ()))
    fitting_fields = {name: value_for(prop, defs, server, name) for name, prop in properties.items()}
    optional = {name: field for name, field in fitting_fields.items() if name not in required}
    fits = st.fixed_dictionaries({name: fitting_fields[name] for name in required}, optional=optional)
    fields = {name: fitting(prop, defs, server, name) | hostile_value for name, prop in properties.items()}
    known = st.fixed_dictionaries({}, optional=fields) if fields else st.just({})
    extra = st.dictionaries(st.text(wire_char, max_size=12), hostile_value, max_size=2)
    return fits | st.builds(lambda a, b: {**b, **a}, known, extra)


def check_result(result, allowance: int = 0) -> None:
    assert isinstance(result.is_error, bool)
    texts = [item.text for item in result.content if getattr(item, "text", None) is not None]
    structured = result.structured_content or {}
    entries = structured.get("results") or []
    texts += [entry["text"] for entry in (entries.values() if isinstance(entries, dict) else entries) if entry]
    size = sum(len(text) for text in texts)
    assert size <= MAX_RESULT_CHARS + allowance, f"{size:,} characters of result: {texts[0][:300]!r}"


def echo_allowance(server: str, tool: str, arguments: Any) -> int:
    plain = tool.removesuffix("_batch")
    return len(json.dumps(arguments, ensure_ascii=False)) * 2 if (server, plain) in ECHOES else 0


def prepare(servers: ServerClients, server: str, data) -> None:
    """The android phone of the default episode (the one a request without ``_meta`` acts on), fresh for each example
    (an earlier one may have ended it)."""
    if server == "android":
        template = data.draw(st.sampled_from(ANDROID_TEMPLATES))
        opened = servers.call(server, "device_open", {"template": template})
        assert not opened.is_error, opened.content[0].text


@pytest.mark.parametrize("server", sorted(BUNDLED))
@FUZZ
@given(data=st.data())
def test_a_tool_answers_any_arguments_with_a_bounded_result(servers, server, data):
    tools = servers.open(server)
    name = data.draw(st.sampled_from(sorted(tools)), label="tool")
    schema = tools[name].input_schema
    prepare(servers, server, data)
    if BATCH_OF in (tools[name].meta or {}):
        element = arguments_for(schema["properties"]["calls"]["items"], schema.get("$defs", {}), server)
        arguments = {"calls": data.draw(st.lists(element | hostile_value, max_size=5), label="calls")}
    else:
        arguments = data.draw(arguments_for(schema, schema.get("$defs", {}), server), label="arguments")
    check_result(servers.call(server, name, arguments), echo_allowance(server, name, arguments))


@pytest.mark.parametrize("server", sorted(BUNDLED))
@FUZZ
@given(data=st.data(), arguments=hostile_value)
def test_a_tool_answers_arguments_that_are_not_an_object(servers, server, data, arguments):
    tools = servers.open(server)
    name = data.draw(st.sampled_from(sorted(tools) + ["no_such_tool", "x" * 10_000]), label="tool")
    prepare(servers, server, data)
    arguments = arguments if isinstance(arguments, dict) else {"calls": arguments}
    check_result(servers.call(server, name, arguments), echo_allowance(server, name, arguments))


@pytest.mark.parametrize("server", sorted(BUNDLED))
def test_a_batch_over_the_limit_is_refused_with_a_message(servers, server):
    tools = servers.open(server)
    batched = sorted(name for name, tool in tools.items() if BATCH_OF in (tool.meta or {}))
    if not batched:
        pytest.skip(f"{server} has no batched form")
    result = servers.call(server, batched[0], {"calls": [{}] * 20_000})
    check_result(result)
    assert result.is_error or result.structured_content["results"]


def surrogate_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Every property a string holding lone surrogates (what ``json.loads`` makes of a model's ``"\\ud800"``),
    plus an unknown key that is one."""
    return {**{name: "\ud800 \udfff x" for name in schema.get("properties", {})}, "\udc80": "\ud800"}


@pytest.mark.parametrize("server", sorted(BUNDLED))
def test_lone_surrogates_from_a_parsed_response_reach_every_tool_as_a_result(server):
    """The MCP client cannot encode a lone surrogate, but a parser hands the toolbox what ``json.loads`` decoded:
    the toolbox answers each such call with a result, and the calls beside it still run."""
    build(server)  # skips where the server's extra is not installed
    entry = {"module": f"rlfactory_tool_servers.{server}", "args": BUNDLED[server]}
    with Toolbox({"mcpServers": {server: entry}}) as toolbox:
        specs = [spec for spec in toolbox.specs if spec.name not in NOT_CALLED]
        calls = [ToolCall(spec.name, surrogate_arguments(spec.input_schema), call_id=i)
                 for i, spec in enumerate(specs)]
        results = toolbox.call_many(calls)
    assert [result.call_id for result in results] == [call.call_id for call in calls]
    assert all(isinstance(result.text, str) and len(result.text) <= MAX_RESULT_CHARS for result in results)


MAX_ERROR_CHARS = 2_000
"""An error sentence about a call's arguments or name quotes a preview of them, never all of them."""


@pytest.mark.parametrize("element", [{"query": "ship", "z" * 100_000: 1},
                                     {"query": "ship", **{f"k{i}": 1 for i in range(5_000)}}], ids=["long", "many"])
def test_a_batched_call_with_hostile_keys_gets_a_short_error(servers, element):
    servers.open("search")
    result = servers.call("search", "search_batch", {"calls": [element]})
    entries = result.structured_content["results"]
    assert entries[0]["is_error"] and len(entries[0]["text"]) <= MAX_ERROR_CHARS


def test_an_unknown_tool_with_a_huge_name_gets_a_short_error():
    entry = {"module": "rlfactory_tool_servers.search", "args": BUNDLED["search"]}
    with Toolbox({"mcpServers": {"search": entry}}) as toolbox:
        result = toolbox.call_many([ToolCall("n" * 100_000, {}, call_id=0)])[0]
    assert result.is_error and len(result.text) <= MAX_ERROR_CHARS
