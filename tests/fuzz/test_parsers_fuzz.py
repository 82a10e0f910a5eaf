"""Every parser of model or judge output, fed hostile text: it returns its documented shape and never raises.

- The action parsers (Hermes, Search-R1, each chat format's own, AndroidWorld's JSON actions around each): a
  ``ParsedAction`` with at most the allowed calls, arguments that are JSON objects, and error sentences that stay
  short (a sentence quotes a preview of the input, never all of it) and few (one per call read, plus a cap note).
- The travel plan parser: a list of at most ``MAX_PLAN_DAYS`` day dicts, or a reason. Its runs of brackets stay
  short: ``json_repair`` mends malformed text at ~0.1 ms a character, seconds for a 65 KB plan (reported, not timed).
- The judge's verdict parser: a score in [0, 1], or ``None`` and a short problem.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rlfactory_envs.android.parser import MAX_JSON_ACTIONS, AndroidActionParser
from rlfactory_envs.kernel.chat_format import CHAT_FORMATS, make_chat_format
from rlfactory_envs.kernel.parsers import HermesToolCallParser, SearchR1Parser
from rlfactory_envs.kernel.tool_call import ParsedAction
from rlfactory_reward_models.judge.verdict import parse_verdict
from rlfactory_reward_models.travel.plan_text import MAX_PLAN_DAYS, parse_plan
from tests.fuzz import FUZZ_EXAMPLES, any_char, hostile_text, json_like, long_runs, nested_json, token_text

MAX_CALLS = 4
MAX_SENTENCE_CHARS = 1_000
"""An error sentence quotes at most a preview of the input: far shorter than this."""

FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ACTION_PARSERS = {
    "hermes": HermesToolCallParser(max_tool_calls=MAX_CALLS),
    "search_r1": SearchR1Parser(),
    **{f"format:{name}": make_chat_format(name).parser(max_tool_calls=MAX_CALLS) for name in sorted(CHAT_FORMATS)},
    **{f"android:{name}": AndroidActionParser(make_chat_format(name).parser(max_tool_calls=MAX_CALLS), MAX_CALLS)
       for name in sorted(CHAT_FORMATS)},
}

DEEP_ACTION = '{"action_type": "click", "index": ' + "[" * 1500 + "]" * 1500 + "}"
"""AndroidWorld action JSON, under the parser's 4,096-character object limit, nested deeper than ``json`` recurses."""


def check_parsed(action: ParsedAction) -> None:
    assert isinstance(action, ParsedAction)
    assert len(action.tool_calls) <= MAX_CALLS
    for call in action.tool_calls:
        assert isinstance(call.name, str) and isinstance(call.arguments, dict)
    assert action.answer is None or isinstance(action.answer, str)
    assert len(action.errors) <= MAX_CALLS + MAX_JSON_ACTIONS + 2
    for error in action.errors:
        assert isinstance(error, str) and len(error) <= MAX_SENTENCE_CHARS, error[:200]


@pytest.mark.parametrize("parser", sorted(ACTION_PARSERS))
@FUZZ
@given(text=hostile_text)
def test_an_action_parser_reads_any_text(parser, text):
    check_parsed(ACTION_PARSERS[parser].parse(text))


@pytest.mark.parametrize("parser", sorted(ACTION_PARSERS))
@FUZZ
@given(name=st.text(max_size=30), arguments=json_like, wrap=st.sampled_from(("tool_call", "android", "search")))
def test_an_action_parser_reads_any_json_call(parser, name, arguments, wrap):
    if wrap == "tool_call":
        text = "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"
    elif wrap == "android":
        text = "Reason: r\nAction: " + json.dumps({"action_type": name, "index": arguments})
    else:
        text = f"<search>{json.dumps(arguments)}</search>"
    check_parsed(ACTION_PARSERS[parser].parse(text))


@pytest.mark.parametrize("parser", sorted(name for name in ACTION_PARSERS if not name.startswith("android")))
def test_a_call_nested_past_the_recursion_limit_is_an_error_not_a_crash(parser):
    text = "<tool_call>" + json.dumps({"name": "t", "arguments": {"a": 1}})[:-2] + "[" * 5000 + "</tool_call>"
    check_parsed(ACTION_PARSERS[parser].parse(text))
    check_parsed(ACTION_PARSERS[parser].parse("<tool_call>" + "[" * 50_000 + "]" * 50_000 + "</tool_call>"))


@pytest.mark.parametrize("chat_format", sorted(CHAT_FORMATS))
def test_android_json_actions_nested_past_the_recursion_limit_are_an_error_not_a_crash(chat_format):
    check_parsed(ACTION_PARSERS[f"android:{chat_format}"].parse(f"Reason: r\nAction: {DEEP_ACTION}"))


@pytest.mark.parametrize("parser", ["hermes", "format:qwen3"])
def test_the_error_for_a_huge_tool_name_is_short(parser):
    text = "<tool_call>" + json.dumps({"name": "n" * 100_000, "arguments": [1]}) + "</tool_call>"
    check_parsed(ACTION_PARSERS[parser].parse(text))


def check_plan(days, why) -> None:
    if days is None:
        assert isinstance(why, str) and len(why) <= MAX_SENTENCE_CHARS
    else:
        assert why is None and 0 < len(days) <= MAX_PLAN_DAYS and all(isinstance(day, dict) for day in days)


@FUZZ
@given(text=st.text(any_char, max_size=200) | token_text | long_runs(times=(100, 1_000, 2_000)) | st.none())
@example(text="[" * 60_000)
@example(text="(" * 60_000)
@example(text="[{" * 2_000)
@example(text=nested_json(5_000))
@example(text="[" + "{}," * 20_000 + "{}]")
def test_the_plan_parser_reads_any_text(text):
    check_plan(*parse_plan(text))


@pytest.mark.parametrize("text", ["1" + "0" * 5_000, '[{"days": ' + "9" * 5_000 + "}]"])
def test_a_plan_with_a_huge_integer_is_refused_not_raised(text):
    check_plan(*parse_plan(text))


@FUZZ
@given(plan=json_like, wrapped=st.booleans(), fenced=st.booleans())
def test_the_plan_parser_reads_any_json_value(plan, wrapped, fenced):
    text = json.dumps({"plan": plan} if wrapped else plan)
    check_plan(*parse_plan(f"```json\n{text}\n```" if fenced else text))


def check_verdict(verdict) -> None:
    if verdict.score is None:
        assert isinstance(verdict.problem, str) and len(verdict.problem) <= MAX_SENTENCE_CHARS, verdict.problem[:200]
    else:
        assert math.isfinite(verdict.score) and 0.0 <= verdict.score <= 1.0


@FUZZ
@given(reply=hostile_text | st.none(),
       score_range=st.sampled_from(((0.0, 10.0), (0.0, 1.0), (1.0, 5.0), (-1.0, 1.0))))
@example(reply="<score>" + "9" * 5_000 + "</score>", score_range=(0.0, 10.0))
@example(reply="<score>nan</score>", score_range=(0.0, 10.0))
@example(reply="yes " * 50_000, score_range=(0.0, 10.0))
def test_the_verdict_parser_reads_any_reply(reply, score_range):
    check_verdict(parse_verdict(reply, score_range))


def test_a_huge_denominator_is_quoted_short():
    check_verdict(parse_verdict("7/" + "1" * 100_000))
