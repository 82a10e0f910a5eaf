"""What the native tool-call parsers share: the reasoning and the end-of-turn token set aside, a final answer that
comes before any call, all of a response's calls or none of them (as vLLM's parsers return them), a cap, and a
repair that runs mended calls and reports each as a format error.

A dialect's parser says where its calls start (``first_call``) and reads them (``read_calls``), strictly as its
serving parser does, or leniently when asked to repair.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rlfactory_envs.kernel.parsers import ToolCallReading, first_tagged, json_problem, strip_reasoning
from rlfactory_envs.kernel.tool_call import ParsedAction, ToolCall
from rlfactory_envs.kernel.unicode_text import json_without_lone_surrogates, without_lone_surrogates

Calls = tuple[list[ToolCall] | None, str]
"""The calls read, or ``None`` and why they could not be."""


def preview(text: str, limit: int = 120) -> str:
    text = text.strip().replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


def make_call(name: Any, arguments: Any, position: int) -> tuple[ToolCall | None, str]:
    """One call as MCP takes it (a string name, an object of arguments), or why it is not one."""
    if not isinstance(name, str) or not name.strip():
        return None, f"call {position + 1} has no string name"
    if not isinstance(arguments, dict):
        return None, f"the arguments of {preview(name)!r} must be a JSON object, got {type(arguments).__name__}"
    name, arguments = without_lone_surrogates(name), json_without_lone_surrogates(arguments)
    return ToolCall(name=name, arguments=arguments, call_id=position), ""


def all_calls(found: list[tuple[Any, Any]]) -> Calls:
    """``[(name, arguments)]`` as calls, or the first problem (one bad call: none runs)."""
    calls = []
    for position, (name, arguments) in enumerate(found):
        call, problem = make_call(name, arguments, position)
        if call is None:
            return None, problem
        calls.append(call)
    return (calls, "") if calls else (None, "no call was found")


def json_object(text: str) -> tuple[Any, str]:
    """``json.loads(text)``, or why it is not JSON."""
    try:
        return json.loads(text), ""
    except (ValueError, RecursionError) as exc:
        return None, f"not valid JSON ({json_problem(exc)}): {preview(text)!r}"


class NativeCallParser(ToolCallReading):
    """The shared reading (see the module docstring); a dialect sets ``reference``, ``end_tokens``, ``first_call``
    and ``read_calls``."""

    reference: ClassVar[str] = ""
    end_tokens: ClassVar[tuple[str, ...]] = ()
    """End-of-turn tokens a trainer's decoded response may end with (a serving stack strips them)."""
    canonical: ClassVar[str] = ""
    """How a call is written, for the message about a repaired one."""

    def first_call(self, text: str) -> int:
        """Where the calls start in ``text``, or -1."""
        raise NotImplementedError

    def read_calls(self, text: str, *, lenient: bool) -> Calls:
        """The calls of ``text`` (which starts where they do)."""
        raise NotImplementedError

    def parse(self, response: str) -> ParsedAction:
        text = self._body(response)
        action = ParsedAction()
        start = self.first_call(text)
        answer = first_tagged(text, self.answer_tag)
        if answer is not None and (start < 0 or answer[0] < start):
            action.answer = answer[1].strip()
            return action
        if start >= 0:
            calls = self._read(text[start:], action.errors)
            if calls is not None:
                action.tool_calls = self._capped(calls, action.errors)
        return action

    def _body(self, response: str) -> str:
        text = strip_reasoning(response).strip()
        for token in self.end_tokens:
            if text.endswith(token):
                return text[: -len(token)].rstrip()
        return text

    def _read(self, text: str, errors: list[str]) -> list[ToolCall] | None:
        """The calls, strictly, else (``repair``) mended with a note; ``None`` with the reason in ``errors``."""
        calls, problem = self.read_calls(text, lenient=False)
        if calls is not None:
            return calls
        if self.repair:
            mended, _ = self.read_calls(text, lenient=True)
            if mended is not None:
                errors.append(f"The tool calls were repaired before they ran ({problem}); a serving stack's parser "
                              f"would reject them: write {self.canonical}.")
                return mended
        errors.append(f"The tool calls could not be read, so none was run: {problem}. Write {self.canonical}.")
        return None

    def _capped(self, calls: list[ToolCall], errors: list[str]) -> list[ToolCall]:
        if len(calls) > self.max_tool_calls:
            errors.append(f"You made {len(calls)} tool calls in one response; at most {self.max_tool_calls} are run "
                          f"per turn. The first {self.max_tool_calls} were run and the other "
                          f"{len(calls) - self.max_tool_calls} were ignored.")
        return calls[: self.max_tool_calls]
