"""A fault-injection MCP server: tools that hang, are slow on a fraction of calls, crash the process or leak memory,
and an option that makes the server refuse to start. For reliability tests and benchmarks of MCP clients."""

from rlfactory_tool_servers.faulty.server import build_server, describe_data, options_parser

__all__ = ["build_server", "describe_data", "options_parser"]
