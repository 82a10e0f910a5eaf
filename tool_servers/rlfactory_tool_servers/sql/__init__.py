"""Read-only SQL exploration as an MCP tool server: ``list_tables``, ``describe_table``, ``run_query`` over a
directory of SQLite databases in Spider's or BIRD's layout."""

from rlfactory_tool_servers.sql.server import build_server, describe_data, options_parser

__all__ = ["build_server", "describe_data", "options_parser"]
