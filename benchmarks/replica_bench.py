"""``rlf bench --only replicas``: one tool server as 1 HTTP replica against 4, under a batch of trajectories.

N ``rlf/NL2SQL-Spider-v0`` trajectories (default 4,096; Spider dev, ``spider/dev.json`` of the reference data
folder, when there is one; else the embedded sample) in ONE ``EnvBatch``, played to their ends by the family's
scripted policy (list the tables, describe one, look at its rows, answer: three ``run_query``-like calls an
episode, no model) through the rollout loop's batch step (``run_episodes``). The SQL server runs as R local
processes (``python -m rlfactory_tool_servers.sql --db-dir DIR --transport http``), reached through one
``mcpServers`` entry with ``urls`` (the toolbox spreads the calls over the replicas; merging into ``*_batch``
requests stays on). R is 1 (a plain ``url`` entry, the setup without replicas), then ``--replicas`` (4).

Rows ``replicas_1`` and ``replicas_R``: episodes/s (median over ``--repeats`` rounds, after one warm-up round),
and per tool call the wall time from the call to its answer as the env records it (p50 / p99 over every call of
the timed rounds: what a trajectory's step waits for its tool), plus CPU seconds per round of this process and of
the servers together. The ratio R vs 1 is in the notes and the JSON. The reward runs with ``test_suite="off"``
(the answer on the task's own database) so that the work measured is the servers', not the reward's; the
servers' query deadline is 60 s (``--timeout-s``), so that no query is dropped while it waits in a long queue.

The servers are CPU bound (SQLite and the MCP/JSON work per request): replicas help up to the cores the machine
has left beside the client process. On a 2-core machine expect well under 4x.

Run alone: ``python -m benchmarks.replica_bench [--n 4096] [--replicas 4] [--data-dir DIR] [--quick]``; in ``rlf
bench`` (``bench_replicas``): at most 3 repeats.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from rlfactory_envs.benchmarking import BenchContext, aligned
from rlfactory_envs.env_spec import make_env
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.families import tooling_of
from rlfactory_envs.rollout.runner import run_episodes
from rlfactory_envs.sql.bench import spider_dev, sql_db_dir

ENV_ID = "rlf/NL2SQL-Spider-v0"
MAX_REPEATS = 3
URL_RE = re.compile(r"over streamable HTTP at (http://\S+);")
START_TIMEOUT_S = 60.0


class Replica:
    """One SQL server process over HTTP on a free port; ``url`` once its start line says it listens."""

    def __init__(self, db_dir: str) -> None:
        # A query's deadline (5 s by default) counts its wait for a worker: 4,096 queries queued at one replica of
        # a loaded machine would pass it, and the two settings would no longer do the same work.
        command = [sys.executable, "-m", "rlfactory_tool_servers.sql", "--db-dir", db_dir, "--timeout-s", "60",
                   "--transport", "http", "--port", "0", "--log-level", "warning"]
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
        self._url: str | None = None
        self._ready = threading.Event()
        self._lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:  # read to the end: a full pipe would block the server
            self._lines.append(line)
            if self._url is None and (found := URL_RE.search(line)):
                self._url = found.group(1)
                self._ready.set()
        self._ready.set()

    def url(self) -> str:
        self._ready.wait(START_TIMEOUT_S)
        if self._url is None:
            raise RuntimeError(f"the SQL server did not start (exit status {self.process.poll()}):\n"
                               + "".join(self._lines[-20:]))
        return self._url

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


@contextmanager
def replicas(count: int, db_dir: str) -> Iterator[list[Replica]]:
    """``count`` SQL servers, started together, stopped on exit."""
    with ExitStack() as stack:
        started = []
        for _ in range(count):
            replica = Replica(db_dir)
            stack.callback(replica.stop)
            started.append(replica)
        for replica in started:
            replica.url()
        yield started


def server_entry(urls: Sequence[str]) -> dict[str, Any]:
    """One replica: a plain ``url`` entry (the setup before replicas); several: ``urls``."""
    where = {"url": urls[0]} if len(urls) == 1 else {"urls": list(urls)}
    return {"mcpServers": {"sql": {**where, "timeout_s": 120, "connect_timeout_s": 60}}}


def data_settings(data_path: str | None) -> tuple[dict[str, Any], str]:
    """The env's data kwargs and the database folder its servers serve: of the questions file ``data_path`` (Spider
    dev), else of the embedded sample."""
    return ({"data_path": data_path} if data_path else {}), str(sql_db_dir(data_path).resolve())


async def play(envs: list[ToolEnv], rounds: int, first_seed: int) -> list[dict[str, Any]]:
    """``rounds`` rounds of one episode per env; per round its wall and CPU seconds, latencies and failures."""
    policy = tooling_of(envs[0]).baseline_policy(envs[0])
    outcomes = []
    for i in range(rounds):
        seeds = list(range(first_seed + i * len(envs), first_seed + (i + 1) * len(envs)))
        wall, cpu = time.perf_counter(), time.process_time()
        records = await run_episodes(ENV_ID, envs, seeds, policy)
        outcomes.append({"seconds": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
                         "latencies_s": [x for r in records for x in r.tool_latency_s],
                         "tool_calls": sum(r.tool_calls for r in records),
                         "tool_errors": sum(r.tool_errors for r in records),
                         "failed": sum(r.error is not None for r in records),
                         "mean_reward": sum(r.reward for r in records) / len(records)})
    return outcomes


def measure(n: int, count: int, repeats: int, data_path: str | None) -> dict[str, Any]:
    """The row of ``n`` trajectories over ``count`` replicas: one warm-up round, then ``repeats`` timed ones."""
    data, db_dir = data_settings(data_path)
    with replicas(count, db_dir) as servers:
        kwargs = {**data, "tool_servers": server_entry([s.url() for s in servers]), "test_suite": "off",
                  "record_timings": True}
        envs = [make_env(ENV_ID, **kwargs) for _ in range(n)]  # equal kwargs: one shared toolbox
        try:
            asyncio.run(play(envs, 1, 0))
            server_cpu = sum(s.cpu_seconds() for s in servers)
            timed = asyncio.run(play(envs, repeats, n))
            server_cpu = sum(s.cpu_seconds() for s in servers) - server_cpu
            tool_stats = envs[0].toolbox.stats()["totals"]  # warm-up round included
        finally:
            for env in envs:
                env.close()
    walls = [o["seconds"] for o in timed]
    latencies_ms = np.array([x for o in timed for x in o["latencies_s"]]) * 1000
    median = statistics.median(walls)
    return {"name": f"replicas_{count}", "n": n, "replicas": count, "seconds": walls, "median_s": median,
            "min_s": min(walls), "metric": "episodes/s", "value": n / median, "target": "-", "pass": None,
            "step_tool_ms_p50": float(np.percentile(latencies_ms, 50)),
            "step_tool_ms_p99": float(np.percentile(latencies_ms, 99)),
            "cpu_seconds": [o["cpu_s"] for o in timed], "server_cpu_s_per_round": server_cpu / repeats,
            "tool_calls": sum(o["tool_calls"] for o in timed), "tool_errors": sum(o["tool_errors"] for o in timed),
            "failed": sum(o["failed"] for o in timed), "toolbox_totals": tool_stats,
            "mean_reward": statistics.mean(o["mean_reward"] for o in timed),
            "data": "spider-dev" if data else "rlf-sql-sample"}


def compare_replicas(quick: bool, repeats: int, data_path: str | None, n: int | None = None,
                     many: int = 4) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows of 1 and ``many`` replicas under ``n`` trajectories (4,096; 128 with ``quick``), and notes."""
    n = n or (128 if quick else 4096)
    one, spread = measure(n, 1, repeats, data_path), measure(n, many, repeats, data_path)
    cores = len(os.sched_getaffinity(0))
    summary = (f"replicas: {many} vs 1 HTTP replica, {n} {ENV_ID} trajectories ({one['data']}): "
               f"{spread['value'] / one['value']:.2f}x episodes/s; step tool-call p50 {one['step_tool_ms_p50']:.0f} "
               f"-> {spread['step_tool_ms_p50']:.0f} ms, p99 {one['step_tool_ms_p99']:.0f} -> "
               f"{spread['step_tool_ms_p99']:.0f} ms; {cores} cores shared by the client and the servers")
    notes = [summary]
    for row in (one, spread):
        if row["tool_errors"] or row["failed"]:
            totals = row["toolbox_totals"]
            notes.append(f"replicas: {row['name']}: {row['tool_errors']} tool errors, {row['failed']} failed episodes "
                         f"(toolbox, warm-up included: {totals['timeouts']} timeouts, {totals['unavailable']} "
                         f"unavailable, {totals['errors']} errors)")
    return [one, spread], notes


def bench_replicas(context: BenchContext) -> tuple[list[dict[str, Any]], list[str]]:
    """``rlf bench --only replicas``: ``compare_replicas`` at most 3 repeats."""
    return compare_replicas(context.quick, min(context.repeats, MAX_REPEATS), spider_dev(context))


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    header = ("replicas", "N", "median s", "episodes/s", "step p50 ms", "step p99 ms", "client cpu s",
              "servers cpu s", "errors")
    lines = [header] + [(str(r["replicas"]), str(r["n"]), f"{r['median_s']:.2f}", f"{r['value']:.0f}",
                         f"{r['step_tool_ms_p50']:.1f}", f"{r['step_tool_ms_p99']:.1f}",
                         f"{statistics.median(r['cpu_seconds']):.2f}", f"{r['server_cpu_s_per_round']:.2f}",
                         str(r["tool_errors"] + r["failed"])) for r in rows]
    return aligned(lines)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.replica_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=None, help="trajectories in the batch (default 4096; 128 quick)")
    parser.add_argument("--replicas", type=int, default=4, help="replicas compared with 1 (default 4)")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds per setting (default 3)")
    parser.add_argument("--quick", action="store_true", help="128 trajectories, one round")
    parser.add_argument("--data-dir", type=Path, help="the reference data folder, read for spider/dev.json (default: "
                        "none, the embedded sample)")
    parser.add_argument("--out", default="bench_results/replicas.json", help="JSON results file")
    args = parser.parse_args(argv)
    rows, notes = compare_replicas(args.quick, 1 if args.quick else args.repeats,
                                   spider_dev(BenchContext(data_dir=args.data_dir)), args.n, args.replicas)
    print(format_table(rows))
    print("\n".join(f"note: {note}" for note in notes))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    ratio = rows[1]["value"] / rows[0]["value"]
    report = {"quick": args.quick, "results": rows, "ratios": {f"replicas_{args.replicas}/replicas_1": ratio},
              "notes": notes, "cores": len(os.sched_getaffinity(0)), "python": sys.version.split()[0]}
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
