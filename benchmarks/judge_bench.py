"""The model judge's own cost: judged answers/s against a scripted judge of fixed latency, and how much a GRPO batch
saves through the cache and request coalescing.

Run ``python -m benchmarks.judge_bench [--quick] [--out bench_results/judge_bench.json]`` (or ``python
benchmarks/judge_bench.py``). The judge is a chat-completions server in a process of its own (uvicorn, real HTTP on
loopback) that answers every request after ``--latency-ms`` (200 ms), as a busy vLLM would; the client is
``JudgeReward`` with its OpenAI client, so the numbers include HTTP, JSON, the prompt rendering and the parsing.

- ``judge_c{C}``: ``score_batch`` of N distinct answers at concurrency C (1, 16, 64 = the default, 256); N is 1,024,
  except 64 at C=1 (1,024 answers one at a time would take 205 s). ``x ideal`` is answers/s over the ceiling
  C / latency (the judge answering C at a time, the client costing nothing).
- ``judge_grpo``: a GRPO step's rewards: 128 prompts x 8 samples, at the default concurrency, where samples of one
  prompt repeat an answer the way a policy's do: in every prompt one answer is given by 3 or 4 of its 8 samples (3,
  3, 3, 4, 3, ...: 40% of the samples share their answer with another sample of their prompt), the rest are unique.
  ``hit rate``: the share of samples answered without a request of their own (coalesced onto an identical request
  in flight, or from the cache); ``requests`` is what went to the judge.
- ``judge_grpo_rescored``: the same 1,024 samples scored again (a second reward pass, e.g. a logging or eval hook):
  every verdict from the cache.

Each measurement is repeated ``--repeats`` times (default 3; 1 with ``--quick``) with a fresh ``JudgeReward`` (an
empty cache) and fresh answers, after one untimed warm-up. ``--quick`` uses a 20 ms judge and small N (smoke test).
``rlf bench --only judge`` (``bench_judge``): at most 3 repeats.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlfactory_envs.benchmarking import BenchContext, Timing, aligned, row

MAX_REPEATS = 3
CONCURRENCIES = (1, 16, 64, 256)
DEFAULT_CONCURRENCY = 64
PROMPTS, SAMPLES = 128, 8
SHARED_GROUPS = (3, 3, 3, 4, 3)  # per prompt in turn: how many of its 8 samples give its one repeated answer
MODEL = "bench-judge"


# -- the scripted judge (a process of its own) -------------------------------------------------------------------

def serve(port: int, latency_ms: float) -> None:
    """Run the scripted judge: every chat completion answered ``yes`` after ``latency_ms``."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    delay = latency_ms / 1000

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        await asyncio.sleep(delay)
        return JSONResponse({"id": "c", "object": "chat.completion", "created": 0, "model": body.get("model"),
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": "yes"}}],
                             "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    async def models(request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]),
                            Route("/v1/models", models, methods=["GET"])])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", backlog=4096)


@contextmanager
def scripted_judge(latency_ms: float) -> Iterator[str]:
    """The scripted judge in a subprocess; yields its base URL once it answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve", str(port),
                                "--latency-ms", str(latency_ms)], stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the scripted judge did not start (exit code {process.poll()})") from None
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- workloads ------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BenchTask:
    """A QA task as the judge's default fields read it."""

    task_id: str
    question: str
    golden_answers: tuple[str, ...]


def distinct_items(n: int, tag: str) -> list[Any]:
    from rlfactory_reward_models.base import RewardInput

    return [RewardInput(BenchTask(f"q{i}", f"Question {i} of run {tag}: who founded the city?", (f"Founder {i}",)),
                        f"candidate answer {i} of run {tag}") for i in range(n)]


def grpo_items(prompts: int, samples: int, tag: str) -> list[Any]:
    """``prompts`` x ``samples`` rewards to score; in prompt p, ``SHARED_GROUPS[p % 5]`` samples give one answer."""
    from rlfactory_reward_models.base import RewardInput

    items = []
    for p in range(prompts):
        task = BenchTask(f"p{p}", f"Question {p} of run {tag}: which river flows through the city?", (f"River {p}",))
        shared = min(SHARED_GROUPS[p % len(SHARED_GROUPS)], samples)
        for s in range(samples):
            answer = f"River {p}" if s < shared else f"sample {s} of prompt {p}: River {p + s}"
            items.append(RewardInput(task, answer))
    return items


def shared_share(items: list[Any]) -> float:
    """The share of samples whose answer another sample of the same prompt also gave."""
    counts: dict[tuple[str, str], int] = {}
    for it in items:
        counts[(it.task.task_id, it.answer)] = counts.get((it.task.task_id, it.answer), 0) + 1
    return sum(1 for it in items if counts[(it.task.task_id, it.answer)] > 1) / len(items)


# -- measurements ---------------------------------------------------------------------------------------------------

def judge(url: str, concurrency: int) -> Any:
    from rlfactory_reward_models.judge import JudgeReward

    return JudgeReward({"base_url": url, "model": MODEL, "concurrency": concurrency, "timeout_s": 120,
                        "max_retries": 0})


async def bench_throughput(url: str, concurrency: int, n: int, repeats: int, latency_s: float) -> dict[str, Any]:
    """``judge_c{concurrency}``: ``n`` distinct answers judged at ``concurrency``."""
    timing = Timing()
    for r in range(repeats + 1):  # round 0 warms up (connections, imports)
        reward, items = judge(url, concurrency), distinct_items(n, f"c{concurrency}-{r}")
        with timing.measure(keep=r > 0):
            results = await reward.score_batch(items)
        assert all(res.value == 1.0 for res in results), next(res.reason for res in results if res.value != 1.0)
        assert reward.stats()["requests"] == n
        await reward.aclose()
    rate = n / statistics.median(timing.walls)
    ideal = min(concurrency, n) / latency_s
    return row(f"judge_c{concurrency}", n, timing, "answers/s", rate, f"ideal {ideal:.0f}/s",
               concurrency=concurrency, ideal_per_s=ideal, x_ideal=rate / ideal,
               cpu_ms_per_answer=1000 * statistics.median(timing.cpus) / n)


async def bench_grpo(url: str, prompts: int, samples: int, repeats: int) -> list[dict[str, Any]]:
    """``judge_grpo`` (a GRPO step's rewards) and ``judge_grpo_rescored`` (the same again, from the cache)."""
    first, again = Timing(), Timing()
    stats: dict[str, int] = {}
    share = 0.0
    for r in range(repeats + 1):
        reward = judge(url, DEFAULT_CONCURRENCY)
        items = grpo_items(prompts, samples, f"grpo-{r}")
        share = shared_share(items)
        with first.measure(keep=r > 0):
            await reward.score_batch(items)
        stats = reward.stats()
        with again.measure(keep=r > 0):
            await reward.score_batch(items)
        await reward.aclose()
    n = len(items)
    hits = stats["cache_hits"] + stats["coalesced"]
    return [row("judge_grpo", n, first, "answers/s", n / statistics.median(first.walls), f"hit rate {hits / n:.1%}",
                hit_rate=hits / n, shared_share=share, requests=stats["requests"], coalesced=stats["coalesced"],
                cache_hits=stats["cache_hits"], prompts=prompts, samples=samples, concurrency=DEFAULT_CONCURRENCY),
            row("judge_grpo_rescored", n, again, "answers/s", n / statistics.median(again.walls), "hit rate 100.0%",
                hit_rate=1.0, cpu_ms_per_answer=1000 * statistics.median(again.cpus) / n)]


def measure_judge(quick: bool, repeats: int, latency_ms: float | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Every judge measurement (see the module docstring): rows in ``rlf bench``'s layout, and notes."""
    latency_ms = (20.0 if quick else 200.0) if latency_ms is None else latency_ms
    latency_s = latency_ms / 1000
    plan = [(4, 16), (64, 128)] if quick else [(c, 64 if c == 1 else 1024) for c in CONCURRENCIES]
    prompts = 16 if quick else PROMPTS

    async def run_all(url: str) -> list[dict[str, Any]]:
        rows = [await bench_throughput(url, c, n, 1 if c == 1 else repeats, latency_s) for c, n in plan]
        return rows + await bench_grpo(url, prompts, SAMPLES, repeats)

    with scripted_judge(latency_ms) as url:
        rows = asyncio.run(run_all(url))
    notes = [(f"scripted judge: {latency_ms:g} ms per reply, uvicorn in its own process; the default concurrency "
              f"is {DEFAULT_CONCURRENCY}")]
    grpo = next(r for r in rows if r["name"] == "judge_grpo")
    notes.append(f"judge_grpo: {grpo['shared_share']:.1%} of samples share an answer within their prompt; "
                 f"{grpo['requests']} requests for {grpo['n']} samples ({grpo['coalesced']} coalesced, "
                 f"{grpo['cache_hits']} cache hits)")
    return rows, notes


def bench_judge(context: BenchContext) -> tuple[list[dict[str, Any]], list[str]]:
    """``rlf bench --only judge``: ``measure_judge`` at most 3 repeats."""
    return measure_judge(context.quick, min(context.repeats, MAX_REPEATS))


def format_table(rows: list[dict[str, Any]]) -> str:
    header = ("measurement", "N", "median s", "min s", "value", "target / note")
    lines = [header]
    for r in rows:
        value = f"{r['value']:.1f} {r['metric']}"
        if "x_ideal" in r:
            value += f" ({r['x_ideal']:.2f}x ideal)"
        if "cpu_ms_per_answer" in r:
            value += f" ({r['cpu_ms_per_answer']:.3f} cpu ms/answer)"
        lines.append((r["name"], str(r["n"]), f"{r['median_s']:.3f}", f"{r['min_s']:.3f}", value, r["target"]))
    return aligned(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.judge_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a 20 ms judge, small N, one repeat (smoke test, CI)")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats per measurement (default 3; 1 "
                        "with --quick)")
    parser.add_argument("--latency-ms", type=float, default=None, help="the scripted judge's latency (default 200; "
                        "20 with --quick)")
    parser.add_argument("--out", default="bench_results/judge_bench.json", help="JSON results file")
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)  # the judge's own process
    args = parser.parse_args(argv)
    if args.serve is not None:
        serve(args.serve, 200.0 if args.latency_ms is None else args.latency_ms)
        return 0
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    if repeats < 1:
        parser.error("--repeats must be at least 1")
    rows, notes = measure_judge(args.quick, repeats, args.latency_ms)
    print(format_table(rows))
    for note in notes:
        print(f"note: {note}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {"quick": args.quick, "repeats": repeats, "results": rows, "notes": notes,
              "python": sys.version.split()[0], "cpus": os.cpu_count()}
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
