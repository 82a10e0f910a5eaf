"""A latency and fault-injection server for benchmarks and tests of the toolbox.

- ``sleep(ms)``: wait ``ms`` milliseconds, then say so (batched form: all calls wait at once; the calls that end in
  the same millisecond share one timer, so that a call costs its latency and little else).
- ``process_id()``: the server's process id, so a test can kill the process from outside.
- ``exit_process(code)``: end the server process at once, as a crash would.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
from collections.abc import Awaitable, Callable, Sequence

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from rlfactory_tool_servers.toolset import publish_tool

PROG = "python -m rlfactory_tool_servers.sleep"
MAX_SLEEP_MS = 600_000


class Alarms:
    """Waits that end in the same millisecond share one timer: a server of thousands of sleeping calls costs one
    timer per millisecond, not one per call (the latency injected is all a call costs, or nearly)."""

    def __init__(self) -> None:
        self._due: dict[int, list[asyncio.Future[None]]] = {}

    async def wait(self, ms: int) -> None:
        """Return ``ms`` milliseconds from now, or within the millisecond after (at once for 0)."""
        if ms <= 0:
            return
        loop = asyncio.get_running_loop()
        tick = math.ceil(loop.time() * 1000) + ms
        waiting = self._due.get(tick)
        if waiting is None:
            waiting = self._due[tick] = []
            loop.call_at(tick / 1000, self._ring, tick)
        future = loop.create_future()
        waiting.append(future)
        await future

    def _ring(self, tick: int) -> None:
        for future in self._due.pop(tick, ()):
            if not future.done():
                future.set_result(None)


def sleep_tool(alarms: Alarms) -> Callable[[int], Awaitable[str]]:
    """The ``sleep`` tool over ``alarms``."""
    async def sleep(ms: int = 100) -> str:
        """Wait `ms` milliseconds (0 to 600000), then return "slept <ms> ms"."""
        if not 0 <= ms <= MAX_SLEEP_MS:
            raise ToolError(f"ms must be between 0 and {MAX_SLEEP_MS}, got {ms}")
        await alarms.wait(ms)
        return f"slept {ms} ms"

    return sleep


def process_id() -> int:
    """The operating-system process id of this server."""
    return os.getpid()


def exit_process(code: int = 1) -> str:
    """Terminate this server process immediately with exit status `code` (simulates a crash)."""
    os._exit(code)


def options_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The sleep server's own options: none (the transport options are ``rlfactory_tool_servers.launch``'s)."""
    return argparse.ArgumentParser(prog=prog, description="MCP server: latency and fault injection for tests and "
                                   "benchmarks of MCP clients.")


def describe_data(options: argparse.Namespace) -> str:
    """There is none: the tools wait, tell the process id, or end the process."""
    return "none (the tools wait, tell the process id, or end the process)"


def build_server(argv: Sequence[str] = (), prog: str = PROG) -> MCPServer:
    """Build the sleep server (it takes no options of its own)."""
    options_parser(prog).parse_args(list(argv))
    server = MCPServer("sleep", log_level="WARNING")
    publish_tool(server, sleep_tool(Alarms()))
    server.add_tool(process_id)
    server.add_tool(exit_process)
    return server
