"""Fuzz tests: every parser and every bundled tool server's argument handling, fed hostile input by hypothesis.

The property throughout: no uncaught exception, and what comes back (a parse, an error sentence, a tool result) stays
bounded whatever the input's size. The strategies here are shared by the test modules of this folder: text made of
the tokens the parsers look for, of any code point (lone surrogates included), and of runs long or deep enough to
reach the size and nesting caps.
"""

from __future__ import annotations

from hypothesis import strategies as st

FUZZ_EXAMPLES = 60
"""Examples per fuzzed property: the whole folder stays near a minute on two cores."""

TOKENS = ("<tool_call>", "</tool_call>", "<answer>", "</answer>", "<search>", "</search>", "<think>", "</think>",
          "<score>", "</score>", "{", "}", "[", "]", "(", ")", '"', "'", ":", ",", "\\", "\n", " ", "```json", "```",
          '"name"', '"arguments"', '"parameters"', '"action_type"', '"click"', '"status"', '"answer"', '"text"',
          '"goal_status"', '"complete"', '"index"', '"plan"', '"days"', "null", "true", "NaN", "Infinity", "-1",
          "1e999", "7", "7/10", "10", "out of", "yes", "no", "not", "correct", "Verdict:", "\x00", "\ud800", "\udfff",
          "\u202e", "\ufeff", "💥")

any_char = st.characters(codec="utf-8") | st.integers(0xD800, 0xDFFF).map(chr)
"""Any code point, lone surrogates included."""

token_text = st.lists(st.sampled_from(TOKENS) | st.text(any_char, max_size=8), max_size=60).map("".join)
"""Text made mostly of the tokens the parsers look for, in any order."""


@st.composite
def long_runs(draw, times=(100, 1_000, 5_000, 20_000)) -> str:
    """A piece repeated up to thousands of ``times``, between two short texts: huge inputs and deep nesting."""
    piece = draw(st.sampled_from(("[", "{", '{"a":', "<tool_call>", "<answer>", "<think>", "</think>", '"', "\\",
                                  "9", "x", "\ud800", '{"action_type": "click", "index": 1}', "<score>1</score>")))
    return draw(token_text) + piece * draw(st.sampled_from(times)) + draw(token_text)


hostile_text = st.text(any_char, max_size=200) | token_text | long_runs()
"""The text a hostile (or merely broken) model may write."""

wire_char = st.characters(codec="utf-8")
"""Any code point JSON can carry: the MCP client refuses to encode a lone surrogate, so none reaches a server."""


def json_values(chars: st.SearchStrategy[str]) -> st.SearchStrategy:
    """Any JSON-shaped value of strings of ``chars`` (NaN, infinities and integers past 64 bits included)."""
    scalars = (st.none() | st.booleans() | st.integers() | st.integers(-2**80, 2**80)
               | st.floats(allow_nan=True, allow_infinity=True) | st.text(chars, max_size=40))
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.text(chars, max_size=10), inner, max_size=4), max_leaves=12)


json_like = json_values(any_char)
"""JSON-shaped values whose strings may hold lone surrogates (what ``json.loads`` makes of ``"\\ud800"``)."""


def nested_json(depth: int) -> str:
    """JSON text of a list nested ``depth`` levels deep (past ``json``'s recursion limit when over ~1,000)."""
    return "[" * depth + "0" + "]" * depth
