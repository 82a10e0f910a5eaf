"""TravelPlanner's sandbox tools (flights, distances, stays, food, sights, cities, notebook) as an MCP tool server."""

from rlfactory_tool_servers.travel.server import build_server

__all__ = ["build_server"]
