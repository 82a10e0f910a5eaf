"""AndroidWorld's actions on simulated phones (or a real one over ADB), one phone per session, as an MCP server."""

from rlfactory_tool_servers.android.server import build_server, describe_data, options_parser

__all__ = ["build_server", "describe_data", "options_parser"]
