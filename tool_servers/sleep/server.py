"""``sleep(ms)``: wait ``ms`` milliseconds, then say so. Its batched form waits for all calls at once."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

from mcp.server.mcpserver import MCPServer

from tool_servers.batched_tool import add_batched_tool

MAX_SLEEP_MS = 600_000


async def sleep(ms: int = 100) -> str:
    """Wait `ms` milliseconds (0 to 600000), then return "slept <ms> ms"."""
    if not 0 <= ms <= MAX_SLEEP_MS:
        raise ValueError(f"ms must be between 0 and {MAX_SLEEP_MS}, got {ms}")
    await asyncio.sleep(ms / 1000)
    return f"slept {ms} ms"


def build_server(argv: Sequence[str] = ()) -> MCPServer:
    """Build the sleep server (it takes no options of its own)."""
    argparse.ArgumentParser(prog="python -m tool_servers.sleep").parse_args(list(argv))
    server = MCPServer("sleep", log_level="WARNING")
    add_batched_tool(server, sleep)
    return server
