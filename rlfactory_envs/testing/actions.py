"""Hypothesis strategies for the actions of a ``ToolEnv``: the responses a model might write, well-formed or not.

``actions_for(env)`` reads what it needs from the env itself (its chat format, answer tag, tools and action limit),
so the same strategy fits a built-in family and a user's env:

- random text, with control characters, non-ASCII characters and lone surrogates;
- concatenations of markup fragments (tool-call tags, ``<answer_tag>``, ``<think>``, braces, quotes, the format's
  stop strings and turn markers) with random text;
- tool calls written by ``env.chat_format.render_call``, mostly to the env's tools that may be called (arguments
  drawn from each tool's JSON schema, strings often made of the task prompt's words so that tools find something;
  some arguments missing, wrongly typed or unknown) and sometimes to unknown tools, one to three per response. The
  real tools run, so only those ``call_tools`` names are called: by default those whose servers annotate them as
  safe (``safe_to_call``); the other tools' names appear in no action;
- final answers ``<answer_tag>text</answer_tag>``;
- oversized responses, some beyond ``env.action_space.max_length``;
- deeply nested brackets and tags after ``<tool_call>``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any

from hypothesis import strategies as st

from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.mcp.toolbox import ToolSpec
from rlfactory_envs.kernel.tool_call import ToolCall

EDGE_CHARACTERS = "\x00\x07\x1b\r\t\n\x7f\x85\u2028\u200b\ufeff\ufffdé中🙂"
"""Characters that break naive text handling (NUL, escapes, line separators, BOM, astral plane)."""

_MAX_SCHEMA_DEPTH = 3
_MAX_PROMPT_WORDS = 200

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
"""Any JSON value, small: what a wrongly typed argument looks like."""

wild_text: st.SearchStrategy[str] = st.text(
    st.one_of(st.characters(), st.characters(categories=["Cs"]), st.sampled_from(EDGE_CHARACTERS)), max_size=120)
"""Random text over all of Unicode, lone surrogates and control characters included."""

_short_text = st.text(max_size=12)


def safe_to_call(spec: ToolSpec) -> bool:
    """Whether the tool's server says calling it changes nothing outside its own state: ``readOnlyHint``, or
    ``destructiveHint: false`` with ``openWorldHint: false`` (MCP's defaults are the unsafe ones)."""
    hints = spec.annotations
    return hints.get("readOnlyHint") is True or (hints.get("destructiveHint") is False
                                                 and hints.get("openWorldHint") is False)


def callable_specs(env: ToolEnv, call_tools: Collection[str] | str = "safe") -> list[ToolSpec]:
    """The tools of ``env.tool_specs`` that generated actions call: ``"safe"`` (``safe_to_call``), ``"all"``, or
    those named."""
    if call_tools == "all":
        return list(env.tool_specs)
    if isinstance(call_tools, str):
        if call_tools != "safe":
            raise ValueError(f"call_tools must be 'safe', 'all' or a collection of tool names, got {call_tools!r}")
        return [spec for spec in env.tool_specs if safe_to_call(spec)]
    return [spec for spec in env.tool_specs if spec.name in set(call_tools)]


def actions_for(env: ToolEnv, call_tools: Collection[str] | str = "safe") -> st.SearchStrategy[str]:
    """Responses for ``env``, every kind listed in the module docstring, calling only the tools ``call_tools``
    chooses (``callable_specs``). It reads ``env.tool_specs`` as they are now: call it after a ``reset`` so that the
    schemas are the ones a task shows (bound arguments hidden)."""
    specs = callable_specs(env, call_tools)
    fragments = markup_fragments(env, specs)
    calls = tool_calls_for(env, specs)
    tag = env.answer_tag
    several_calls = st.lists(calls, min_size=1, max_size=3).map("\n".join)
    # one_of draws its branches alike: the tool calls get three branches of eight, so that episodes use the tools
    return st.one_of(
        wild_text,
        st.lists(st.sampled_from(fragments) | _short_text, max_size=20).map("".join),
        several_calls,
        several_calls,
        st.tuples(_short_text, calls, _short_text).map("".join),
        st.tuples(_short_text, st.text(max_size=40)).map(lambda pair: f"{pair[0]}<{tag}>{pair[1]}</{tag}>"),
        oversized_text(env.action_space.max_length),
        nested_brackets(env),
    )


def markup_fragments(env: ToolEnv, specs: list[ToolSpec] | None = None) -> list[str]:
    """The pieces tool calls and answers are made of, in ``env``'s format, without duplicates; the tool names are
    those of ``specs`` (default: every tool the model sees)."""
    tag = env.answer_tag
    fragments = ["<tool_call>", "</tool_call>", f"<{tag}>", f"</{tag}>", "<think>", "</think>", "{", "}", "[", "]",
                 '"', "'", '"name"', '"arguments"', ":", ",", "\n"]
    fragments += [json.dumps(spec.name) for spec in (env.tool_specs if specs is None else specs)]
    for stop in env.chat_format.stop_sequences:
        fragments.append(stop)
        if stop.startswith("</") and stop.endswith(">"):
            fragments.append("<" + stop[2:])
    fragments += list(env.chat_format.last_turn_markers)
    return list(dict.fromkeys(fragments))


def tool_calls_for(env: ToolEnv, specs: list[ToolSpec] | None = None) -> st.SearchStrategy[str]:
    """One tool call as ``env.chat_format.render_call`` writes it: three times in four to one of ``specs`` (default:
    ``env.tool_specs``) with arguments from its schema (``arguments_for``, strings from ``prompt_strings(env)``),
    else to a tool the env does not have, with any arguments."""
    render = env.chat_format.render_call
    strings = prompt_strings(env)
    specs = env.tool_specs if specs is None else specs
    known = st.one_of(*(st.tuples(st.just(spec.name), arguments_for(spec.input_schema, strings))
                        for spec in specs)) if specs else st.nothing()
    taken = {spec.name for spec in env.tool_specs}
    unknown = st.tuples((st.just("no_such_tool") | _short_text).filter(lambda name: name not in taken),
                        st.dictionaries(_short_text, json_values, max_size=3))
    # one_of draws its branches alike: three copies of the known tools' branch make unknown tools one call in four
    return st.one_of(known, known, known, unknown).map(lambda pair: render(ToolCall(pair[0], pair[1])))


def prompt_strings(env: ToolEnv) -> st.SearchStrategy[str]:
    """Strings for string arguments: one to four words of the current transcript (the task prompt after a
    reset), or any short text."""
    words = list(dict.fromkeys(re.findall(r"\w+", env.transcript)))[:_MAX_PROMPT_WORDS]
    any_text = st.text(max_size=40)
    if not words:
        return any_text
    return st.lists(st.sampled_from(words), min_size=1, max_size=4).map(" ".join) | any_text


def arguments_for(schema: Mapping[str, Any],
                  strings: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """Argument objects for a tool whose JSON schema is ``schema``: half the time well typed (every required
    argument, some optional ones), else well typed plus unknown keys, or any subset of the declared arguments
    with any values (missing and wrongly typed ones). String values come from ``strings`` (default: any text)."""
    return _object_for(schema, st.text(max_size=40) if strings is None else strings, depth=0)


def value_for(schema: Mapping[str, Any], strings: st.SearchStrategy[str] | None = None,
              depth: int = 0) -> st.SearchStrategy[Any]:
    """A value of the type ``schema`` declares (``enum``, ``type`` as a name or a list, ``anyOf``/``oneOf``,
    arrays and objects; strings from ``strings``); any JSON value where the schema does not say."""
    strings = st.text(max_size=40) if strings is None else strings
    if depth > _MAX_SCHEMA_DEPTH or not isinstance(schema, Mapping):
        return json_values
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return st.one_of(*(value_for(sub, strings, depth + 1) for sub in schema[key]))
    declared = schema.get("type")
    types = declared if isinstance(declared, list) else [declared]
    choices = [_value_of_type(name, schema, strings, depth) for name in types if isinstance(name, str)]
    return st.one_of(*choices) if choices else json_values


def _value_of_type(name: str, schema: Mapping[str, Any], strings: st.SearchStrategy[str],
                   depth: int) -> st.SearchStrategy[Any]:
    if name == "string":
        return strings
    if name == "integer":
        return st.integers(-3, 100) | st.integers()
    if name == "number":
        return st.integers(-3, 100) | st.floats(allow_nan=False)
    if name == "boolean":
        return st.booleans()
    if name == "null":
        return st.none()
    if name == "array":
        return st.lists(value_for(schema.get("items") or {}, strings, depth + 1), max_size=3)
    if name == "object":
        return _object_for(schema, strings, depth + 1)
    return json_values


def _object_for(schema: Mapping[str, Any], strings: st.SearchStrategy[str],
                depth: int) -> st.SearchStrategy[dict[str, Any]]:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = [key for key in schema.get("required") or () if isinstance(key, str)]
    typed = {key: value_for(sub, strings, depth + 1) for key, sub in properties.items()}
    well_typed = st.fixed_dictionaries({key: typed.get(key, json_values) for key in required},
                                       optional={key: value for key, value in typed.items() if key not in required})
    extra_keys = st.dictionaries(_short_text, json_values, min_size=1, max_size=2)
    with_unknown_keys = st.tuples(well_typed, extra_keys).map(lambda pair: {**pair[1], **pair[0]})
    anything = st.fixed_dictionaries({}, optional={key: value | json_values for key, value in typed.items()})
    return st.one_of(well_typed, well_typed, with_unknown_keys, anything)


def oversized_text(max_length: int) -> st.SearchStrategy[str]:
    """A repeated unit, a few thousand characters long or just past ``max_length`` (the env must cut it)."""
    lengths = st.integers(1_000, 5_000) | st.integers(max(max_length - 4, 1), max_length + 256)
    unit = st.text(min_size=1, max_size=6) | st.sampled_from(["x", "<tool_call>", "{", "中"])
    return st.tuples(unit, lengths).map(lambda pair: (pair[0] * (pair[1] // len(pair[0]) + 1))[:pair[1]])


def nested_brackets(env: ToolEnv) -> st.SearchStrategy[str]:
    """``<tool_call>`` followed by up to 3,000 repetitions of an opening bracket, JSON prefix or tag."""
    tag = env.answer_tag
    openers = ["[", "{", "[{", '{"a":', '{"name": "x", "arguments": ', f"<{tag}>", "<tool_call>", "</think>"]
    openers += ["<" + stop[2:] for stop in env.chat_format.stop_sequences if stop.startswith("</")]
    return st.tuples(st.sampled_from(list(dict.fromkeys(openers))), st.integers(1, 3_000)).map(
        lambda pair: "<tool_call>" + pair[0] * pair[1])


def tool_call_text(name: str, **arguments: Any) -> str:
    """A Qwen3/Hermes tool call as a response writes it: ``<tool_call>{"name": ..., "arguments": {...}}`` and the
    closing tag."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def rewards_within(low: float, high: float) -> Any:
    """A ``check_step``: every step's reward lies in ``[low, high]``."""
    def check(env: ToolEnv, action: str, result: Any) -> None:
        assert low <= result.reward <= high, \
            f"the reward {result.reward!r} for {action[:80]!r} is outside [{low}, {high}]"

    return check
