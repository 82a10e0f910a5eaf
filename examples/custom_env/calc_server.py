"""An MCP tool server, as the MCP SDK writes one: a typed function is a tool, its docstring the description."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("calc")


@server.tool()
def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


@server.tool()
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


if __name__ == "__main__":
    server.run("stdio")
