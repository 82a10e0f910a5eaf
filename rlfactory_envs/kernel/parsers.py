"""Tool-call parsers: read a raw model response into a ``ParsedAction``. Pluggable per environment.

Two dialects are built in:

- ``HermesToolCallParser``: Qwen3 / Hermes ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks
  (several blocks are parallel calls), final answer in ``<answer>...</answer>``.
- ``SearchR1Parser``: Search-R1's ``<search>query</search>`` and ``<answer>...</answer>``; the first action tag
  in the text wins, as in Search-R1.

Parsers never raise on model output: anything they cannot read becomes a sentence in ``ParsedAction.errors``.
"""

from __future__ import annotations

import re
from typing import Protocol

from rlfactory_envs.kernel.tool_call import ParsedAction, ToolCall
from rlfactory_reward_models.lenient_json import UNREADABLE, load_json_leniently

DEFAULT_MAX_TOOL_CALLS = 8
_THINK_END = "</think>"


class ActionParser(Protocol):
    """Turns one raw response into calls, an answer and error messages. Must accept any string."""

    def parse(self, response: str) -> ParsedAction: ...


def strip_reasoning(response: str) -> str:
    """The part of a response after its reasoning: text before a closing ``</think>`` is never an action."""
    head, sep, tail = response.rpartition(_THINK_END)
    return tail if sep else response


def first_tagged(text: str, tag: str) -> tuple[int, str] | None:
    """``(start, content)`` of the first ``<tag>content</tag>`` in ``text``, or ``None``.

    The same match as the regular expression ``<tag>(.*?)</tag>``, found with two linear scans: a response made
    of thousands of unclosed tags must not cost quadratic time.
    """
    opening, closing = f"<{tag}>", f"</{tag}>"
    start = text.find(opening)
    if start < 0:
        return None
    end = text.find(closing, start + len(opening))
    if end < 0:
        return None
    return start, text[start + len(opening):end]


def _preview(text: str, limit: int = 120) -> str:
    text = text.strip().replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


def _cap_message(found: int, cap: int) -> str:
    return (f"You made {found} tool calls in one response; at most {cap} are run per turn. "
            f"The first {cap} were run and the other {found - cap} were ignored.")


class HermesToolCallParser:
    """Qwen3/Hermes tool calls. ``max_tool_calls`` caps the calls run per response (the rest are reported)."""

    _BLOCK_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)

    def __init__(self, max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS, answer_tag: str = "answer"):
        if max_tool_calls < 1:
            raise ValueError("max_tool_calls must be at least 1")
        self.max_tool_calls = max_tool_calls
        self.answer_tag = answer_tag

    def parse(self, response: str) -> ParsedAction:
        text = strip_reasoning(response)
        action = ParsedAction()
        answer = first_tagged(text, self.answer_tag)
        first_call = text.find("<tool_call>")
        if answer is not None and (first_call < 0 or answer[0] < first_call):
            action.answer = answer[1].strip()
            return action
        blocks = self._BLOCK_RE.findall(text)
        if len(blocks) > self.max_tool_calls:
            action.errors.append(_cap_message(len(blocks), self.max_tool_calls))
            blocks = blocks[: self.max_tool_calls]
        for position, block in enumerate(blocks):
            call, error = self._parse_block(block, position)
            if call is not None:
                action.tool_calls.append(call)
            else:
                action.errors.append(f"Tool call {position + 1} could not be read: {error}")
        return action

    @staticmethod
    def _parse_block(block: str, call_id: int) -> tuple[ToolCall | None, str]:
        body = block.strip()
        if not body:
            return None, "the <tool_call> block is empty."
        payload = load_json_leniently(body)
        if payload is UNREADABLE:
            return None, f"it is not valid JSON and could not be repaired: {_preview(body)!r}."
        if not isinstance(payload, dict):
            return None, (f"expected a JSON object like {{\"name\": ..., \"arguments\": {{...}}}}, "
                          f"got {_preview(body)!r}.")
        name = payload.get("name")
        if not isinstance(name, str) or not name.strip():
            return None, "the JSON object has no string \"name\"."
        arguments = payload.get("arguments", payload.get("parameters", {}))
        if isinstance(arguments, str):
            arguments = load_json_leniently(arguments) if arguments.strip() else {}
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return None, f"\"arguments\" of {_preview(name.strip())!r} must be a JSON object."
        return ToolCall(name=name.strip(), arguments=arguments, call_id=call_id), ""


class SearchR1Parser:
    """Search-R1's tags: the first ``<search>`` or ``<answer>`` in the response is the action.

    A search becomes ``ToolCall(tool_name, {"query": ...})``; ``tool_name`` defaults to ``search``.
    """

    def __init__(self, tool_name: str = "search", query_argument: str = "query"):
        self.tool_name = tool_name
        self.query_argument = query_argument

    def parse(self, response: str) -> ParsedAction:
        found = [(hit[0], tag, hit[1]) for tag in ("search", "answer") if (hit := first_tagged(response, tag))]
        if not found:
            return ParsedAction()
        _, tag, content = min(found)
        content = content.strip()
        if tag == "answer":
            return ParsedAction(answer=content)
        if not content:
            return ParsedAction(errors=["The <search> query is empty."])
        return ParsedAction(tool_calls=[ToolCall(self.tool_name, {self.query_argument: content})])
