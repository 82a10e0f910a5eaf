"""qwen-agent tools as an MCP tool server: each ``BaseTool`` named on the command line becomes one MCP tool."""

from rlfactory_tool_servers.qwen_tools.server import build_server, describe_data, options_parser

__all__ = ["build_server", "describe_data", "options_parser"]
