"""A third-party stdio MCP server, as the MCP SDK's own docs write one: a plain ``sleep`` tool and the SDK's own stdio
transport, nothing of this project (no batched form). ``rlf bench --only paths`` measures the toolbox against it.

Run: ``python benchmarks/plain_sleep_server.py`` (it speaks MCP on stdin and stdout).
"""

import asyncio

from mcp.server.mcpserver import MCPServer

server = MCPServer("plain-sleep", log_level="WARNING")


@server.tool()
async def sleep(ms: int = 100) -> str:
    """Wait `ms` milliseconds, then say so."""
    await asyncio.sleep(ms / 1000)
    return f"slept {ms} ms"


if __name__ == "__main__":
    server.run("stdio")
