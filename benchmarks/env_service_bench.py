"""``rlf bench --only env_service``: ``rlf serve env --protocol openenv`` side by side with openenv-core's own server.

Both servers run as processes of their own, one after the other in the same run, each on a comparable stub: ours
serves ``rlf/MCP-v0`` (its embedded sample; the step is a plain response, which the env parses, answers with its
invalid-action feedback in the Qwen3 chat format and records), theirs ``benchmarks/openenv_stub_server.py --echo``
(an openenv-core ``Environment`` that echoes the message). The same client (the ``websockets`` library, in this
process) drives both over ``/ws``:

- ``held``: S sessions open at once (4,096; quick 128), each reset and stepped once while all are open; the row
  says how many the server held and its RSS and threads then.
- ``steps``: C sessions (2,048, openenv-core's published setting; quick 128) step as fast as they are answered for
  D seconds (15; quick 2): steps/s, and steps per second of the server's own CPU time (``/proc``), which is what
  "requests/s per core" compares on a machine the client shares (the client, in Python too, takes most of the
  wall time: the wall ratio understates the servers' difference). openenv-core's published figure is 2,048
  sessions at 932 requests/s on 8 cores. With few sessions (128) ours takes about 0.6 of their CPU a step (our
  stub really parses the response and writes the env's feedback; theirs echoes); openenv-core's server falls
  further behind as sessions grow (a thread pool per session).
- ``churn`` (ours): N sessions (10,000; quick 400) opened, reset, stepped and closed, 64 at a time; threads, file
  descriptors and open sessions of the server (``GET /rlf/stats``) before and after must match.

Runnable alone: ``python -m benchmarks.env_service_bench [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlfactory_envs.benchmarking import BenchContext, aligned

ROOT = Path(__file__).resolve().parents[1]
THEIR_SERVER = ROOT / "benchmarks" / "openenv_stub_server.py"
OUR_ENV = "rlf/MCP-v0"
PUBLISHED = "openenv-core's published figure: 2,048 sessions at 932 req/s on 8 cores (116 req/s per core)"


def _open_files() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Server:
    """A server process: its URL, and its CPU seconds, RSS and threads from ``/proc``."""

    def __init__(self, side: str, max_sessions: int):
        if side == "rlf":
            command = [sys.executable, "-m", "rlfactory_envs.cli", "serve", "env", OUR_ENV, "--protocol", "openenv",
                       "--port", "0", "--max-sessions", str(max_sessions), "--set", "max_turns=1000000"]
            pattern = re.compile(r"at (http://[^\s;]+)")
        else:
            command = [sys.executable, str(THEIR_SERVER), "--echo", "--max-sessions", str(max_sessions)]
            pattern = re.compile(r"listening on (\d+)")
        # Output goes to a file, never a pipe nobody reads: a server that logs much (openenv-core logs a traceback
        # for every client that goes away) would block on a full pipe.
        self.log = tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen(command, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT, text=True,
                                        preexec_fn=_open_files)
        deadline = time.monotonic() + 120
        while not (found := pattern.search(self._output())):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the {side} server did not start: {self._output()[-2000:]}")
            time.sleep(0.05)
        self.url = found.group(1) if side == "rlf" else f"http://127.0.0.1:{found.group(1)}"

    def _output(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def status(self, key: str) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
        return 0

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(15)
        self.log.close()


def action(side: str, text: str) -> dict[str, Any]:
    return {"response": text} if side == "rlf" else {"message": text}


async def _ask(socket: Any, frame: dict[str, Any]) -> dict[str, Any]:
    await socket.send(json.dumps(frame))
    return json.loads(await socket.recv())


async def held(side: str, url: str, sessions: int) -> tuple[int, Any]:
    """Open ``sessions`` connections, reset and step each while all are open; how many were served, and the open
    connections (closed by the caller after measuring the server)."""
    from websockets.asyncio.client import connect

    async def one(i: int) -> Any:
        try:
            socket = await connect(url.replace("http", "ws") + "/ws", open_timeout=120, max_size=None)
            reset = await asyncio.wait_for(_ask(socket, {"type": "reset", "data": {"seed": i}}), 300)
            step = await asyncio.wait_for(_ask(socket, {"type": "step", "data": action(side, "thinking")}), 300)
            return socket if reset["type"] == step["type"] == "observation" else None
        except Exception:  # noqa: BLE001 - a session the server did not hold
            return None

    sockets = []
    for start in range(0, sessions, 512):  # connect in waves: the listen backlog is the OS's
        sockets += await asyncio.gather(*(one(i) for i in range(start, min(sessions, start + 512))))
    return sum(s is not None for s in sockets), [s for s in sockets if s is not None]


async def stepping(side: str, url: str, sessions: int, seconds: float,
                   cpu_s: Any) -> tuple[int, int, float, float]:
    """Open ``sessions`` connections (in waves) and reset each; then all step back to back for ``seconds``. The
    steps answered, the sessions that stepped, and the wall and server CPU seconds (``cpu_s()``) of the stepping."""
    from websockets.asyncio.client import connect

    async def opened(i: int) -> Any:
        try:
            socket = await connect(url.replace("http", "ws") + "/ws", open_timeout=120, max_size=None)
            await asyncio.wait_for(_ask(socket, {"type": "reset", "data": {"seed": i}}), 300)
            return socket
        except Exception:  # noqa: BLE001 - a session the server did not take
            return None

    sockets: list[Any] = []
    for start in range(0, sessions, 256):
        sockets += await asyncio.gather(*(opened(i) for i in range(start, min(sessions, start + 256))))
    live = [socket for socket in sockets if socket is not None]
    counts = [0] * len(live)
    started, cpu_before = time.perf_counter(), cpu_s()
    stop = time.monotonic() + seconds

    async def one(i: int, socket: Any) -> None:
        frame = {"type": "step", "data": action(side, f"step of session {i}")}
        while time.monotonic() < stop:
            if (await _ask(socket, frame))["type"] != "observation":
                raise RuntimeError("a step failed")
            counts[i] += 1

    await asyncio.gather(*(one(i, socket) for i, socket in enumerate(live)))
    wall, cpu = time.perf_counter() - started, cpu_s() - cpu_before
    await asyncio.gather(*(socket.close() for socket in live), return_exceptions=True)
    return sum(counts), len(live), wall, cpu


def stats(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/rlf/stats", timeout=30) as reply:
        return json.load(reply)


async def churn(url: str, sessions: int, concurrency: int = 64) -> None:
    from websockets.asyncio.client import connect

    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate, connect(url.replace("http", "ws") + "/ws") as socket:
            await _ask(socket, {"type": "reset", "data": {"seed": i}})
            await _ask(socket, {"type": "step", "data": action("rlf", "a step")})

    await asyncio.gather(*(one(i) for i in range(sessions)))


def measure_side(side: str, held_n: int, step_n: int, seconds: float) -> list[dict[str, Any]]:
    """The ``held`` and ``steps`` rows of one server."""
    server = Server(side, max(held_n, step_n) + 64)
    try:
        started = time.perf_counter()
        count, sockets = asyncio.run(_held_then_measure(side, server, held_n))
        rows = [{"name": f"env_service_held_{side}", "n": held_n, "median_s": time.perf_counter() - started,
                 "min_s": time.perf_counter() - started, "value": count, "metric": "sessions held",
                 "rss_mib": sockets["rss_kib"] / 1024, "threads": sockets["threads"],
                 "target": ">= 4096 (ours)" if side == "rlf" else "-",
                 "pass": (count >= held_n) if side == "rlf" else None}]
        steps, live, wall, cpu = asyncio.run(stepping(side, server.url, step_n, seconds, server.cpu_s))
        rows.append({"name": f"env_service_steps_{side}", "n": step_n, "median_s": wall, "min_s": wall,
                     "value": steps / wall, "metric": "steps/s", "steps": steps, "sessions_stepping": live,
                     "server_cpu_s": cpu, "steps_per_server_cpu_s": steps / max(cpu, 1e-9), "target": "-",
                     "pass": None})
        return rows
    finally:
        server.stop()


async def _held_then_measure(side: str, server: Server, sessions: int) -> tuple[int, dict[str, int]]:
    count, sockets = await held(side, server.url, sessions)
    measured = {"rss_kib": server.status("VmRSS"), "threads": server.status("Threads")}
    await asyncio.gather(*(s.close() for s in sockets), return_exceptions=True)
    return count, measured


def measure_churn(sessions: int) -> dict[str, Any]:
    server = Server("rlf", 256)
    try:
        asyncio.run(churn(server.url, 64))  # warm up: first sessions build what every later one reuses
        before, started = stats(server.url), time.perf_counter()
        asyncio.run(churn(server.url, sessions))
        time.sleep(0.5)
        after, wall = stats(server.url), time.perf_counter() - started
        flat = (after["sessions"], after["threads"], after["open_fds"]) == (0, before["threads"], before["open_fds"])
        return {"name": "env_service_churn_rlf", "n": sessions, "median_s": wall, "min_s": wall,
                "value": sessions / wall, "metric": "sessions/s", "before": before, "after": after,
                "target": "threads, fds, sessions flat", "pass": flat}
    finally:
        server.stop()


def compare(quick: bool) -> tuple[list[dict[str, Any]], list[str]]:
    held_n, step_n, seconds, churn_n = (128, 128, 2.0, 400) if quick else (4096, 2048, 15.0, 10_000)
    _open_files()
    rows = measure_side("rlf", held_n, step_n, seconds) + measure_side("openenv", held_n, step_n, seconds)
    rows.append(measure_churn(churn_n))
    by = {row["name"]: row for row in rows}
    ours, theirs = by["env_service_steps_rlf"], by["env_service_steps_openenv"]
    per_core = ours["steps_per_server_cpu_s"] / theirs["steps_per_server_cpu_s"]
    ours["vs_openenv_per_server_cpu"], ours["vs_openenv_wall"] = per_core, ours["value"] / theirs["value"]
    ours["target"], ours["pass"] = ">= 2x openenv-core per server CPU second", per_core >= 2.0
    notes = [f"env_service: steps per server CPU second: rlf {ours['steps_per_server_cpu_s']:.0f}, openenv-core "
             f"{theirs['steps_per_server_cpu_s']:.0f} ({per_core:.2f}x); wall steps/s {ours['value']:.0f} vs "
             f"{theirs['value']:.0f} ({ours['value'] / theirs['value']:.2f}x), client and server sharing this "
             f"machine's {os.cpu_count()} cores; {PUBLISHED}",
             f"env_service: sessions held at once: rlf {by['env_service_held_rlf']['value']} of {held_n} "
             f"({by['env_service_held_rlf']['rss_mib']:.0f} MiB, {by['env_service_held_rlf']['threads']} threads), "
             f"openenv-core {by['env_service_held_openenv']['value']} of {held_n} "
             f"({by['env_service_held_openenv']['rss_mib']:.0f} MiB, "
             f"{by['env_service_held_openenv']['threads']} threads)"]
    return rows, notes


def bench_env_service(context: BenchContext) -> tuple[list[dict[str, Any]], list[str]]:
    """``rlf bench --only env_service``: ``compare`` (one run: the two servers back to back)."""
    return compare(context.quick)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.env_service_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="128 sessions held, 128 stepping for 2 s, 400 churned")
    parser.add_argument("--out", default="bench_results/env_service.json", help="JSON results file")
    args = parser.parse_args(argv)
    rows, notes = compare(args.quick)
    print(aligned([("measurement", "N", "value", "target", "result")] +
                  [(r["name"], str(r["n"]), f"{r['value']:.1f} {r['metric']}", r["target"],
                    "-" if r["pass"] is None else ("PASS" if r["pass"] else "FAIL")) for r in rows]))
    print("\n".join(f"note: {note}" for note in notes))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "notes": notes}, indent=2, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
