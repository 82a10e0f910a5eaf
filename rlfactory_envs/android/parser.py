"""How a response becomes phone actions: the chat format's tool calls, or AndroidWorld's own action JSON.

- Tool calls (``<tool_call>{"name": "click", "arguments": {"index": 3}}</tool_call>`` in Qwen3's format) are
  the actions.
- A response without tool calls may give AndroidWorld's action JSON instead, as T3A's prompt asks
  (``Reason: ... Action: {"action_type": "click", "index": 3}``): each JSON object with an ``action_type`` is an
  action, so a prompt written for AndroidWorld works unchanged. It is read as AndroidWorld reads it (JSON, or a
  Python literal: ``ast.literal_eval``); a mended one only when the chat format's parser repairs (the
  ``repair_tool_calls`` setting).
- ``status`` and ``answer`` end the episode: they become the final answer (their action JSON), which the reward
  checks with the phone's final state. They must be the response's only action (``status`` after a ``click`` in
  one response would end the episode before the click ran); otherwise they are refused with a note. An answer in
  ``<answer>...</answer>`` is the ``answer`` action.
"""

from __future__ import annotations

import ast
import json

from rlfactory_envs.kernel.parsers import ActionParser, strip_reasoning
from rlfactory_reward_models.lenient_json import load_json_leniently
from rlfactory_envs.kernel.tool_call import ParsedAction, ToolCall
from rlfactory_tool_servers.android.phone.actions import ENDING_ACTIONS, ending_of
from rlfactory_tool_servers.android.phone.device import DeviceError

MAX_JSON_ACTIONS = 16
MAX_JSON_CHARS = 4_096


class AndroidActionParser:
    """Wraps the chat format's parser (``inner``); see the module docstring."""

    def __init__(self, inner: ActionParser, max_actions: int):
        self.inner = inner
        self.max_actions = max_actions
        self.strict = inner.strict
        self.reference = f"{inner.reference}; or AndroidWorld's action JSON, read as its agents read it"

    def parse(self, response: str) -> ParsedAction:
        parsed = self.inner.parse(response)
        if parsed.answer is not None:
            ending = {"action_type": "answer", "text": parsed.answer}
            return ParsedAction(answer=json.dumps(ending, ensure_ascii=False), errors=parsed.errors)
        calls, errors = parsed.tool_calls, parsed.errors
        if not calls and not errors:
            calls, errors = json_actions(strip_reasoning(response), self.max_actions, repair=not self.strict)
        endings = [call for call in calls if call.name in ENDING_ACTIONS]
        if not endings:
            return parsed if calls is parsed.tool_calls else ParsedAction(tool_calls=calls, errors=errors)
        errors = list(errors)
        if len(calls) > 1:
            errors.append(f"{endings[0].name} ends the task, so it must be the only action of its response; it was "
                          "ignored and the other actions were run.")
            return ParsedAction(tool_calls=[c for c in calls if c.name not in ENDING_ACTIONS], errors=errors)
        try:
            ending = ending_of(endings[0].name, endings[0].arguments)
        except DeviceError as exc:
            return ParsedAction(errors=errors + [f"The {endings[0].name} action could not be done: {exc}."])
        return ParsedAction(answer=json.dumps(ending, ensure_ascii=False), errors=errors)


def json_actions(text: str, max_actions: int, repair: bool = False) -> tuple[list[ToolCall], list[str]]:
    """The AndroidWorld action objects in ``text`` as calls (``action_type`` is the tool, the rest its
    arguments), at most ``max_actions``; problems as sentences. ``repair``: objects ``json_repair`` mends count."""
    calls: list[ToolCall] = []
    errors: list[str] = []
    start = text.find("{")
    found = 0
    while start >= 0 and found < MAX_JSON_ACTIONS:
        end = _object_end(text, start)
        if end is None:
            break
        body = text[start:end]
        if '"action_type"' in body or "'action_type'" in body:
            found += 1
            action = _literal(body)
            if repair and not isinstance(action, dict):
                action = load_json_leniently(body)
                if isinstance(action, dict):
                    errors.append(f"An action was repaired before it ran; AndroidWorld would not read it: "
                                  f"{body[:120]!r}")
            if not isinstance(action, dict) or not isinstance(action.get("action_type"), str):
                errors.append(f"An action could not be read as JSON: {body[:120]!r}")
            elif len(calls) >= max_actions:
                errors.append(f"Only {max_actions} action(s) are run per response; the rest were ignored.")
                break
            else:
                arguments = {k: v for k, v in action.items() if k != "action_type" and v is not None}
                calls.append(ToolCall(action["action_type"], arguments, len(calls)))
        start = text.find("{", end)
    return calls, errors


def _literal(body: str) -> object:
    """``body`` as JSON, else as a Python literal (AndroidWorld's ``extract_json``); ``None`` when neither reads."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(body)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return None


def _object_end(text: str, start: int) -> int | None:
    """The end (exclusive) of the balanced ``{...}`` starting at ``start``, strings respected; ``None`` if it
    does not close within ``MAX_JSON_CHARS``."""
    depth, in_string, escaped = 0, False, False
    for position in range(start, min(len(text), start + MAX_JSON_CHARS)):
        char = text[position]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return position + 1
    return None
