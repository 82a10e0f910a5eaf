"""qwen-agent tools (``qwen_agent.tools.base.BaseTool`` subclasses) as MCP tools.

``python -m rlfactory_tool_servers.qwen_tools TOOL [TOOL ...] [--tool-config JSON]`` serves each TOOL, a qwen-agent
registered name (``code_interpreter``, ``storage``, ...) or ``package.module:ClassName``, as one MCP tool with the
tool's own name, description and arguments schema (see ``mcp_tool``). The tools get no batched form: see
``mcp_tool`` for why their schema cannot come from a Python signature, which ``toolset.publish_tool`` needs.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from mcp.server.mcpserver import MCPServer

PROG = "python -m rlfactory_tool_servers.qwen_tools"
INSTALL_HINT = "pip install 'rlfactory-envs[qwen-agent]'"


def options_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The server's own options (the transport options are ``rlfactory_tool_servers.launch``'s)."""
    parser = argparse.ArgumentParser(prog=prog, description="MCP server: qwen-agent tools as MCP tools.")
    parser.add_argument("tools", nargs="+", metavar="TOOL",
                        help="a qwen-agent registered tool name (e.g. code_interpreter) or package.module:ClassName "
                             "of a qwen_agent.tools.base.BaseTool subclass")
    parser.add_argument("--tool-config", default="{}", metavar="JSON",
                        help='a JSON object {tool_name: cfg} giving each tool\'s constructor its cfg dict')
    parser.add_argument("--timeout-s", type=float, default=30.0,
                        help="a call still running after this many seconds is reported as an error (default 30)")
    parser.add_argument("--max-result-chars", type=int, default=100_000,
                        help="a longer result is cut to this many characters, with a note (default 100000)")
    return parser


def parse_tool_config(text: str) -> dict[str, dict[str, Any]]:
    """``--tool-config``: a JSON object whose values are objects. ``ValueError`` says what is wrong."""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--tool-config is not valid JSON ({exc})") from None
    if not isinstance(config, dict) or not all(isinstance(cfg, dict) for cfg in config.values()):
        raise ValueError('--tool-config must be a JSON object {"tool_name": {cfg...}} whose values are objects')
    return config


def describe_data(options: argparse.Namespace) -> str:
    """The qwen-agent tools ``options`` name, for the start message."""
    configured = ", each given its --tool-config" if options.tool_config.strip() not in ("", "{}") else ""
    return f"the qwen-agent tools {', '.join(options.tools)}{configured}"


def build_server(argv: Sequence[str], prog: str = PROG) -> MCPServer:
    """Parse the options, construct the tools, and build the server; a bad option or a tool that cannot be found
    or constructed exits with a usage error (``SystemExit``), like argparse does."""
    parser = options_parser(prog)
    options = parser.parse_args(list(argv))
    if options.timeout_s <= 0:
        parser.error("--timeout-s must be positive")
    if options.max_result_chars < 1:
        parser.error("--max-result-chars must be at least 1")
    try:
        tool_config = parse_tool_config(options.tool_config)
    except ValueError as exc:
        parser.error(str(exc))
    try:  # qwen-agent is an optional dependency, and 0.0.34 imports packages it does not declare
        from rlfactory_tool_servers.qwen_tools.loading import ToolLoadError, load_tools
        from rlfactory_tool_servers.qwen_tools.mcp_tool import CallLimits, mcp_tool
        from rlfactory_tool_servers.qwen_tools.schema import ParametersError
    except ImportError as exc:
        parser.error(f"qwen-agent cannot be imported ({exc}); install it with {INSTALL_HINT}")
    limits = CallLimits(timeout_s=options.timeout_s, max_result_chars=options.max_result_chars)
    try:
        tools = load_tools(options.tools, tool_config)
    except ToolLoadError as exc:
        parser.error(str(exc))
    mcp_tools = []
    for tool in tools:
        try:
            mcp_tools.append(mcp_tool(tool, limits))
        except ParametersError as exc:
            parser.error(f"tool {tool.name!r} declares unusable parameters: {exc}; fix its parameters attribute")
    return MCPServer("qwen_tools", log_level="WARNING", tools=mcp_tools)
