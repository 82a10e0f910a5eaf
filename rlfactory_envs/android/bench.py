"""``rlf bench --only android``: simulated phones at batch scale.

- ``android_steps``: env steps/s of N ``rlf/Android-v0`` envs (1,000; 64 with ``--quick``) in one ``EnvBatch`` over
  the in-process android server, every env acting each step (a cycle of open_app, scroll, click, input_text,
  navigate_back, navigate_home over a mix of templates), merged into ``*_batch`` requests; ``cpu_ms_per_step``
  is process CPU per env step (the whole stack runs on one core: the env, the toolbox loop and the server).
  ``android_steps_unmerged``: the same with ``"batching": false`` (one MCP request per action, at most 256 envs,
  one repeat). Target: at least 5,000 steps/s.
- ``android_device_steps``: actions/s of the phone alone (``actions.perform`` then the screen's text), no MCP.
- ``android_memory``: bytes per phone held by the server (``tracemalloc`` over opening N phones in a
  ``DeviceStore``, the templates mixed), and the process's RSS growth per env of the batch above (env, phone,
  session and toolbox state together). Target: under 200 KB per phone.

At most 3 timed repeats. Run alone: ``python -m rlfactory_envs.android.bench [--n 1000] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import statistics
import sys
import tracemalloc
from typing import Any

import gymnasium as gym

import rlfactory_envs  # noqa: F401
from rlfactory_envs import EnvBatch
from rlfactory_envs.benchmarking import BenchContext, Timing, row
from rlfactory_tool_servers.android.sessions import DeviceStore
from rlfactory_tool_servers.android.phone.actions import perform
from rlfactory_tool_servers.android.phone.device import DeviceError
from rlfactory_tool_servers.android.phone.tasks import all_templates

CYCLE = [("open_app", {"app_name": "Contacts"}), ("scroll", {"direction": "down"}), ("click", {"index": 3}),
         ("navigate_back", {}), ("input_text", {"index": 1, "text": "a"}), ("navigate_home", {}),
         ("open_app", {"app_name": "Settings"}), ("click", {"index": 2}), ("navigate_back", {}),
         ("navigate_home", {})]
TARGET_STEPS_PER_S = 5_000
TARGET_BYTES_PER_DEVICE = 200_000
MAX_REPEATS = 3


def _call(name: str, arguments: dict[str, Any]) -> str:
    return f'<tool_call>{json.dumps({"name": name, "arguments": arguments})}</tool_call>'


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def env_steps(n: int, turns: int, repeats: int, batching: bool) -> tuple[dict[str, Any], float]:
    """The batched-steps row, and the RSS growth per env of making and resetting the batch."""
    gc.collect()
    before = _rss_bytes()
    servers = {"mcpServers": {"android": {"module": "rlfactory_tool_servers.android", "batching": batching}}}
    batch = EnvBatch([gym.make("rlf/Android-v0", tool_servers=servers, max_turns=10_000).unwrapped
                      for _ in range(n)])
    actions = [_call(name, arguments) for name, arguments in CYCLE]
    timing = Timing()
    try:
        asyncio.run(batch.areset(seeds=list(range(n))))
        per_env = (_rss_bytes() - before) / n
        for repeat in range(repeats + 1):
            with timing.measure(keep=repeat > 0):  # the first round warms up
                for turn in range(turns):
                    asyncio.run(batch.astep([actions[turn % len(actions)]] * n))
    finally:
        for env in batch.envs:
            env.close()
    return steps_row(n, turns, timing, batching), per_env


def steps_row(n: int, turns: int, timing: Timing, batching: bool) -> dict[str, Any]:
    """``android_steps`` (with its target) or ``android_steps_unmerged``."""
    steps = n * turns
    rate = steps / statistics.median(timing.walls)
    name = "android_steps" if batching else "android_steps_unmerged"
    target = f">= {TARGET_STEPS_PER_S:,} steps/s" if batching else "-"
    return row(name, n, timing, "steps/s", rate, target, rate >= TARGET_STEPS_PER_S if batching else None,
               cpu_ms_per_step=1000 * statistics.median(timing.cpus) / steps, turns=turns)


def device_steps(n_actions: int, repeats: int) -> dict[str, Any]:
    """``android_device_steps``: ``n_actions`` actions over 64 phones, no MCP."""
    store = DeviceStore()
    templates = all_templates()
    sessions = [store.open(str(i), templates[i % len(templates)].name, i, None, "t3a") for i in range(64)]
    timing = Timing()
    for repeat in range(repeats + 1):
        with timing.measure(keep=repeat > 0):
            for i in range(n_actions):
                session = sessions[i % len(sessions)]
                name, arguments = CYCLE[(i // len(sessions)) % len(CYCLE)]
                try:
                    perform(session.device, name, arguments)
                except DeviceError:
                    pass
                session.screen()
    return row("android_device_steps", n_actions, timing, "actions/s", n_actions / statistics.median(timing.walls))


def device_memory(n: int) -> dict[str, Any]:
    """``android_memory``: the bytes ``tracemalloc`` sees held per phone after opening ``n`` of them."""
    templates = all_templates()
    store = DeviceStore()
    for i in range(8):  # imports, caches and the apps' first renders are not per phone
        store.open(f"warm{i}", templates[i % len(templates)].name, i, None, "t3a").screen()
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.take_snapshot()
    timing = Timing()
    with timing.measure():
        for i in range(n):
            store.open(str(i), templates[i % len(templates)].name, i, None, "t3a").screen()
    gc.collect()
    grown = sum(stat.size_diff for stat in tracemalloc.take_snapshot().compare_to(start, "filename"))
    tracemalloc.stop()
    per_device = grown / n
    return row("android_memory", n, timing, "bytes/phone", per_device,
               f"< {TARGET_BYTES_PER_DEVICE // 1000} KB/phone", per_device < TARGET_BYTES_PER_DEVICE)


def measure_android(quick: bool, repeats: int, n: int | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Every android row (see the module docstring) with ``n`` envs and ``repeats`` timed repeats, and notes."""
    n = n or (64 if quick else 1000)
    turns = 10 if quick else 20
    batched, per_env = env_steps(n, turns, repeats, batching=True)
    unmerged, _ = env_steps(min(n, 256), turns, 1, batching=False)
    memory = device_memory(n)
    memory["rss_bytes_per_env"] = per_env
    rows = [batched, unmerged, device_steps(2_000 if quick else 20_000, repeats), memory]
    notes = [f"android: RSS growth per env of the batch (env + phone + sessions): {per_env / 1000:,.0f} KB",
             f"android: merged vs unmerged steps/s: {batched['value'] / unmerged['value']:.1f}x "
             f"(unmerged at N={unmerged['n']})"]
    return rows, notes


def bench_android(context: BenchContext) -> tuple[list[dict[str, Any]], list[str]]:
    """``rlf bench --only android``: the rows and notes of ``measure_android``, at most 3 repeats."""
    return measure_android(context.quick, min(context.repeats, MAX_REPEATS))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlfactory_envs.android.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=None, help="envs in the batch (default 1000; 64 with --quick)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    rows, notes = measure_android(args.quick, args.repeats, args.n)
    for r in rows:
        print(f"{r['name']:<24} N={r['n']:<6} {r['value']:>12,.1f} {r['metric']:<12} {r['target']}")
    print("\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
