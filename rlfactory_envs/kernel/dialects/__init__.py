"""Tool-call dialects: how a model family writes a call, how its serving parser reads one, and how tools and their
results read in its turns when its chat template renders neither.

``DIALECTS`` by name: ``hermes`` (Qwen 2.5/3, Hermes: ``<tool_call>`` JSON), ``llama3_json`` (Llama 3.x: a bare JSON
object), ``mistral`` and ``mistral_v11`` (``[TOOL_CALLS]``), ``pythonic`` (Gemma 3, Llama 3.2/4: a Python list of
calls), ``harmony`` (GPT-OSS). Each parser is strict by default: it accepts what that model's serving parser
(vLLM's of the same name) accepts. ``detect_dialect`` names the dialect a chat template's text is written for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlfactory_envs.kernel.dialects import harmony, llama3, mistral, pythonic
from rlfactory_envs.kernel.parsers import ActionParser, HermesToolCallParser
from rlfactory_envs.kernel.tool_call import ToolCall

Tools = Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class Dialect:
    """One model family's way with tools (see the module docstring)."""

    name: str
    parser: Callable[..., ActionParser]
    """``parser(max_tool_calls=, answer_tag=, repair=)``."""
    render_call: Callable[[ToolCall], str]
    tool_prompt: Callable[[Tools], str]
    """The tools as the first turn states them, for a template that renders no ``tools``."""
    result_text: Callable[[str], str]
    """One tool result inside a user turn, for a template without a ``tool`` role."""
    how_to_call: str
    """How to call a tool, in the words of the message to a model whose response neither called nor answered."""
    markers: tuple[str, ...] = ()
    """Strings a chat template written for this dialect contains."""
    check_tools: Callable[[Tools], None] = lambda tools: None
    """Warns of tools this dialect cannot call (run on the tools of every prompt)."""


def _hermes_call(call: ToolCall) -> str:
    payload = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    return f"<tool_call>\n{payload}\n</tool_call>"


def _hermes_tools(tools: Tools) -> str:
    listed = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
    return ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with "
            f"function signatures within <tools></tools> XML tags:\n<tools>\n{listed}\n</tools>\n\nFor each function "
            "call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n"
            '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>')


def _json_tools(preamble: str) -> Callable[[Tools], str]:
    return lambda tools: preamble + "\n\n".join(json.dumps(tool, indent=4, ensure_ascii=False) for tool in tools)


LLAMA3_TOOLS = ("Given the following functions, please respond with a JSON for a function call with its proper "
                "arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, "
                "\"parameters\": dictionary of argument name and its value}. Do not use variables.\n\n")

DIALECTS: dict[str, Dialect] = {
    "hermes": Dialect("hermes", HermesToolCallParser, _hermes_call, _hermes_tools,
                      lambda text: f"<tool_response>\n{text}\n</tool_response>",
                      "inside <tool_call></tool_call>", ("<tool_call>",)),
    "llama3_json": Dialect("llama3_json", llama3.Llama3JsonParser, llama3.render_call, _json_tools(LLAMA3_TOOLS),
                           lambda text: text, 'as {"name": TOOL, "parameters": {...}}',
                           ("<|python_tag|>", "ipython")),
    "mistral": Dialect("mistral", mistral.MistralParser, mistral.render_call,
                       lambda tools: f"[AVAILABLE_TOOLS] {json.dumps(list(tools), ensure_ascii=False)}[/AVAILABLE_TOOLS]",
                       lambda text: f'[TOOL_RESULTS] {json.dumps({"content": text}, ensure_ascii=False)}[/TOOL_RESULTS]',
                       'as [TOOL_CALLS] [{"name": TOOL, "arguments": {...}}]', ("[TOOL_CALLS]",)),
    "mistral_v11": Dialect("mistral_v11", lambda **kw: mistral.MistralParser(v11=True, **kw),
                           lambda call: mistral.render_call(call, v11=True),
                           lambda tools: f"[AVAILABLE_TOOLS]{json.dumps(list(tools), ensure_ascii=False)}[/AVAILABLE_TOOLS]",
                           lambda text: f"[TOOL_RESULTS]{text}[/TOOL_RESULTS]", "as [TOOL_CALLS]TOOL{...}", ("[ARGS]",)),
    "pythonic": Dialect("pythonic", pythonic.PythonicParser, pythonic.render_call, pythonic.tool_prompt,
                        lambda text: f"<tool_response>\n{text.strip()}</tool_response>",
                        "as a Python list of calls, [TOOL(arg=value)], and nothing else", ("<start_of_turn>",),
                        pythonic.warn_uncallable),
    "harmony": Dialect("harmony", harmony.HarmonyParser, harmony.render_call,
                       _json_tools("# Tools\n\nCall a function as a message to=functions.NAME with JSON arguments.\n\n"),
                       lambda text: text, "as a message to=functions.TOOL with JSON arguments", ("<|channel|>",)),
}
DIALECTS["gemma"] = DIALECTS["pythonic"]
DIALECTS["qwen3"] = DIALECTS["hermes"]


def detect_dialect(template: str) -> Dialect:
    """The dialect a chat template's text is written for (``[ARGS]`` before ``[TOOL_CALLS]``: the later Mistral
    tokenizers); ``hermes`` when nothing says (the tools are then stated in Hermes' words)."""
    for name in ("mistral_v11", "mistral", "harmony", "llama3_json", "hermes", "pythonic"):
        if any(marker in template for marker in DIALECTS[name].markers):
            return DIALECTS[name]
    return DIALECTS["hermes"]


def dialect(name: str) -> Dialect:
    """The dialect ``name``; ``ValueError`` naming the choices."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"unknown tool dialect {name!r}; choose one of {', '.join(sorted(DIALECTS))}") from None
