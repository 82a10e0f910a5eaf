"""Plain Python functions as MCP tools: ``python -m rlfactory_tool_servers.functions package.module:function ...``."""

from rlfactory_tool_servers.functions.server import build_server, describe_data, local_ref, options_parser

__all__ = ["build_server", "describe_data", "local_ref", "options_parser"]
