"""``rlf bench``: how fast the env stack and its tool path are, measured end to end.

Measurements (each repeated ``--repeats`` times; the table shows the median and the min of the wall seconds). The
runner's own, in this file:

- ``sleep_stdio``: N SearchEnv trajectories (one ``EnvBatch``, one shared toolbox) each call the 100 ms ``sleep``
  tool of a real stdio subprocess in ONE timed ``await batch.astep(...)``. ``x floor`` is median / 0.1 s, the
  floor no implementation can beat. Targets: N=256 within 1.5x the floor (<= 0.150 s), N=4096 within 0.5 s.
  ``sleep_stdio_gc_on`` is the same with automatic garbage collection left on during the step
  (``EnvBatch(pause_gc=False)``), ``sleep_stdio_per_sample`` steps the same envs the way trainers do (one
  coroutine per sample, ``asyncio.gather`` of ``env.astep``, collector on), ``sleep_stdio_unmerged`` with
  ``"batching": false`` (one MCP request per call: the "before"), and ``sleep_sdk_baseline`` is the plain MCP SDK:
  one ``Client`` over stdio, N concurrent ``call_tool`` gathered.
- ``env_overhead``: the env's own cost per step, with an in-process sleep server and ``ms: 0``: steps/s of
  ``EnvBatch.astep`` over N envs, and of one env stepped in sequence (sync ``step`` and ``await astep``). The
  ``cpu_ms_per_step`` in the JSON is process CPU time per step: on a small shared machine it is steadier than
  wall time.
- ``rollout``: a full scripted rollout of ``rlf/Search-NQ-v0`` (``run_rollouts``): episodes/s (wall time of the
  whole call: envs made, search server started, every episode run) and mean reward (at most 3 repeats).

In a module of their own beside this file (each also runnable alone):

- ``judge``: the model judge (``benchmarks/judge_bench.py``): judged answers/s against a scripted chat endpoint of
  200 ms latency at concurrency 1, 16, 64 (the default) and 256, and the share of a GRPO-like batch (128 prompts x
  8 samples) answered by request coalescing or the cache (at most 3 repeats).
- ``soak``: 10,000 episodes across the families at concurrency 256 (``benchmarks/soak.py``, with the curves):
  RSS, descriptors, threads and child processes stay flat and throughput does not decay; the row passes when every
  check does, a note per check. About a minute on 2 cores; ``--quick``: 600 episodes.
- ``replicas``: one tool server as 1 HTTP replica against 4 (``benchmarks/replica_bench.py``): episodes/s and
  per-call tool latency p50/p99 of 4,096 scripted ``rlf/NL2SQL-Spider-v0`` trajectories in one ``EnvBatch`` over
  local SQL server processes, reached through an entry with ``urls``. About 2 minutes on 2 cores; ``--quick``: 128
  trajectories.
- ``env_service``: ``rlf serve env --protocol openenv`` against openenv-core's own server on comparable stubs, back
  to back (``benchmarks/env_service_bench.py``): sessions held at once (4,096), steps/s and steps per server CPU
  second, and 10,000 sessions opened and closed with the server's threads and descriptors flat. About 2 minutes;
  ``--quick``: 128 held, 400 churned.

And every family's, declared in its ``family.py`` (``Family.benches``) and described in its own module's docstring:
``search`` (``rlfactory_envs/search/bench.py``), ``search_scale`` (``rlfactory_envs/search/scale_bench.py``, about
45 minutes), ``sql`` (``rlfactory_envs/sql/bench.py``), ``sql_hostile`` (``rlfactory_envs/sql/hostile_bench.py``),
``travel`` (``rlfactory_envs/travel/bench.py``) and ``android`` (``rlfactory_envs/android/bench.py``). A
measurement is ``function(context) -> (rows, notes)`` (``rlfactory_envs.benchmarking.BenchContext``); it reads the
public reference data (Spider dev, wiki-18, TravelPlanner) from ``../shared/data`` beside this checkout when that
folder exists, else measures on the family's embedded sample and says so in a note.

Without ``--only``, every measurement declared ``default`` runs: all but ``search_scale`` (~45 minutes at its full
size), ``soak`` (a check for leaks rather than a speed), ``replicas`` (five server processes), ``env_service``
(two servers, openenv-core's needs the ``openenv`` extra) and ``sql_hostile`` (it loads the machine on purpose for a
minute).

Machines are shared and noisy: compare ratios (merged vs unmerged vs SDK, listed under the table and in the JSON)
rather than absolute seconds across runs. The JSON also keeps, per repeat, the process CPU seconds and the
cyclic-GC runs per generation (``gc_runs``): a slow repeat with gen-2 runs was paused by the collector.
``--quick`` shrinks every N and does one repeat (smoke test, CI).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlfactory_envs.benchmarking import (BenchContext, Timing, aligned, machine, row, timed_repeats,
                                         timed_repeats_sync)
from rlfactory_envs.kernel.batch import EnvBatch
from rlfactory_envs.kernel.families import BenchEntry, load_ref, tooling_of
from rlfactory_envs.registry import FAMILIES
from rlfactory_envs.search.env import SearchEnv

if not __package__:  # run as a script (`rlf bench`): the checkout's root makes the siblings' modules a package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SLEEP_MS = 100
FLOOR_S = SLEEP_MS / 1000
TARGETS_S = {256: 0.150, 4096: 0.5}
REFERENCE_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
"""The public reference data beside the checkout (Spider dev, wiki-18, TravelPlanner), when it is there."""


def sleep_action(ms: int) -> str:
    return f'<tool_call>\n{{"name": "sleep", "arguments": {{"ms": {ms}}}}}\n</tool_call>'


def stdio_sleep_config(batching: bool = True) -> dict[str, Any]:
    return {"mcpServers": {"sleep": {"command": sys.executable, "args": ["-m", "rlfactory_tool_servers.sleep"],
                                     "batching": batching}}}


def inprocess_sleep_config() -> dict[str, Any]:
    return {"mcpServers": {"sleep": {"module": "rlfactory_tool_servers.sleep"}}}


class SleepingSearchEnv(SearchEnv):
    """The search env's loop with a sleep tool in place of ``search``: its prompt is never read here."""

    prompt_tools = ()


def make_batch(config: dict[str, Any], n: int, pause_gc: bool = True, **kwargs: Any) -> EnvBatch:
    return EnvBatch([SleepingSearchEnv(tool_servers=config, **kwargs) for _ in range(n)], pause_gc=pause_gc)


# -- 1. sleep over stdio -------------------------------------------------------------------------------------

async def env_sleep_timing(config: dict[str, Any], n: int, repeats: int, pause_gc: bool = True) -> Timing:
    """Timing of one ``astep`` in which all ``n`` envs call the 100 ms sleep."""
    batch = make_batch(config, n, pause_gc=pause_gc)
    try:
        seeds = list(range(n))
        action = [sleep_action(SLEEP_MS)] * n

        async def step() -> None:
            failed = [r for r in await batch.astep(action) if r is None or "slept" not in r.observation]
            if failed:
                raise RuntimeError(f"{len(failed)} sleep calls failed, e.g. {failed[0]}")
        return await timed_repeats(repeats, lambda: batch.areset(seeds=seeds), step)
    finally:
        batch.close()


async def per_sample_sleep_timing(config: dict[str, Any], n: int, repeats: int) -> Timing:
    """The trainer's way: one coroutine per sample, ``n`` concurrent ``env.astep`` gathered (no ``EnvBatch``)."""
    envs = [SleepingSearchEnv(tool_servers=config) for _ in range(n)]
    try:
        action = sleep_action(SLEEP_MS)

        async def reset() -> None:
            await asyncio.gather(*(env.areset(seed=i) for i, env in enumerate(envs)))

        async def step() -> None:
            results = await asyncio.gather(*(env.astep(action) for env in envs))
            if any("slept" not in obs for obs, *_ in results):
                raise RuntimeError("a sleep call failed")
        return await timed_repeats(repeats, reset, step)
    finally:
        for env in envs:
            env.close()


async def sdk_sleep_timing(n: int, repeats: int) -> Timing:
    """The plain MCP SDK: one stdio ``Client``, ``n`` concurrent ``call_tool`` gathered."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "rlfactory_tool_servers.sleep"])
    async with Client(params) as client:
        async def calls() -> None:
            await asyncio.gather(*(client.call_tool("sleep", {"ms": SLEEP_MS}) for _ in range(n)))
        return await timed_repeats(repeats, None, calls)


async def sleep_stdio_rows(sizes: list[int], repeats: int) -> list[dict[str, Any]]:
    """``sleep_stdio`` and its comparisons at each of ``sizes``."""
    rows = []
    for n in sizes:
        target = TARGETS_S.get(n)
        merged = await env_sleep_timing(stdio_sleep_config(True), n, repeats)
        median = statistics.median(merged.walls)
        rows.append(row("sleep_stdio", n, merged, "x floor", median / FLOOR_S,
                        f"<= {target:.3f} s" if target else "-", median <= target if target else None))
        gc_on = await env_sleep_timing(stdio_sleep_config(True), n, repeats, pause_gc=False)
        per_sample = await per_sample_sleep_timing(stdio_sleep_config(True), n, repeats)
        unmerged = await env_sleep_timing(stdio_sleep_config(False), n, repeats)
        sdk = await sdk_sleep_timing(n, repeats)
        for name, timing in (("sleep_stdio_gc_on", gc_on), ("sleep_stdio_per_sample", per_sample),
                             ("sleep_stdio_unmerged", unmerged),
                             ("sleep_sdk_baseline", sdk)):
            rows.append(row(name, n, timing, "x floor", statistics.median(timing.walls) / FLOOR_S))
    return rows


def bench_sleep_stdio(context: BenchContext) -> tuple[list[dict[str, Any]], list[str]]:
    """``sleep_stdio``: N=256 and 4096 (32 with ``--quick``)."""
    return asyncio.run(sleep_stdio_rows([32] if context.quick else [256, 4096], context.repeats)), []


# -- 2. env overhead -----------------------------------------------------------------------------------------

def per_step(name: str, n: int, steps: int, timing: Timing) -> dict[str, Any]:
    return row(name, n, timing, "steps/s", steps / statistics.median(timing.walls),
               cpu_ms_per_step=1000 * statistics.median(timing.cpus) / steps, steps_per_repeat=steps)


async def bench_batched_overhead(n: int, rounds: int, repeats: int) -> dict[str, Any]:
    batch = make_batch(inprocess_sleep_config(), n, max_turns=1000)
    try:
        await batch.areset(seeds=list(range(n)))
        actions = [sleep_action(0)] * n

        async def steps() -> None:
            for _ in range(rounds):
                await batch.astep(actions)
        return per_step("env_overhead_batched", n, n * rounds, await timed_repeats(repeats, None, steps))
    finally:
        batch.close()


def bench_single_overhead(steps: int, repeats: int) -> list[dict[str, Any]]:
    env = SleepingSearchEnv(tool_servers=inprocess_sleep_config(), max_turns=steps * (repeats + 2) + 1)
    try:
        env.reset(seed=0)
        action = sleep_action(0)

        def sync_steps() -> None:
            for _ in range(steps):
                env.step(action)

        async def async_steps() -> None:
            for _ in range(steps):
                await env.astep(action)
        sync = timed_repeats_sync(repeats, sync_steps)
        env.reset(seed=0)
        asyn = asyncio.run(timed_repeats(repeats, None, async_steps))
        return [per_step("env_overhead_single_sync", 1, steps, sync),
                per_step("env_overhead_single_async", 1, steps, asyn)]
    finally:
        env.close()


def bench_env_overhead(context: BenchContext) -> tuple[list[dict[str, Any]], list[str]]:
    """``env_overhead``: 1,024 envs batched and 500 single steps (64 and 20 with ``--quick``)."""
    n, single_steps = (64, 20) if context.quick else (1024, 500)
    batched = asyncio.run(bench_batched_overhead(n, 3, context.repeats))
    return [batched, *bench_single_overhead(single_steps, context.repeats)], []


# -- 3. scripted rollout -------------------------------------------------------------------------------------

def rollout_row(n: int, batch_size: int, repeats: int) -> dict[str, Any]:
    """``rollout_scripted``: ``n`` episodes of the search family's baseline policy, ``batch_size`` at a time, their
    tasks drawn at random (more episodes than the sample has tasks)."""
    from rlfactory_envs.rollout.runner import run_rollouts

    timing, summaries = Timing(), []
    for _ in range(repeats):
        with timing.measure():
            summary, _ = asyncio.run(run_rollouts("rlf/Search-NQ-v0", lambda env: tooling_of(env).baseline_policy(env),
                                                  n=n, order="random", batch_size=batch_size, progress=False))
        summaries.append(summary.__dict__)
    return row("rollout_scripted", n, timing, "episodes/s", n / statistics.median(timing.walls),
               mean_reward=statistics.median(s["mean_reward"] for s in summaries), batch_size=batch_size,
               summaries=summaries)


def bench_rollout(context: BenchContext) -> tuple[list[dict[str, Any]], list[str]]:
    """``rollout``: 512 episodes 256 at a time, at most 3 repeats (32, 16 and 1 with ``--quick``)."""
    quick = context.quick
    return [rollout_row(32 if quick else 512, 16 if quick else 256, 1 if quick else min(context.repeats, 3))], []


# -- what runs -----------------------------------------------------------------------------------------------

Measurement = Callable[[BenchContext], tuple[list[dict[str, Any]], list[str]]]
"""What measures: ``function(context) -> (rows, notes)``."""

OWN_BENCHES = {"sleep_stdio": bench_sleep_stdio, "env_overhead": bench_env_overhead, "rollout": bench_rollout}
"""The runner's own measurements, in this file."""
SIBLING_BENCHES = {
    "judge": BenchEntry("benchmarks.judge_bench:bench_judge"),
    "soak": BenchEntry("benchmarks.soak:bench_soak", default=False),
    "replicas": BenchEntry("benchmarks.replica_bench:bench_replicas", default=False),
    "env_service": BenchEntry("benchmarks.env_service_bench:bench_env_service", default=False),
    "paths": BenchEntry("benchmarks.paths_bench:bench_paths"),
}
"""The measurements in a module of their own beside this file."""


def family_benches() -> dict[str, BenchEntry]:
    """Every family's declared measurements (``Family.benches``), in the families' order."""
    found: dict[str, BenchEntry] = {}
    for family in FAMILIES:
        taken = set(family.benches) & (set(found) | set(OWN_BENCHES) | set(SIBLING_BENCHES))
        if taken:
            raise ValueError(f"family {family.name} declares benchmark(s) {', '.join(sorted(taken))}, taken already")
        found.update(family.benches)
    return found


FAMILY_BENCHES = family_benches()
NAMES = (*OWN_BENCHES, *FAMILY_BENCHES, *SIBLING_BENCHES)
"""Every measurement, in the order they run."""
DEFAULT_NAMES = (*OWN_BENCHES, *(name for name, entry in {**FAMILY_BENCHES, **SIBLING_BENCHES}.items()
                                 if entry.default))
"""What runs without ``--only`` (see the module docstring)."""


def measurement(name: str) -> Measurement:
    """The function that measures ``name``: ``function(context) -> (rows, notes)``."""
    if name in OWN_BENCHES:
        return OWN_BENCHES[name]
    return load_ref({**FAMILY_BENCHES, **SIBLING_BENCHES}[name].function)


def reference_data_dir() -> Path | None:
    """``REFERENCE_DATA`` when the checkout has it beside it."""
    return REFERENCE_DATA if REFERENCE_DATA.is_dir() else None


# -- report --------------------------------------------------------------------------------------------------

def ratios(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Speed-ups that stay meaningful on a noisy machine: merged vs unmerged vs the SDK, batched vs single."""
    by = {(r["name"], r["n"]): r for r in rows}
    out: dict[str, float] = {}
    for (name, n), r in by.items():
        if name == "sleep_stdio":
            for other in ("sleep_stdio_gc_on", "sleep_stdio_per_sample", "sleep_stdio_unmerged", "sleep_sdk_baseline"):
                if (other, n) in by:
                    out[f"{other}/sleep_stdio@{n}"] = by[(other, n)]["median_s"] / r["median_s"]
        if name.startswith(("search_", "sql_", "travel_")) and not name.endswith("_unmerged") and (f"{name}_unmerged", n) in by:
            out[f"{name}/{name}_unmerged@{n}"] = r["value"] / by[(f"{name}_unmerged", n)]["value"]
        if r.get("sdk_value"):  # a path against the plain SDK: how many times faster ours is
            out[f"{name}/plain_sdk@{n}"] = faster(r["value"], r["sdk_value"], r["metric"])
        if r.get("floor_value"):  # a path against its floor: the share of the floor's speed it reaches
            out[f"{name}/floor@{n}"] = faster(r["value"], r["floor_value"], r["metric"])
        if name.startswith("sql_reward") and not name.endswith("_single_db") and (f"{name}_single_db", n) in by:
            out[f"{name}/{name}_single_db@{n}"] = r["value"] / by[(f"{name}_single_db", n)]["value"]
    replicated = sorted((r for (name, _), r in by.items() if name.startswith("replicas_")), key=lambda r: r["replicas"])
    if len(replicated) > 1:
        out[f"{replicated[-1]['name']}/{replicated[0]['name']}@{replicated[0]['n']}"] = \
            replicated[-1]["value"] / replicated[0]["value"]
    single = [r for (name, _), r in by.items() if name == "env_overhead_single_async"]
    batched = [r for (name, _), r in by.items() if name == "env_overhead_batched"]
    if single and batched:
        out["env_overhead_batched/single_async"] = batched[0]["value"] / single[0]["value"]
    return out


def faster(value: float, other: float, metric: str) -> float:
    """How many times faster ``value`` is than ``other`` (seconds, or a rate)."""
    return other / value if metric == "s" else value / other


def format_table(rows: list[dict[str, Any]]) -> str:
    header = ("measurement", "N", "median s", "min s", "value", "target", "result")
    sdk = any(r.get("sdk_value") is not None for r in rows)
    floor = any(r.get("floor_value") is not None for r in rows)
    lines = [header + (("plain MCP SDK",) if sdk else ()) + (("floor",) if floor else ())]
    for r in rows:
        verdict = "-" if r["pass"] is None else ("PASS" if r["pass"] else "FAIL")
        value = f"{r['value']:,.2f} {r['metric']}"
        if "cpu_ms_per_step" in r:
            value += f" ({r['cpu_ms_per_step']:.3f} cpu ms/step)"
        if "ms_per_answer" in r:
            value += f" ({r['ms_per_answer']:.2f} ms, {r['cpu_ms_per_answer']:.2f} cpu ms an answer)"
        if "cpu_us_per_step" in r:
            value += f" ({r['cpu_us_per_step']:.1f} cpu us/step)"
        if "mean_reward" in r:
            value += f" (reward {r['mean_reward']:.3f})"
        line = (r["name"], str(r["n"]), f"{r['median_s']:.4f}", f"{r['min_s']:.4f}", value, r["target"], verdict)
        for shown, key in ((sdk, "sdk_value"), (floor, "floor_value")):
            if shown:
                line += ("-" if r.get(key) is None else f"{r[key]:,.2f} {r['metric']}",)
        lines.append(line)
    return aligned(lines)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="rlf bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small N and one repeat (smoke test, CI)")
    parser.add_argument("--only", default=",".join(DEFAULT_NAMES),
                        help=f"comma-separated subset of {', '.join(NAMES)} (default: all but "
                             f"{', '.join(name for name in NAMES if name not in DEFAULT_NAMES)})")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed repeats per measurement (default 5; 1 with --quick)")
    parser.add_argument("--out", default="bench_results/bench.json", help="JSON results file")
    parser.add_argument("--compare-sdk", action="store_true",
                        help="also measure the plain MCP SDK doing the same calls, beside each path of 'paths' (minutes "
                             "more: 16,384 calls through the SDK take tens of seconds)")
    args = parser.parse_args(argv)
    args.only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(args.only) - set(NAMES))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(NAMES)}")
    if args.repeats is None:
        args.repeats = 1 if args.quick else 5
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return args


def run_selected(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows and notes of every measurement of ``args.only``, in ``NAMES``' order."""
    context = BenchContext(args.quick, args.repeats, reference_data_dir(), args.compare_sdk)
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for name in NAMES:
        if name in args.only:
            found_rows, found_notes = measurement(name)(context)
            rows, notes = rows + found_rows, notes + found_notes
    return rows, notes


def main(argv: list[str]) -> int:
    args = parse_args(list(argv))
    measured_on = machine()
    rows, notes = run_selected(args)
    speedups = ratios(rows)
    print(f"machine: {measured_on['cpu']}, {measured_on['cores']} cores, load {measured_on['load_1min']} at the start, "
          f"Python {measured_on['python']}")
    print(format_table(rows))
    for key, value in speedups.items():
        print(f"ratio {key}: {value:.2f}x")
    for note in notes:
        print(f"note: {note}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {"quick": args.quick, "repeats": args.repeats, "floor_s": FLOOR_S, "results": rows,
              "ratios": speedups, "notes": notes, "python": sys.version.split()[0], "machine": measured_on}
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
