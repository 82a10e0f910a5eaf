"""Plain Python functions as MCP tools: ``python -m rlfactory_tool_servers.functions package.module:function ...``."""

from rlfactory_tool_servers.functions.server import build_server, local_ref

__all__ = ["build_server", "local_ref"]
