"""Mistral tool calls after ``[TOOL_CALLS]``, as vLLM's ``mistral`` parser reads them.

Before the v11 tokenizer (Mistral 7B Instruct v0.3, Nemo): one ``[TOOL_CALLS]`` followed by a JSON array of
``{"name": ..., "arguments": {...}}`` (vLLM also takes the array out of text around it). From v11 on (Mistral Small
3.x, Magistral): ``[TOOL_CALLS]name{...}`` once per call (``[TOOL_CALLS]name[ARGS]{...}`` in later tokenizers); vLLM
keeps arguments that are not JSON as a string, which no MCP tool takes, so here they are a problem like any other.
"""

from __future__ import annotations

import json
import re

from rlfactory_envs.kernel.dialects.base import Calls, NativeCallParser, all_calls, json_object
from rlfactory_envs.kernel.tool_call import ToolCall
from rlfactory_reward_models.lenient_json import UNREADABLE, load_json_leniently

TOOL_CALLS = "[TOOL_CALLS]"
ARGS = "[ARGS]"
_ARRAY = re.compile(r"\[{.*}\]", re.DOTALL)


class MistralParser(NativeCallParser):
    end_tokens = ("</s>",)

    def __init__(self, *args, v11: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.v11 = v11

    @property
    def reference(self) -> str:  # type: ignore[override]
        shape = "name{arguments} after each [TOOL_CALLS]" if self.v11 else "a JSON array after one [TOOL_CALLS]"
        return f"vLLM's mistral tool parser ({'v11+' if self.v11 else 'pre-v11'} tokenizer): {shape}"

    @property
    def canonical(self) -> str:  # type: ignore[override]
        return '[TOOL_CALLS]TOOL{"arg": ...}' if self.v11 else '[TOOL_CALLS] [{"name": "TOOL", "arguments": {...}}]'

    def first_call(self, text: str) -> int:
        return text.find(TOOL_CALLS)

    def read_calls(self, text: str, *, lenient: bool) -> Calls:
        parts = text.split(TOOL_CALLS)[1:]
        return self._v11(parts, lenient) if self.v11 else self._array(parts, lenient)

    def _array(self, parts: list[str], lenient: bool) -> Calls:
        if len(parts) != 1 and not lenient:
            return None, f"{len(parts)} [TOOL_CALLS] tokens; one goes before the array of calls"
        body = " ".join(parts).strip()
        payload, problem = json_object(body)
        if problem and (match := _ARRAY.search(body)):
            payload, problem = json_object(match.group(0))
        if problem and lenient:
            payload, problem = load_json_leniently(body), ""
        if problem or payload is UNREADABLE:
            return None, problem or "not valid JSON, even mended"
        payload = [payload] if isinstance(payload, dict) and lenient else payload
        if not isinstance(payload, list) or not all(isinstance(c, dict) for c in payload):
            return None, "[TOOL_CALLS] must be followed by a JSON array of objects"
        return all_calls([(c.get("name"), c.get("arguments", c.get("parameters") if lenient else None))
                          for c in payload])

    def _v11(self, parts: list[str], lenient: bool) -> Calls:
        found = []
        for part in parts:
            if "{" not in part:
                continue  # as vLLM: a [TOOL_CALLS] with no arguments after it is skipped
            name, arguments = part[: part.find("{")], part[part.find("{"):]
            payload, problem = json_object(arguments.strip())
            if problem and lenient:
                payload, problem = load_json_leniently(arguments), ""
            if problem or payload is UNREADABLE:
                return None, problem or "not valid JSON, even mended"
            found.append((name.removesuffix(ARGS).strip(), payload))
        return all_calls(found)


def render_call(call: ToolCall, v11: bool = False) -> str:
    arguments = json.dumps(call.arguments, ensure_ascii=False)
    if v11:
        return f"{TOOL_CALLS}{call.name}{arguments}"
    return f'{TOOL_CALLS} [{{"name": {json.dumps(call.name, ensure_ascii=False)}, "arguments": {arguments}}}]'
