"""One qwen-agent tool as one MCP tool: its own name, description and arguments schema, called in a worker thread
with a deadline and a cap on the result's size.

``MCPServer.add_tool`` derives a tool's schema from a Python signature, and a qwen-agent tool has a JSON schema
and a ``call(params)`` signature instead; so the tool is built as the SDK's ``Tool`` record directly (for
``MCPServer(tools=...)``), with the tool's schema published as it is and an argument model that hands the whole
arguments object on unchanged. The arguments are checked against that schema here, with ``jsonschema``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
from jsonschema.exceptions import best_match
from jsonschema.validators import validator_for
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from pydantic import ConfigDict
from qwen_agent.tools.base import BaseTool

from rlfactory_tool_servers.qwen_tools.formatting import cap_text, tool_result_text
from rlfactory_tool_servers.qwen_tools.schema import input_schema


@dataclass(frozen=True)
class CallLimits:
    """Bounds on one tool call: ``timeout_s`` of wall time, ``max_result_chars`` of text (result or error)."""

    timeout_s: float = 30.0
    max_result_chars: int = 100_000


class WholeArguments(ArgModelBase):
    """Accepts any arguments object and passes it on whole, as the tool function's one ``arguments`` parameter."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.model_extra or {})}


def mcp_tool(tool: BaseTool, limits: CallLimits) -> Tool:
    """``tool`` as an MCP tool named ``tool.name``, described by ``tool.description``, with ``tool.parameters`` as
    its input schema (see ``schema.input_schema``; ``ParametersError`` when they are not a valid one).

    A call checks the arguments against that schema, then runs ``tool.call(params)`` in a worker thread, where
    ``params`` is the arguments as JSON text (what qwen-agent's own agents pass, and what every tool accepts). Its
    return value becomes text (``formatting.tool_result_text``) cut to ``limits.max_result_chars``. Every failure
    is a ``ToolError``, which the client gets as an error result ``Error executing tool <name>: <message>``:
    arguments that do not fit the schema, an exception in the tool (its type and message, no traceback), or no
    answer within ``limits.timeout_s`` (the worker thread is then abandoned: Python cannot stop it, so it runs on
    until the tool returns, and its result is dropped).
    """
    schema = input_schema(tool.parameters)
    validator = validator_for(schema)(schema)

    async def call(arguments: dict[str, Any]) -> str:
        problem = best_match(validator.iter_errors(arguments))
        if problem is not None:
            where = f" at {problem.json_path}" if problem.path else ""
            raise ToolError(cap_text(f"invalid arguments{where}: {problem.message}", limits.max_result_chars))
        params = json.dumps(arguments, ensure_ascii=False)
        try:
            with anyio.move_on_after(limits.timeout_s) as deadline:
                value = await anyio.to_thread.run_sync(tool.call, params, abandon_on_cancel=True)
        except Exception as exc:  # noqa: BLE001 - any failure of the tool is the call's error result
            raise ToolError(cap_text(f"{type(exc).__name__}: {exc}", limits.max_result_chars)) from exc
        if deadline.cancelled_caught:
            raise ToolError(f"no answer within {limits.timeout_s:g} s (--timeout-s); the call was abandoned")
        return cap_text(tool_result_text(value), limits.max_result_chars)

    return Tool(fn=call, name=tool.name, description=tool.description, parameters=schema,
                fn_metadata=FuncMetadata(arg_model=WholeArguments), is_async=True)
