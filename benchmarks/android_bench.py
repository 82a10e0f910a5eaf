"""``rlf bench --only android``: simulated phones at batch scale.

- ``android_steps``: env steps/s of N ``rlf/Android-v0`` envs (default 1,000) in one ``EnvBatch`` over the
  in-process android server, every env acting each step (a cycle of open_app, scroll, click, input_text,
  navigate_back, navigate_home over a mix of templates), merged into ``*_batch`` requests; ``cpu_ms_per_step``
  is process CPU per env step (the whole stack runs on one core: the env, the toolbox loop and the server).
  ``android_steps_unmerged``: the same with ``"batching": false`` (one MCP request per action). Target: at least
  5,000 steps/s.
- ``android_device_steps``: actions/s of the phone alone (``actions.perform`` then the screen's text), no MCP.
- ``android_memory``: bytes per phone held by the server (``tracemalloc`` over opening N phones in a
  ``DeviceStore``, the templates mixed), and the process's RSS growth per env of the batch above (env, phone,
  session and toolbox state together). Target: under 200 KB per phone.

Run alone: ``python -m benchmarks.android_bench [--n 1000] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import statistics
import sys
import time
import tracemalloc
from typing import Any

import gymnasium as gym

import rlfactory_envs  # noqa: F401
from rlfactory_envs import EnvBatch
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


def _call(name: str, arguments: dict[str, Any]) -> str:
    return f'<tool_call>{json.dumps({"name": name, "arguments": arguments})}</tool_call>'


def _row(name: str, n: int, walls: list[float], cpus: list[float], metric: str, value: float, target: str = "-",
         passed: bool | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "n": n, "seconds": walls, "median_s": statistics.median(walls), "min_s": min(walls),
            "metric": metric, "value": value, "target": target, "pass": passed, "cpu_seconds": cpus, **extra}


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
    walls, cpus = [], []
    try:
        asyncio.run(batch.areset(seeds=list(range(n))))
        per_env = (_rss_bytes() - before) / n
        for repeat in range(repeats + 1):
            wall, cpu = time.perf_counter(), time.process_time()
            for turn in range(turns):
                step = actions[turn % len(actions)]
                asyncio.run(batch.astep([step] * n))
            if repeat:  # the first round warms up
                walls.append(time.perf_counter() - wall)
                cpus.append(time.process_time() - cpu)
    finally:
        for env in batch.envs:
            env.close()
    steps = n * turns
    rate = steps / statistics.median(walls)
    name = "android_steps" if batching else "android_steps_unmerged"
    target = f">= {TARGET_STEPS_PER_S:,} steps/s" if batching else "-"
    return _row(name, n, walls, cpus, "steps/s", rate, target, rate >= TARGET_STEPS_PER_S if batching else None,
                cpu_ms_per_step=1000 * statistics.median(cpus) / steps, turns=turns), per_env


def device_steps(n_actions: int, repeats: int) -> dict[str, Any]:
    store = DeviceStore()
    templates = all_templates()
    sessions = [store.open(str(i), templates[i % len(templates)].name, i, None, "t3a") for i in range(64)]
    walls, cpus = [], []
    for repeat in range(repeats + 1):
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(n_actions):
            session = sessions[i % len(sessions)]
            name, arguments = CYCLE[(i // len(sessions)) % len(CYCLE)]
            try:
                perform(session.device, name, arguments)
            except DeviceError:
                pass
            session.screen()
        if repeat:
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
    return _row("android_device_steps", n_actions, walls, cpus, "actions/s", n_actions / statistics.median(walls))


def device_memory(n: int) -> dict[str, Any]:
    templates = all_templates()
    store = DeviceStore()
    for i in range(8):  # imports, caches and the apps' first renders are not per phone
        store.open(f"warm{i}", templates[i % len(templates)].name, i, None, "t3a").screen()
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.take_snapshot()
    wall = time.perf_counter()
    for i in range(n):
        store.open(str(i), templates[i % len(templates)].name, i, None, "t3a").screen()
    seconds = time.perf_counter() - wall
    gc.collect()
    grown = sum(stat.size_diff for stat in tracemalloc.take_snapshot().compare_to(start, "filename"))
    tracemalloc.stop()
    per_device = grown / n
    return _row("android_memory", n, [seconds], [seconds], "bytes/phone", per_device,
                f"< {TARGET_BYTES_PER_DEVICE // 1000} KB/phone", per_device < TARGET_BYTES_PER_DEVICE)


def bench_android(quick: bool, repeats: int, n: int | None = None) -> tuple[list[dict[str, Any]], list[str]]:
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.android_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=None, help="envs in the batch (default 1000; 64 with --quick)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    rows, notes = bench_android(args.quick, args.repeats, args.n)
    for r in rows:
        print(f"{r['name']:<24} N={r['n']:<6} {r['value']:>12,.1f} {r['metric']:<12} {r['target']}")
    print("\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
