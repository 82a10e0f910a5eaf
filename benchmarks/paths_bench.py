"""``rlf bench --only paths``: the paths a user takes, each against its goal (issue 32's table), and with
``--compare-sdk`` the plain MCP SDK doing the same calls in the same process, one row after the other.

- ``merged_stdio``: N ``EnvBatch`` envs each call the 100 ms ``sleep`` of the bundled server over stdio (``rlf serve
  sleep``) in one step: seconds a step (N=4,096: goal 0.20 s; N=16,384, a 1,024-prompt x 16-sample GRPO step: 0.60
  s). SDK: one stdio ``Client`` (tools listed first), N concurrent ``call_tool`` gathered.
- ``sync_function`` / ``async_function``: ``rlf/MCP-v0`` with ``tools=[fn]``, a user's function of two integers
  (sync, then async), 1,024 envs each calling it every step: steps/s (goal 50,000). SDK: the function as a plain
  ``MCPServer`` tool in process, 1,024 concurrent ``call_tool`` gathered (calls/s).
- ``no_tool_call``: 1,024 envs whose response neither calls a tool nor answers (the env tells the model how to act):
  steps/s (goal 100,000), over four times the other rows' rounds (``NO_TOOL_ROUNDS_X``).
- ``single_env_stdio``: one env stepped alone (``env.step``), a tool that answers at once (``sleep`` of 0 ms) over
  stdio: steps/s (goal 5,000). SDK: sequential ``call_tool`` to the same server. Floor: a thread hop and a line
  echoed by a child process, with nothing of MCP (``floors.hop_round_trip_s``), as steps/s.
- ``third_party``: N=4,096 calls (``Toolbox.call_many``) to a stdio server written with the MCP SDK alone, with no
  batched forms (``benchmarks/plain_sleep_server.py``: ``sleep`` of 100 ms), as a pool of ``THIRD_PARTY_POOL``
  processes: seconds. Goal: 3x faster than the plain SDK, one stdio ``Client`` with the N calls gathered (judged
  only with ``--compare-sdk``). Floor: the servers' own CPU for the N calls (``floors.ChildrenCpu``) spread over every
  core, as seconds: no client is faster.
- ``env_overhead``: ``EnvBatch`` of 1,024 envs on an in-process sleep server, 0 ms calls: steps/s (goal 50,000).
- ``android``: 1,000 simulated phones in one ``EnvBatch``, every env acting each step: steps/s (goal 20,000).

The SQL reward verify row of the issue is another change's:
``rlf bench --only sql`` measures the reward. Every row keeps, per repeat, wall and process CPU seconds
(``cpu_us_per_step``: steadier than wall time on a shared machine). ``--quick``: small N, one repeat.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym

import rlfactory_envs  # noqa: F401 - registers the ids
from benchmarks.env_bench import (FLOOR_S, SLEEP_MS, SleepingSearchEnv, inprocess_sleep_config, make_batch,
                                  sleep_action, stdio_sleep_config)
from benchmarks.floors import ChildrenCpu, hop_round_trip_s
from rlfactory_envs.benchmarking import BenchContext, Timing, row, timed_repeats, timed_repeats_sync
from rlfactory_envs.kernel.batch import EnvBatch
from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.tool_call import ToolCall

PLAIN_SERVER = Path(__file__).resolve().with_name("plain_sleep_server.py")
THIRD_PARTY_POOL = {"sessions": max(2, os.cpu_count() or 1), "max_concurrency": 4096}
"""The ``mcpServers`` tuning of the third-party row: a server process per core (two at least; such a server spends
a millisecond or more of CPU a call), every call in flight at once."""
GOALS = {"merged_stdio@4096": ("<=", 0.20), "merged_stdio@16384": ("<=", 0.60), "sync_function": (">=", 50_000),
         "async_function": (">=", 50_000), "no_tool_call": (">=", 100_000), "single_env_stdio": (">=", 5_000),
         "env_overhead": (">=", 50_000), "android": (">=", 20_000)}
THIRD_PARTY_GOAL_X = 3.0
NO_TOOL_ROUNDS_X = 4
"""``no_tool_call`` steps this many times the other rows' rounds a repeat: at 5 rounds a repeat took 0.1 s and one
with a full collection in it read 1.8-2.5x slower than another (1.4-1.6x at 20)."""


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def add_async(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def call_text(name: str, arguments: dict[str, Any]) -> str:
    import json

    return f'<tool_call>\n{json.dumps({"name": name, "arguments": arguments})}\n</tool_call>'


def path_row(name: str, n: int, timing: Timing, metric: str, value: float, steps: int, sdk: float | None = None,
             goal_key: str | None = None, **extra: Any) -> dict[str, Any]:
    """One path: its value, its goal and verdict, and the SDK's value beside it when measured."""
    op, goal = GOALS[goal_key or name]
    passed = value <= goal if op == "<=" else value >= goal
    unit = "s" if metric == "s" else metric
    return row(name, n, timing, metric, value, f"{op} {goal:,g} {unit}", passed, sdk_value=sdk,
               cpu_us_per_step=1e6 * statistics.median(timing.cpus) / steps, steps_per_repeat=steps, **extra)


# -- the merged 100 ms call over stdio ------------------------------------------------------------------------

async def merged_timing(n: int, repeats: int) -> Timing:
    batch = make_batch(stdio_sleep_config(True), n)
    try:
        action = [sleep_action(SLEEP_MS)] * n

        async def step() -> None:
            results = await batch.astep(action)
            if any(r is None or "slept" not in r.observation for r in results):
                raise RuntimeError("a sleep call failed")
        return await timed_repeats(repeats, lambda: batch.areset(seeds=list(range(n))), step)
    finally:
        batch.close()


async def sdk_stdio_gather_s(n: int, repeats: int, command: list[str], ms: int = SLEEP_MS) -> float:
    """Median seconds of ``n`` concurrent ``call_tool("sleep")`` through one plain SDK stdio ``Client``."""
    from mcp import Client, StdioServerParameters

    async with Client(StdioServerParameters(command=command[0], args=command[1:])) as client:
        await client.list_tools()

        async def calls() -> None:
            await asyncio.gather(*(client.call_tool("sleep", {"ms": ms}) for _ in range(n)))
        return statistics.median((await timed_repeats(repeats, None, calls)).walls)


def sleep_command() -> list[str]:
    return [sys.executable, "-m", "rlfactory_tool_servers.sleep"]


def merged_rows(context: BenchContext) -> list[dict[str, Any]]:
    rows = []
    for n in ([64] if context.quick else [4096, 16384]):
        repeats = context.repeats if n <= 4096 else min(context.repeats, 3)
        timing = asyncio.run(merged_timing(n, repeats))
        sdk = asyncio.run(sdk_stdio_gather_s(n, 1, sleep_command())) if context.compare_sdk else None
        rows.append(path_row("merged_stdio", n, timing, "s", statistics.median(timing.walls), n, sdk,
                             f"merged_stdio@{4096 if n <= 4096 else 16384}", floor_value=FLOOR_S))
    return rows


# -- a user's functions, no tool call, the env's own overhead -----------------------------------------------

async def batch_rate(batch: EnvBatch, action: str, rounds: int, repeats: int) -> Timing:
    await batch.areset(seeds=list(range(len(batch))))
    actions = [action] * len(batch)

    async def steps() -> None:
        for _ in range(rounds):
            await batch.astep(actions)
    return await timed_repeats(repeats, None, steps)


def batch_row(name: str, batch: EnvBatch, action: str, rounds: int, context: BenchContext,
              sdk: float | None = None) -> dict[str, Any]:
    try:
        timing = asyncio.run(batch_rate(batch, action, rounds, context.repeats))
    finally:
        batch.close()
    steps = len(batch) * rounds
    return path_row(name, len(batch), timing, "steps/s", steps / statistics.median(timing.walls), steps, sdk)


async def sdk_inprocess_rate(fn: Any, n: int, repeats: int) -> float:
    """Calls/s of ``n`` concurrent ``call_tool`` of ``fn`` as a plain ``MCPServer`` tool, in process."""
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("functions")
    server.add_tool(fn)
    async with Client(server) as client:
        await client.list_tools()

        async def calls() -> None:
            await asyncio.gather(*(client.call_tool(fn.__name__, {"a": 2, "b": 3}) for _ in range(n)))
        return n / statistics.median((await timed_repeats(repeats, None, calls)).walls)


def function_rows(context: BenchContext, n: int, rounds: int) -> list[dict[str, Any]]:
    rows = []
    for name, fn in (("sync_function", add), ("async_function", add_async)):
        sdk = asyncio.run(sdk_inprocess_rate(fn, n, context.repeats)) if context.compare_sdk else None
        batch = EnvBatch.make("rlf/MCP-v0", n, tools=[fn], max_turns=1_000_000)
        rows.append(batch_row(name, batch, call_text(fn.__name__, {"a": 2, "b": 3}), rounds, context, sdk))
    return rows


def overhead_rows(context: BenchContext, n: int, rounds: int) -> list[dict[str, Any]]:
    config = inprocess_sleep_config()
    return [batch_row("no_tool_call", make_batch(config, n, max_turns=1_000_000), "Let me think about it.",
                      rounds * NO_TOOL_ROUNDS_X, context),
            batch_row("env_overhead", make_batch(config, n, max_turns=1_000_000), sleep_action(0), rounds, context)]


def android_row(context: BenchContext, n: int, rounds: int) -> dict[str, Any]:
    from rlfactory_envs.android.bench import CYCLE

    first = gym.make("rlf/Android-v0", max_turns=1_000_000).unwrapped
    batch = EnvBatch([first] + [first.sibling() for _ in range(n - 1)])
    actions = [call_text(name, arguments) for name, arguments in CYCLE]
    try:
        asyncio.run(batch.areset(seeds=list(range(n))))

        async def steps() -> None:
            for turn in range(rounds):
                await batch.astep([actions[turn % len(actions)]] * n)
        timing = asyncio.run(timed_repeats(min(context.repeats, 3), None, steps))
    finally:
        batch.close()
    return path_row("android", n, timing, "steps/s", n * rounds / statistics.median(timing.walls), n * rounds)


# -- one env alone over stdio, and a third-party server ------------------------------------------------------

def single_env_row(context: BenchContext, steps: int) -> dict[str, Any]:
    env = SleepingSearchEnv(tool_servers=stdio_sleep_config(True), max_turns=1_000_000)
    try:
        env.reset(seed=0)
        action = sleep_action(0)

        def run() -> None:
            for _ in range(steps):
                env.step(action)
        timing = timed_repeats_sync(context.repeats, run)
    finally:
        env.close()
    sdk = None
    if context.compare_sdk:
        sdk = asyncio.run(sdk_sequential_rate(steps, context.repeats))
    return path_row("single_env_stdio", 1, timing, "steps/s", steps / statistics.median(timing.walls), steps, sdk,
                    floor_value=1 / hop_round_trip_s(steps))


async def sdk_sequential_rate(calls: int, repeats: int) -> float:
    from mcp import Client, StdioServerParameters

    command = sleep_command()
    async with Client(StdioServerParameters(command=command[0], args=command[1:])) as client:
        await client.list_tools()

        async def run() -> None:
            for _ in range(calls):
                await client.call_tool("sleep", {"ms": 0})
        return calls / statistics.median((await timed_repeats(repeats, None, run)).walls)


def third_party_row(context: BenchContext, n: int) -> dict[str, Any]:
    entry = {"command": sys.executable, "args": [str(PLAIN_SERVER)], **THIRD_PARTY_POOL}
    calls = [ToolCall("sleep", {"ms": SLEEP_MS}, call_id=i) for i in range(n)]
    with Toolbox({"mcpServers": {"plain": entry}}) as toolbox:
        def run() -> None:
            if any(r.is_error for r in toolbox.call_many(calls)):
                raise RuntimeError("a call to the third-party server failed")
        servers = ChildrenCpu()
        timing = timed_repeats_sync(min(context.repeats, 3), run)
        server_cpu_s = servers.take()
    wall = statistics.median(timing.walls)
    sdk = None
    if context.compare_sdk:
        sdk = asyncio.run(sdk_stdio_gather_s(n, 1, [sys.executable, str(PLAIN_SERVER)]))
    result = row("third_party", n, timing, "s", wall, f">= {THIRD_PARTY_GOAL_X:g}x faster than the plain SDK",
                 None if sdk is None else sdk / wall >= THIRD_PARTY_GOAL_X, sdk_value=sdk,
                 cpu_us_per_step=1e6 * statistics.median(timing.cpus) / n, steps_per_repeat=n, pool=THIRD_PARTY_POOL)
    if server_cpu_s:  # None where /proc does not list children
        per_run_s = server_cpu_s / (len(timing.walls) + 1)  # the warm-up ran the n calls too
        cores = os.cpu_count() or 1
        result.update(server_cpu_us_per_call=1e6 * per_run_s / n, floor_cores=cores, floor_value=per_run_s / cores)
    return result


def floor_notes(rows: list[dict[str, Any]]) -> list[str]:
    """What the floors of the single env and the third-party server say of their goals."""
    by = {r["name"]: r for r in rows}
    notes = []
    single = by.get("single_env_stdio")
    if single is not None:
        notes.append(f"paths: single_env_stdio's floor, a thread hop and a child's echo with no MCP, is "
                     f"{single['floor_value']:,.0f} round trips/s on this machine")
    third = by.get("third_party")
    if third is not None and "floor_value" in third:
        line = (f"paths: third_party's servers spend {third['server_cpu_us_per_call'] / 1000:.2f} cpu ms a call: "
                f"{third['n']:,} calls take {third['floor_value']:.2f} s on {third['floor_cores']} cores at least")
        sdk = third.get("sdk_value")
        if sdk:
            line += f"; the plain SDK's {sdk:.2f} s is {sdk / third['floor_value']:.2f}x that"
        notes.append(line)
    return notes


def bench_paths(context: BenchContext) -> tuple[list[dict[str, Any]], list[str]]:
    """Every path of the module docstring (small N and 1 repeat with ``--quick``)."""
    quick = context.quick
    n, rounds = (64, 2) if quick else (1024, 5)
    rows = [*merged_rows(context), *function_rows(context, n, rounds), *overhead_rows(context, n, rounds),
            single_env_row(context, 50 if quick else 1000), third_party_row(context, 64 if quick else 4096),
            android_row(context, 64 if quick else 1000, 4 if quick else 10)]
    notes = [f"paths: the floor of merged_stdio is one {SLEEP_MS} ms call ({FLOOR_S:g} s)", *floor_notes(rows)]
    if not context.compare_sdk:
        notes.append("paths: --compare-sdk adds the plain MCP SDK's value of each path beside ours (minutes more)")
    return rows, notes
