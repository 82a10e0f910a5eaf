"""A fault-injection server: each tool misbehaves in one known way, on purpose, so a client's handling of it can be
tested against a real process.

- ``hang()``: never answers (waits forever, without blocking the server's other requests).
- ``slow_sometimes(p_slow, slow_ms)``: slow on a fraction ``p_slow`` of its calls, fast on the others. Which
  calls are slow is decided by a counter, not a random draw: call ``n`` (from 1, counted per process) is slow when
  ``floor(n * p_slow)`` grows, so exactly ``floor(N * p_slow)`` of the first ``N`` calls with the same ``p_slow``
  are slow (every 10th one for 0.1).
- ``crash(code, after_ms)``: ends the process with exit status ``code`` (``os._exit``: no cleanup, no answer),
  at once or ``after_ms`` milliseconds later, so that calls in flight meanwhile die with it.
- ``leak(mb)``: allocates ``mb`` MiB (every page written, so it is resident) and keeps it until the process ends.
- ``echo(text)``, ``pid()``: healthy answers, and the process id (so a test can kill the process from outside or
  read its memory).

``--refuse-start`` (or the ``RLF_FAULTY_REFUSE_START`` environment variable set to anything but "" or "0") makes
the server say so on stderr and exit with status 3 before it serves anything: over stdio the client sees a process
that exits during start, over HTTP nothing ever listens.

Every tool has a batched form (``NAME_batch``) like the other bundled servers, so a merging client meets the same
faults inside merged requests.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
from collections.abc import Sequence

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from rlfactory_tool_servers.batched_tool import add_batched_tool

PROG = "python -m rlfactory_tool_servers.faulty"
REFUSE_VARIABLE = "RLF_FAULTY_REFUSE_START"
REFUSE_EXIT_STATUS = 3
MAX_SLOW_MS = 600_000
MAX_LEAK_MB = 4096  # per call: a typo should not take the machine down

_held: list[bytearray] = []  # what leak() allocated; freed only when the process ends
_slow_counts: dict[float, int] = {}  # calls of slow_sometimes so far, per p_slow


async def hang() -> str:
    """Never answer: wait forever (for testing a client's deadline)."""
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


async def slow_sometimes(p_slow: float = 0.1, slow_ms: int = 1000) -> str:
    """Answer after `slow_ms` milliseconds on a fraction `p_slow` (0 to 1) of calls, at once on the others
    (deterministic: every 1/p_slow-th call with this p_slow is slow)."""
    if not 0 <= p_slow <= 1:
        raise ToolError(f"p_slow must be between 0 and 1, got {p_slow}")
    if not 0 <= slow_ms <= MAX_SLOW_MS:
        raise ToolError(f"slow_ms must be between 0 and {MAX_SLOW_MS}, got {slow_ms}")
    count = _slow_counts[p_slow] = _slow_counts.get(p_slow, 0) + 1
    if math.floor(count * p_slow) > math.floor((count - 1) * p_slow):
        await asyncio.sleep(slow_ms / 1000)
        return f"slow: {slow_ms} ms"
    return "fast"


async def crash(code: int = 1, after_ms: int = 0) -> str:
    """End this server process with exit status `code`, `after_ms` milliseconds from now (simulates a crash: no
    answer, no cleanup)."""
    if after_ms > 0:
        await asyncio.sleep(min(after_ms, MAX_SLOW_MS) / 1000)
    os._exit(code)


def leak(mb: int = 10) -> str:
    """Allocate `mb` MiB (1 to 4096) and hold it until the process ends; returns the MiB held in all."""
    if not 1 <= mb <= MAX_LEAK_MB:
        raise ToolError(f"mb must be between 1 and {MAX_LEAK_MB}, got {mb}")
    _held.append(bytearray(b"\x01") * (mb << 20))  # written, so resident, not merely reserved
    return f"holding {sum(len(block) for block in _held) >> 20} MiB"


def echo(text: str = "ok") -> str:
    """Return `text` unchanged (a healthy call)."""
    return text


def pid() -> int:
    """The operating-system process id of this server."""
    return os.getpid()


def options_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The faulty server's own option: ``--refuse-start``."""
    parser = argparse.ArgumentParser(prog=prog, description="MCP server: fault injection (hang, slow calls, crash, "
                                     "memory leak, refused start) for reliability tests of MCP clients.")
    parser.add_argument("--refuse-start", action="store_true",
                        help=f"exit with status {REFUSE_EXIT_STATUS} at start instead of serving (also: "
                             f"{REFUSE_VARIABLE}=1)")
    return parser


def describe_data(options: argparse.Namespace) -> str:
    """There is none: the tools misbehave on purpose."""
    return "none (the tools hang, are slow, crash or leak memory on purpose)"


def refuses_start(options: argparse.Namespace) -> bool:
    return options.refuse_start or os.environ.get(REFUSE_VARIABLE, "") not in ("", "0")


def build_server(argv: Sequence[str] = (), prog: str = PROG) -> MCPServer:
    """Build the faulty server; ``SystemExit(3)`` when told to refuse to start."""
    options = options_parser(prog).parse_args(list(argv))
    if refuses_start(options):
        print(f"{prog}: refusing to start (--refuse-start or {REFUSE_VARIABLE}), as asked", file=sys.stderr,
              flush=True)
        raise SystemExit(REFUSE_EXIT_STATUS)
    server = MCPServer("faulty", log_level="WARNING")
    for tool in (hang, slow_sometimes, crash, leak, echo, pid):
        add_batched_tool(server, tool)
    return server
