"""Pythonic tool calls (Gemma 3, Llama 3.2/4), as vLLM's ``pythonic`` parser reads them: the whole response is a
Python list of calls with keyword arguments of literal values, ``[search(query="x", topk=3), ...]``. vLLM serves
Gemma 3 with it and ``examples/tool_chat_template_gemma3_pythonic.jinja``, whose words ``tool_prompt`` uses: Gemma 3's
own template renders no tools. Repair takes the list out of a Markdown ``tool_code`` block or text around it.
A tool or argument named by a Python keyword (``from``, ``in``) or by no Python name (``get-weather``, ``a.b``)
cannot be called in this dialect (nor by vLLM): ``warn_uncallable`` says so once per tool set.
"""

from __future__ import annotations

import ast
import functools
import json
import keyword
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from rlfactory_envs.kernel.dialects.base import Calls, NativeCallParser, all_calls, preview
from rlfactory_envs.kernel.tool_call import ToolCall

_FENCE = re.compile(r"```(?:tool_code|python)?\s*(\[.*\])\s*```", re.DOTALL)
MAX_CALL_CHARS = 65_536


class _NotALiteral(ValueError):
    pass


class UncallableToolWarning(UserWarning):
    """A tool the model sees but cannot call in its dialect (a name the pythonic dialect cannot write)."""


class PythonicParser(NativeCallParser):
    reference = "vLLM's pythonic tool parser: the whole response a Python list of calls with literal keyword arguments"
    end_tokens = ("<end_of_turn>", "<eos>", "<|eot_id|>")
    canonical = '[tool_name(arg="value", other=3)]'

    def first_call(self, text: str) -> int:
        if text.startswith("["):
            return 0
        return text.find("[") if self.repair else -1

    def read_calls(self, text: str, *, lenient: bool) -> Calls:
        if lenient:
            fenced = _FENCE.search(text)
            text = fenced.group(1) if fenced else text[: text.rfind("]") + 1]
        if len(text) > MAX_CALL_CHARS:
            return None, f"the list of calls is over {MAX_CALL_CHARS:,} characters"
        try:
            tree = ast.parse(text.strip(), mode="eval").body
            if not isinstance(tree, ast.List) or not all(isinstance(e, ast.Call) for e in tree.elts):
                raise _NotALiteral("the response must be a Python list of function calls")
            return all_calls([_call(element, lenient) for element in tree.elts])
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return None, f"{exc.msg if isinstance(exc, SyntaxError) else exc}: {preview(text)!r}"


def _call(node: ast.Call, lenient: bool) -> tuple[str, dict[str, Any]]:
    if not isinstance(node.func, ast.Name) or node.args:
        raise _NotALiteral("each call is a function name with keyword arguments only")
    return node.func.id, {k.arg: _literal(k.value, lenient) for k in node.keywords if k.arg}


def _literal(node: ast.expr, lenient: bool) -> Any:
    """A literal value as vLLM reads one: constants, lists and dicts with constant keys (not ``-1``, a unary
    operation on a constant, which only a repair reads)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List):
        return [_literal(item, lenient) for item in node.elts]
    if isinstance(node, ast.Dict) and all(isinstance(key, ast.Constant) for key in node.keys):
        return {key.value: _literal(value, lenient) for key, value in zip(node.keys, node.values)}  # type: ignore
    if lenient and isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
            isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float)):
        return -node.operand.value
    raise _NotALiteral("tool call arguments must be literals")


def render_call(call: ToolCall) -> str:
    arguments = ", ".join(f"{key}={_python(value)}" for key, value in call.arguments.items())
    return f"[{call.name}({arguments})]"


def _python(value: Any) -> str:
    """``value`` as a Python literal (JSON's ``true``/``null`` are not)."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_python(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Sequence) and not isinstance(value, str):
        return "[" + ", ".join(_python(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


TOOL_PROMPT = ("Tools (functions) are available. If you decide to invoke one or more of the tools, you must respond "
               "with a python list of the function calls.\nExample Format: [func_name1(params_name1=params_value1, "
               "params_name2=params_value2...), func_name2(params)] \nDo not use variables. DO NOT USE MARKDOWN "
               "SYNTAX. You SHOULD NOT include any other text in the response if you call a function. If none of the "
               "functions can be used, point it out. If you lack the parameters required by the function, also point "
               "it out.\nHere is a list of functions in JSON format that you can invoke.\n")


def tool_prompt(tools: Sequence[Mapping[str, Any]]) -> str:
    """The tools as vLLM's Gemma 3 pythonic template writes them into the first user turn."""
    return TOOL_PROMPT + json.dumps(list(tools), indent=4, ensure_ascii=False)


def uncallable_names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """``tool`` or ``tool(argument)`` for each name among ``tools`` (OpenAI's shape) no pythonic call can write."""
    found = []
    for tool in tools:
        function = tool.get("function", tool)
        name = str(function.get("name", ""))
        arguments = (function.get("parameters") or {}).get("properties") or {}
        found += [name] if not _writable(name) else []
        found += [f"{name}({argument})" for argument in arguments if not _writable(str(argument))]
    return found


def _writable(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def warn_uncallable(tools: Sequence[Mapping[str, Any]]) -> None:
    """Warn (``UncallableToolWarning``) when the model is shown a tool or argument it cannot name in this dialect."""
    _warn_once(tuple(uncallable_names(tools)))


@functools.lru_cache(maxsize=64)
def _warn_once(uncallable: tuple[str, ...]) -> None:
    if uncallable:
        warnings.warn(f"the pythonic tool dialect (Gemma 3, Llama 3.2/4) cannot call {', '.join(uncallable)}: a "
                      "call names a tool and its arguments by Python names, not keywords (vLLM's parser reads it the "
                      "same way); rename them in the server, or choose another tool dialect",
                      UncallableToolWarning, stacklevel=4)
