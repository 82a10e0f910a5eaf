"""qwen-agent tools as an MCP tool server: each ``BaseTool`` named on the command line becomes one MCP tool."""

from rlfactory_tool_servers.qwen_tools.server import build_server

__all__ = ["build_server"]
