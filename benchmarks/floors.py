"""What the machine and a third-party server cost the latency-bound paths of ``rlf bench --only paths``, with no work
of ours in it: the floors those paths' goals are judged beside.

- ``hop_round_trip_s``: the least a sync ``env.step`` with one stdio call can take on this machine: from a thread
  with no loop, one hop to a loop thread (the toolbox's own kind), a line to a child process that echoes it (blocking
  reads, no JSON, no MCP: the least a server does) and back, and the hop home. On a VM each hop and each pipe wakes
  an idle core, which costs far more than on bare metal (``docs/speed.md``).
- ``ChildrenCpu``: the CPU seconds this process's child processes (a pool of stdio servers) used between two
  readings, from ``/proc``: what a server spends per call, which no client can take away.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

from rlfactory_envs.kernel.mcp.loop_thread import LoopThread

ECHO = ("import sys\n"
        "for line in sys.stdin.buffer:\n"
        "    sys.stdout.buffer.write(line)\n"
        "    sys.stdout.buffer.flush()\n")
LINE = b'{"jsonrpc":"2.0","id":"rlf-1","result":{"content":[{"type":"text","text":"slept 0 ms"}]}}\n'


def hop_round_trip_s(round_trips: int, repeats: int = 3) -> float:
    """Median seconds of one round trip (see the module), over ``repeats`` runs of ``round_trips`` each."""
    thread = LoopThread(name="rlf-floor")
    try:
        process = thread.run(asyncio.create_subprocess_exec(
            sys.executable, "-c", ECHO, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE))
        runs = [_run_s(thread, process, round_trips) for _ in range(repeats + 1)]  # run 0 warms up
        thread.run(_ended(process))
        return statistics.median(runs[1:])
    finally:
        thread.stop()


def _run_s(thread: LoopThread, process: asyncio.subprocess.Process, round_trips: int) -> float:
    """Seconds a round trip, over ``round_trips`` made one after another from this thread."""
    async def echo() -> bytes:
        process.stdin.write(LINE)  # type: ignore[union-attr]
        return await process.stdout.readline()  # type: ignore[union-attr]

    started = time.perf_counter()
    for _ in range(round_trips):
        thread.run(echo())
    return (time.perf_counter() - started) / round_trips


async def _ended(process: asyncio.subprocess.Process) -> None:
    process.stdin.close()  # type: ignore[union-attr]
    await process.wait()


class ChildrenCpu:
    """CPU seconds of this process's children since the last ``take`` (Linux's ``/proc``; ``None`` elsewhere). A
    child that exits between two readings is not counted."""

    def __init__(self) -> None:
        self._seen = self._read()

    def take(self) -> float | None:
        """The children's CPU seconds since the last reading (or since this object was made)."""
        now = self._read()
        if now is None or self._seen is None:
            return None
        spent = sum(seconds - self._seen.get(pid, 0.0) for pid, seconds in now.items())
        self._seen = now
        return spent

    @staticmethod
    def _read() -> dict[int, float] | None:
        """Each live child's CPU seconds (user and system), by pid."""
        tasks = Path(f"/proc/{os.getpid()}/task")
        if not (tasks / str(os.getpid()) / "children").exists():  # no /proc, or one that lists no children
            return None
        ticks = os.sysconf("SC_CLK_TCK")
        seconds: dict[int, float] = {}
        for task in tasks.iterdir():
            for pid in _read_text(task / "children").split():
                fields = _read_text(Path(f"/proc/{pid}/stat")).rpartition(")")[2].split()
                if len(fields) > 12:  # utime and stime are fields 14 and 15 of the whole line
                    seconds[int(pid)] = (int(fields[11]) + int(fields[12])) / ticks
        return seconds


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:  # a thread or a child that has just ended
        return ""
