"""TravelPlanner's sandbox tools (flights, distances, stays, food, sights, cities, notebook) as an MCP tool server."""

from rlfactory_tool_servers.travel.server import build_server, describe_data, options_parser

__all__ = ["build_server", "describe_data", "options_parser"]
