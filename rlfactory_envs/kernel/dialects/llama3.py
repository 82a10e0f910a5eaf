"""Llama 3.x JSON tool calls, as vLLM's ``llama3_json`` parser reads them: after an optional ``<|python_tag|>``,
every JSON object of the response (``raw_decode`` from each ``{`` not inside an object already read, so several
may follow each other, joined by ``; ``) is a call ``{"name": ..., "parameters" or "arguments": {...}}``; one that
cannot be decoded or lacks a key runs none. Llama 3.1's template writes ``parameters``, and so does ``render``."""

from __future__ import annotations

import json
from typing import Any

from rlfactory_envs.kernel.dialects.base import Calls, NativeCallParser, all_calls, preview
from rlfactory_envs.kernel.tool_call import ToolCall
from rlfactory_reward_models.lenient_json import UNREADABLE, load_json_leniently

PYTHON_TAG = "<|python_tag|>"
_DECODER = json.JSONDecoder()


class Llama3JsonParser(NativeCallParser):
    reference = ("vLLM's llama3_json tool parser: every JSON object of the response, each with \"name\" and "
                 "\"parameters\" (or \"arguments\")")
    end_tokens = ("<|eot_id|>", "<|eom_id|>")
    canonical = '{"name": "TOOL", "parameters": {...}} (several joined by "; ")'

    def first_call(self, text: str) -> int:
        tag = text.find(PYTHON_TAG)
        return tag if tag >= 0 else text.find("{")

    def read_calls(self, text: str, *, lenient: bool) -> Calls:
        text = text.removeprefix(PYTHON_TAG)
        objects, problem = _lenient_objects(text) if lenient else _objects(text)
        if objects is None:
            return None, problem
        found = []
        for position, payload in enumerate(objects):
            if not isinstance(payload, dict) or "name" not in payload:
                return None, f"JSON object {position + 1} has no \"name\""
            if "arguments" not in payload and "parameters" not in payload and not lenient:
                return None, f"the call of {preview(str(payload['name']))!r} has no \"parameters\""
            found.append((payload["name"], payload.get("arguments", payload.get("parameters", {}))))
        return all_calls(found)


def _objects(text: str) -> tuple[list[Any] | None, str]:
    """Every JSON object of ``text`` from each ``{`` outside those read, as vLLM decodes them."""
    objects, end = [], -1
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        if start <= end:
            continue
        try:
            payload, length = _DECODER.raw_decode(text[start:])
        except (ValueError, RecursionError):
            return None, f"not valid JSON: {preview(text[start:])!r}"
        objects.append(payload)
        end = start + length
    return objects, ""


def _lenient_objects(text: str) -> tuple[list[Any] | None, str]:
    """The ``; ``-separated parts of ``text`` as JSON mended by ``json_repair``."""
    objects = [load_json_leniently(part) for part in text.split(";") if part.strip()]
    if not objects or any(payload is UNREADABLE for payload in objects):
        return None, "not valid JSON, even mended"
    return objects, ""


def render_call(call: ToolCall) -> str:
    return json.dumps({"name": call.name, "parameters": call.arguments}, ensure_ascii=False)
