"""GPT-OSS's harmony format, as vLLM's ``openai`` tool parser reads it (through the ``openai-harmony`` library): the
response is a run of messages, each a header (``<|channel|>NAME``, a recipient ``to=functions.TOOL``, a
``<|constrain|>json``) then ``<|message|>`` and its content, ended by ``<|end|>``, ``<|call|>`` or ``<|return|>``
(later messages open with ``<|start|>assistant``). A message to ``functions.TOOL`` is a call whose content is its JSON
arguments; the ``final`` channel holds the answer; the ``analysis`` channel is reasoning, never an action.
"""

from __future__ import annotations

import json
import re

from rlfactory_envs.kernel.dialects.base import Calls, NativeCallParser, all_calls, json_object
from rlfactory_envs.kernel.parsers import first_tagged
from rlfactory_envs.kernel.tool_call import ParsedAction, ToolCall
from rlfactory_reward_models.lenient_json import UNREADABLE, load_json_leniently

START, CHANNEL, MESSAGE, CALL, END, RETURN = "<|start|>", "<|channel|>", "<|message|>", "<|call|>", "<|end|>", "<|return|>"
_ENDS = re.compile(r"<\|(?:end|call|return)\|>")
_RECIPIENT = re.compile(r"\bto=functions\.([^\s<]+)")


def messages(text: str) -> list[tuple[str, str]]:
    """``(header, content)`` of each message of a harmony response (the last may be unended)."""
    found = []
    for chunk in text.split(START):
        header, sep, rest = chunk.partition(MESSAGE)
        if sep:
            found.append((header, _ENDS.split(rest, 1)[0]))
    return found


def channel(header: str) -> str:
    return header.split(CHANNEL, 1)[1].split()[0] if CHANNEL in header else ""


class HarmonyParser(NativeCallParser):
    reference = ("vLLM's openai tool parser (openai-harmony): messages to=functions.TOOL with JSON arguments; the "
                 "final channel's text")
    canonical = "<|channel|>commentary to=functions.TOOL <|constrain|>json<|message|>{...}<|call|>"

    def parse(self, response: str) -> ParsedAction:
        action = ParsedAction()
        found = messages(response)
        if any(_RECIPIENT.search(header) for header, _ in found):
            calls = self._read(response, action.errors)
            action.tool_calls = self._capped(calls, action.errors) if calls is not None else []
            return action
        answer = first_tagged("".join(c for header, c in found if channel(header) == "final"), self.answer_tag)
        action.answer = answer[1].strip() if answer is not None else None
        return action

    def read_calls(self, text: str, *, lenient: bool) -> Calls:
        found = []
        for header, content in messages(text):
            if (recipient := _RECIPIENT.search(header)) is None:
                continue
            arguments, problem = json_object(content.strip() or "{}")
            if problem and lenient:
                arguments, problem = load_json_leniently(content), ""
            if problem or arguments is UNREADABLE:
                return None, f"the arguments of {recipient.group(1)!r}: {problem or 'not valid JSON, even mended'}"
            found.append((recipient.group(1), arguments))
        return all_calls(found)


def render_call(call: ToolCall) -> str:
    arguments = json.dumps(call.arguments, ensure_ascii=False)
    return f"{CHANNEL}commentary to=functions.{call.name} <|constrain|>json{MESSAGE}{arguments}{CALL}"
