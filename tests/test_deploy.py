"""The documented deployment (``deploy/``): supervisord runs replicas of a tool server as plain processes, and one
``mcpServers`` entry with ``urls`` reaches them all.

The example files are what ``deploy/render.py`` writes for the arguments they record. The live test renders the
same config for three replicas of ``rlfactory_tool_servers.faulty`` (it starts fastest, and its ``pid`` and
``slow_sometimes`` tools make the kill precise) on free loopback ports, starts a real supervisord, sends a batch of
slow calls through a ``Toolbox`` and SIGKILLs one replica while they are in flight: every call is answered, in
order; supervisord starts the replica again and the toolbox takes it back. supervisord is shut down in a
``finally`` and no replica process outlives it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest

from rlfactory_envs.kernel.mcp.config import load_mcp_config
from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.tool_call import ToolCall
from tests.conftest import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"
SUPERVISORD = Path(sys.executable).with_name("supervisord")
SUPERVISORCTL = Path(sys.executable).with_name("supervisorctl")
HAS_REPLICAS = (REPO_ROOT / "rlfactory_envs" / "kernel" / "mcp" / "replicas.py").is_file()
TOKEN = "deploy-test-token"
REPLICAS = 3
STATUS_RE = re.compile(r"^rlf-faulty:rlf-faulty_(\d+)\s+(\w+)\s+(?:pid (\d+))?", re.MULTILINE)

needs_replicas = pytest.mark.skipif(not HAS_REPLICAS, reason="rlfactory_envs/kernel/mcp/replicas.py (the toolbox's "
                                    "replica support, an mcpServers entry with 'urls') is not there yet")


def load_render() -> ModuleType:
    """``deploy/render.py`` (``deploy/`` is no package)."""
    spec = importlib.util.spec_from_file_location("deploy_render", DEPLOY / "render.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_files_are_what_render_writes_for_the_arguments_they_record(tmp_path, monkeypatch):
    monkeypatch.delenv("RLF_MCP_AUTH_TOKEN", raising=False)
    first = (DEPLOY / "supervisord.conf").read_text(encoding="utf-8").splitlines()[0]
    prefix = "; written by: python deploy/render.py "
    assert first.startswith(prefix)
    argv = shlex.split(first[len(prefix):])
    argv[argv.index("--out") + 1] = str(tmp_path)
    assert load_render().main(argv) == 0
    for name in ("supervisord.conf", "mcp_servers.replicas.json"):
        written = (tmp_path / name).read_text(encoding="utf-8").replace(f"--out {tmp_path}", "--out deploy")
        assert written == (DEPLOY / name).read_text(encoding="utf-8"), name
    conf = (DEPLOY / "supervisord.conf").read_text(encoding="utf-8")
    for line in ("numprocs=4", "numprocs_start=8101", "process_name=%(program_name)s_%(process_num)d",
                 "autorestart=true", "stopasgroup=true", "killasgroup=true",
                 'environment=RLF_MCP_AUTH_TOKEN="%(ENV_RLF_MCP_AUTH_TOKEN)s"'):
        assert f"\n{line}\n" in conf, line
    assert "--port %(process_num)d --allowed-hosts tools-1.internal,tools-2.internal" in conf


@needs_replicas
def test_the_example_servers_document_loads():
    config = load_mcp_config(DEPLOY / "mcp_servers.replicas.json")
    [entry] = config.servers.values()
    assert len(entry.urls) == 8 and entry.headers == {"Authorization": "Bearer CHANGE-ME"}


# -- supervisord, live ----------------------------------------------------------------------------------------


def free_port_run(count: int) -> int:
    """A first port of ``count`` consecutive free loopback ports."""
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + count > 65535:
            continue
        sockets = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                sockets.append(sock)
                sock.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise AssertionError(f"no {count} consecutive free ports")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.is_file() and "\nState:\tZ" in status.read_text())


class Supervisor:
    """supervisord started with a rendered config in ``folder``; ``status()`` reads ``supervisorctl status``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.conf = folder / "supervisord.conf"
        self.env = {**os.environ, "RLF_MCP_AUTH_TOKEN": TOKEN}
        self.pid: int | None = None

    def ctl(self, *args: str) -> str:
        done = subprocess.run([str(SUPERVISORCTL), "-c", str(self.conf), *args], check=False, env=self.env,
                              cwd=self.folder, capture_output=True, text=True, timeout=30)
        return done.stdout + done.stderr

    def start(self) -> None:
        subprocess.run([str(SUPERVISORD), "-c", str(self.conf)], env=self.env, cwd=self.folder, check=True,
                       timeout=30)  # returns once it has daemonised; its pid is in the pidfile
        pidfile = self.folder / "supervisord.pid"
        deadline = time.monotonic() + 10
        while not (pidfile.is_file() and pidfile.read_text().strip()):
            assert time.monotonic() < deadline, "supervisord wrote no pidfile"
            time.sleep(0.05)
        self.pid = int(pidfile.read_text())

    def status(self) -> dict[int, tuple[str, int | None]]:
        """Each replica's port: its state and pid."""
        return {int(port): (state, int(pid) if pid else None)
                for port, state, pid in STATUS_RE.findall(self.ctl("status"))}

    def shutdown(self) -> None:
        if self.pid is None:
            return
        self.ctl("shutdown")
        deadline = time.monotonic() + 20
        while alive(self.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(self.pid):
            os.kill(self.pid, signal.SIGTERM)


def wait_running(supervisor: Supervisor, ports: list[int], starts: int, timeout_s: float) -> dict[int, int]:
    """The pids of ``ports`` once each replica is RUNNING and its log holds ``starts`` start lines (supervisord
    appends a restarted replica's output to the same file)."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = supervisor.status()
        logs = {port: supervisor.folder / "logs" / f"rlf-faulty_{port}.err.log" for port in ports}
        if all(status.get(port, ("", None))[0] == "RUNNING" and logs[port].is_file()
               and logs[port].read_text().count(f"at http://127.0.0.1:{port}/mcp") >= starts for port in ports):
            return {port: status[port][1] for port in ports}
        assert time.monotonic() < deadline, f"replicas not running after {timeout_s} s: {status}"
        time.sleep(0.1)


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.mark.integration
@pytest.mark.timeout(120)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="processes are read from /proc")
@pytest.mark.skipif(not SUPERVISORD.is_file(), reason="supervisord is not installed beside this Python (the test "
                    "extra installs supervisor)")
@needs_replicas
def test_replicas_under_supervisord_survive_a_kill_in_the_middle_of_a_batch(tmp_path):
    base = free_port_run(REPLICAS)
    ports = list(range(base, base + REPLICAS))
    command = f"{shlex.quote(sys.executable)} -m rlfactory_tool_servers.faulty"
    assert load_render().main(["--server", "faulty", "--command", command, "--replicas", str(REPLICAS),
                               "--base-port", str(base), "--bind", "127.0.0.1", "--token", TOKEN,
                               "--timeout-s", "20", "--out", str(tmp_path)]) == 0
    config = json.loads((tmp_path / "mcp_servers.replicas.json").read_text())
    entry = config["mcpServers"]["faulty"]
    assert entry["urls"] == [f"http://127.0.0.1:{port}/mcp" for port in ports]
    # No retry on the same URL: supervisord restarts a replica within a second, and a retry could reach the new
    # process; with none, the calls in flight on the killed replica must move to the others. A replica taken out
    # is probed soon (the default: 0.5 s, doubling).
    entry.update(retries=0, replica_probe_s=0.2)
    supervisor = Supervisor(tmp_path)
    seen: set[int] = set()
    try:
        supervisor.start()
        pids = wait_running(supervisor, ports, 1, 30)
        seen |= set(pids.values())
        assert all(listening(port) for port in ports)
        with Toolbox(config) as toolbox:
            answered = {int(r.text) for r in toolbox.call_many([ToolCall("pid", {}, call_id=i) for i in range(12)])}
            assert answered == set(pids.values())  # the calls are spread over every replica

            victim_port = ports[0]
            victim = pids[victim_port]
            sent = [ToolCall("slow_sometimes", {"p_slow": 1.0, "slow_ms": 1000}, call_id=i) for i in range(24)]
            timer = threading.Timer(0.3, os.kill, (victim, signal.SIGKILL))  # while every call is in flight
            timer.start()
            started = time.monotonic()
            results = toolbox.call_many(sent)
            elapsed = time.monotonic() - started
            timer.join()
            assert [(r.name, r.call_id) for r in results] == [(c.name, c.call_id) for c in sent]
            assert [r.text for r in results] == ["slow: 1000 ms"] * len(sent)  # re-sent to a live replica
            assert elapsed < 20

            restarted = wait_running(supervisor, [victim_port], 2, 30)[victim_port]  # autorestart
            seen.add(restarted)
            assert restarted != victim and not alive(victim)
            deadline = time.monotonic() + 30
            while restarted not in {int(r.text) for r in toolbox.call_many(
                    [ToolCall("pid", {}, call_id=i) for i in range(12)]) if not r.is_error}:
                assert time.monotonic() < deadline, "the toolbox did not take the restarted replica back"
                time.sleep(0.2)
            stats = toolbox.stats()["servers"]["faulty"]
        assert stats["tools"]["slow_sometimes"]["calls"] == len(sent)
        assert stats["tools"]["slow_sometimes"]["errors"] == 0 and stats["tools"]["slow_sometimes"]["retries"] > 0
        killed = stats["replicas"][entry["urls"][0]]
        assert killed["marked_down"] == 1 and killed["back_up"] == 1 and killed["up"], killed
        assert killed["unavailable"] == len(sent) // REPLICAS  # in flight on it when it died: sent elsewhere
        for url in entry["urls"][1:]:
            assert stats["replicas"][url]["errors"] == 0 and stats["replicas"][url]["marked_down"] == 0
    finally:
        supervisor.shutdown()
        strays = sorted(pid for pid in seen if alive(pid))
        for pid in strays:
            os.kill(pid, signal.SIGKILL)
    assert supervisor.pid is not None and not alive(supervisor.pid)
    assert not strays, f"replica processes outlived supervisord: {strays}"
    assert not any(listening(port) for port in ports)
