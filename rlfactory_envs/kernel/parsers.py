"""Tool-call parsers: read a raw model response into a ``ParsedAction``. Pluggable per environment.

Two dialects are built in:

- ``HermesToolCallParser``: Qwen3 / Hermes ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks
  (several blocks are parallel calls), final answer in ``<answer>...</answer>``.
- ``SearchR1Parser``: Search-R1's ``<search>query</search>`` and ``<answer>...</answer>``; the first action tag
  in the text wins, as in Search-R1.

Each parser says what it accepts (``reference``: the parser a serving stack reads the same format with) and
whether it accepts only that (``strict``). By default a parser is strict: a policy trained here must write calls
that the serving stack reads at deployment. Asked to repair (``repair=True``, the ``repair_tool_calls`` setting), the
Hermes parser also runs calls it had to mend (single quotes, trailing commas, a truncated object, arguments as a
JSON string), and reports each one in ``ParsedAction.errors``, so it counts as a format error.

Parsers never raise on model output: anything they cannot read becomes a sentence in ``ParsedAction.errors``.
"""

from __future__ import annotations

import json
from typing import Protocol

from rlfactory_envs.kernel.tool_call import ParsedAction, ToolCall
from rlfactory_envs.kernel.unicode_text import json_without_lone_surrogates
from rlfactory_reward_models.lenient_json import UNREADABLE, load_json_leniently

DEFAULT_MAX_TOOL_CALLS = 8
_THINK_END = "</think>"
_END_OF_TURN = "<|im_end|>"  # a trainer's decoded response may end with it; a serving stack strips it before parsing


class ActionParser(Protocol):
    """Turns one raw response into calls, an answer and error messages. Must accept any string. ``reference``
    names what it accepts (the parser a serving stack reads the format with); ``strict``: it accepts nothing more."""

    reference: str
    strict: bool

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


def tagged_blocks(text: str, tag: str, start: int = 0) -> list[str]:
    """The contents of the ``<tag>`` blocks of ``text`` from ``start``, in order, the last one unclosed when no
    ``</tag>`` follows it: what ``re.findall(r"<tag>(.*?)(?:</tag>|\\Z)", text, re.DOTALL)`` finds, by linear
    scans (half the regular expression's time on a one-call response)."""
    opening, closing = f"<{tag}>", f"</{tag}>"
    blocks, start = [], text.find(opening, start)
    while start >= 0:
        begin = start + len(opening)
        end = text.find(closing, begin)
        blocks.append(text[begin:end] if end >= 0 else text[begin:])
        start = text.find(opening, end + len(closing)) if end >= 0 else -1
    return blocks


def _preview(text: str, limit: int = 120) -> str:
    text = text.strip().replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


def _cap_message(found: int, cap: int) -> str:
    return (f"You made {found} tool calls in one response; at most {cap} are run per turn. "
            f"The first {cap} were run and the other {found - cap} were ignored.")


class ToolCallReading:
    """The options every tool-call parser of a chat format takes: at most ``max_tool_calls`` calls run per response,
    the final answer in ``answer_tag``, and ``repair`` (mended calls run too, each a format error; ``strict`` when
    not)."""

    def __init__(self, max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS, answer_tag: str = "answer",
                 repair: bool = False):
        if max_tool_calls < 1:
            raise ValueError("max_tool_calls must be at least 1")
        self.max_tool_calls = max_tool_calls
        self.answer_tag = answer_tag
        self.repair = repair

    @property
    def strict(self) -> bool:
        return not self.repair


class HermesToolCallParser(ToolCallReading):
    """Qwen3/Hermes tool calls, read as vLLM's ``hermes`` tool parser reads them: the text of each ``<tool_call>``
    block (the last may be unclosed) is parsed with ``json.loads`` and must be an object with a string ``"name"``
    and an object ``"arguments"``; when one block cannot be read, no call of the response runs (vLLM then returns
    the whole response as text). ``repair`` runs mended calls too, each reported as a format error (see the module
    docstring). ``max_tool_calls`` caps the calls run per response (the rest are reported)."""

    reference = ("vLLM's hermes tool parser: json.loads of each <tool_call> block, an object with \"name\" and "
                 "\"arguments\"")

    def parse(self, response: str) -> ParsedAction:
        text = strip_reasoning(response).rstrip()
        text = text[: -len(_END_OF_TURN)] if text.endswith(_END_OF_TURN) else text
        answer = first_tagged(text, self.answer_tag)
        first_call = text.find("<tool_call>")
        if answer is not None and (first_call < 0 or answer[0] < first_call):
            return ParsedAction(answer=answer[1].strip())
        if first_call < 0:
            return ParsedAction()
        errors: list[str] = []
        blocks = tagged_blocks(text, "tool_call", first_call)
        if len(blocks) > self.max_tool_calls:
            errors.append(_cap_message(len(blocks), self.max_tool_calls))
            blocks = blocks[: self.max_tool_calls]
        calls = [self._read_block(block, position, errors) for position, block in enumerate(blocks)]
        if all(calls):  # a ToolCall is always true
            return ParsedAction(tool_calls=calls, errors=errors)  # type: ignore[arg-type]
        if any(calls):
            errors.append(f"None of the {len(calls)} tool calls of the response was run: a tool-call parser "
                          "(vLLM's hermes) rejects every call of a response when one cannot be read.")
        return ParsedAction(errors=errors)

    def _read_block(self, block: str, position: int, errors: list[str]) -> ToolCall | None:
        """The call of one block; a sentence in ``errors`` when it cannot be read, or was read only after repair."""
        call, problem = _read_call(block, position, lenient=False)
        if call is not None or not self.repair:
            if call is None:
                errors.append(f"Tool call {position + 1} could not be read: {problem}")
            return call
        call, repair_problem = _read_call(block, position, lenient=True)
        if call is None:
            errors.append(f"Tool call {position + 1} could not be read: {repair_problem}")
        else:
            errors.append(f"Tool call {position + 1} was repaired before it ran ({problem.rstrip('.')}); a serving "
                          f"stack's parser would reject it: write {_canonical(call)}.")
        return call


def _read_call(block: str, call_id: int, *, lenient: bool) -> tuple[ToolCall | None, str]:
    """The call in ``block``, or why there is none. Strict: ``json.loads`` and the exact shape. Lenient: JSON as
    ``json_repair`` mends it, ``parameters`` for ``arguments``, arguments as a JSON string or none at all."""
    body = block.strip()
    if not body:
        return None, "the <tool_call> block is empty."
    payload, problem = _lenient_json(body) if lenient else _strict_json(body)
    if problem:
        return None, problem
    if "\\u" in body or not body.isascii():  # a lone surrogate would fail every call merged with this one
        payload = json_without_lone_surrogates(payload)
    if not isinstance(payload, dict):
        return None, f"expected a JSON object like {{\"name\": ..., \"arguments\": {{...}}}}, got {_preview(body)!r}."
    name = payload.get("name")
    if not isinstance(name, str) or not (name.strip() if lenient else name):
        return None, "the JSON object has no string \"name\"."
    if lenient:
        name, arguments = name.strip(), payload.get("arguments", payload.get("parameters", {}))
        if isinstance(arguments, str):
            arguments = load_json_leniently(arguments) if arguments.strip() else {}
        arguments = {} if arguments is None else arguments
    elif "arguments" not in payload:
        return None, f"the call of {_preview(name)!r} has no \"arguments\" (give {{}} for none)."
    else:
        arguments = payload["arguments"]
    if not isinstance(arguments, dict):
        return None, f"\"arguments\" of {_preview(name)!r} must be a JSON object."
    return ToolCall(name, arguments, call_id), ""


_SCAN_VALUE = json.JSONDecoder().scan_once
"""The value at an index of a text, as ``json.loads`` reads it (its C scanner), without ``loads``'s checks around
it (a third of its time on a one-call block)."""


def _strict_json(body: str) -> tuple[object, str]:
    """``json.loads(body)``, its value or why it is not JSON; ``body`` is stripped, so a value that ends the text is
    the whole reading (anything else takes ``loads``'s own path, for its exact message)."""
    try:
        value, end = _SCAN_VALUE(body, 0)
        if end == len(body):
            return value, ""
    except (StopIteration, ValueError, RecursionError):
        pass
    try:
        return json.loads(body), ""
    except (ValueError, RecursionError) as exc:
        return None, f"it is not valid JSON ({json_problem(exc)}): {_preview(body)!r}."


def json_problem(exc: ValueError | RecursionError) -> str:
    """What ``json.loads`` found wrong, in words (an integer past Python's digit limit raises a plain
    ``ValueError``, whose advice after the colon is for a programmer)."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(":")[0]


def _lenient_json(body: str) -> tuple[object, str]:
    payload = load_json_leniently(body)
    if payload is UNREADABLE:
        return None, f"it is not valid JSON and could not be repaired: {_preview(body)!r}."
    return payload, ""


def _canonical(call: ToolCall) -> str:
    return _preview(json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False), 200)


class SearchR1Parser:
    """Search-R1's tags: the first ``<search>`` or ``<answer>`` in the response is the action.

    A search becomes ``ToolCall(tool_name, {"query": ...})``; ``tool_name`` defaults to ``search``. It reads what
    Search-R1's own rollout reads, and there is nothing to repair: it is always strict.
    """

    reference = "Search-R1's rollout: the first <search>...</search> or <answer>...</answer> of the response"
    strict = True

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
