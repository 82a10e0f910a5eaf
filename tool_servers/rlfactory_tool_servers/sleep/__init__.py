"""A latency-only MCP server: ``sleep(ms)`` waits and answers. For benchmarks and fault tests of the toolbox."""

from rlfactory_tool_servers.sleep.server import build_server, describe_data, options_parser

__all__ = ["build_server", "describe_data", "options_parser"]
