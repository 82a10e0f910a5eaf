"""Faults injected into real tool servers (stdio and HTTP subprocesses of ``rlfactory_tool_servers.faulty``): a
server killed or crashing in the middle of a batch, a tool that hangs, one slow on a tenth of its calls, a server
that refuses to start, one that leaks memory until it is killed. Every call gets a result, aligned with its call,
within a bounded time; a healthy server beside a sick one stays fast; ``Toolbox.stats()`` counts what happened.

Time bounds are generous (a loaded 2-core machine): each is several times what the test needs."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from rlfactory_envs.kernel.mcp.errors import TransportError
from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.tool_call import ToolCall
from tests.conftest import free_port, sleep_server_entry
from tests.server_process import server_process

FAULTY = "rlfactory_tool_servers.faulty"
ZERO = {"calls": 0, "errors": 0, "timeouts": 0, "unavailable": 0, "retries": 0, "reconnects": 0}

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="processes are read from /proc")


def faulty_entry(*args: str, **tuning) -> dict:
    """The faulty server as a real stdio subprocess."""
    return {"command": sys.executable, "args": ["-m", FAULTY, *args], **tuning}


def calls(name: str, arguments: dict, count: int, first_id: int = 0) -> list[ToolCall]:
    return [ToolCall(name, dict(arguments), call_id=first_id + i) for i in range(count)]


def server_pid(toolbox: Toolbox) -> int:
    [result] = toolbox.call_many([ToolCall("pid", {})])
    assert not result.is_error, result.text
    return int(result.text)


def kill_later(pid: int, delay_s: float) -> threading.Timer:
    timer = threading.Timer(delay_s, os.kill, (pid, signal.SIGKILL))
    timer.start()
    return timer


def resident_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def assert_aligned(results, sent) -> None:
    assert [(r.name, r.call_id) for r in results] == [(c.name, c.call_id) for c in sent]


def is_unavailable(result, attempts: int) -> bool:
    return result.is_error and f"unavailable after {attempts} attempts" in result.text


# -- the counters --------------------------------------------------------------------------------------------


def test_stats_count_calls_and_errors_per_server_and_tool():
    servers = {"faulty": {"module": FAULTY}, "sleep": {"module": "rlfactory_tool_servers.sleep"}}
    toolbox = Toolbox({"mcpServers": servers})
    assert toolbox.stats() == {"servers": {"faulty": {**ZERO, "tools": {}}, "sleep": {**ZERO, "tools": {}}},
                               "totals": ZERO, "unknown_tool_calls": 0}
    with toolbox:
        sent = [*calls("echo", {"text": "hi"}, 3), ToolCall("slow_sometimes", {"p_slow": 2.0}, call_id=3),
                ToolCall("sleep", {"ms": 1}, call_id=4), ToolCall("no_such_tool", {}, call_id=5)]
        results = toolbox.call_many(sent)
        stats = toolbox.stats()
    assert_aligned(results, sent)
    assert [r.is_error for r in results] == [False, False, False, True, False, True]
    faulty = stats["servers"]["faulty"]
    assert faulty["tools"] == {"echo": {**ZERO, "calls": 3}, "slow_sometimes": {**ZERO, "calls": 1, "errors": 1}}
    assert {k: v for k, v in faulty.items() if k != "tools"} == {**ZERO, "calls": 4, "errors": 1}
    assert stats["servers"]["sleep"]["tools"] == {"sleep": {**ZERO, "calls": 1}}
    assert stats["totals"] == {**ZERO, "calls": 5, "errors": 1}
    assert stats["unknown_tool_calls"] == 1
    assert json.loads(json.dumps(stats)) == stats
    assert toolbox.stats() == stats  # kept after close


# -- a server that dies in the middle of a batch -----------------------------------------------------------


@pytest.mark.integration
@pytest.mark.timeout(120)
@pytest.mark.parametrize("batching", [True, False])
def test_a_stdio_server_killed_in_the_middle_of_a_batch_is_reconnected_and_every_call_answers(batching):
    entry = faulty_entry(timeout_s=30, retries=2, batching=batching)
    with Toolbox({"mcpServers": {"faulty": entry}}) as toolbox:
        pid = server_pid(toolbox)
        sent = calls("slow_sometimes", {"p_slow": 1.0, "slow_ms": 500}, 16)
        timer = kill_later(pid, 0.2)  # each call takes 500 ms: the kill lands while they are in flight
        started = time.monotonic()
        results = toolbox.call_many(sent)
        elapsed = time.monotonic() - started
        timer.join()
        assert_aligned(results, sent)
        assert [r.text for r in results] == ["slow: 500 ms"] * 16  # each re-sent after the reconnect
        assert elapsed < 25
        assert server_pid(toolbox) != pid
        stats = toolbox.stats()["servers"]["faulty"]["tools"]["slow_sometimes"]
    assert stats["calls"] == 16 and stats["errors"] == 0
    assert stats["reconnects"] >= 1 and stats["retries"] <= 16  # no retry when the kill came before the request


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_crash_in_the_middle_of_a_batch_gives_each_call_an_error_or_its_answer():
    with Toolbox({"mcpServers": {"faulty": faulty_entry(timeout_s=15, retries=1)}}) as toolbox:
        sent = [*calls("slow_sometimes", {"p_slow": 1.0, "slow_ms": 300}, 8),
                ToolCall("crash", {"code": 7, "after_ms": 100}, call_id=8), *calls("echo", {"text": "ok"}, 4, 9)]
        started = time.monotonic()
        results = toolbox.call_many(sent)
        assert time.monotonic() - started < 40
        assert_aligned(results, sent)
        crashed = results[8]
        assert is_unavailable(crashed, 2) and "closed the connection" in crashed.text  # each attempt crashed it
        assert "Connection closed: the process exited with code 7" in crashed.text, crashed.text
        for result in results[:8]:
            assert result.text == "slow: 300 ms" or is_unavailable(result, 2), result.text
        for result in results[9:]:
            assert result.text == "ok" or is_unavailable(result, 2), result.text
        assert toolbox.call_many(calls("echo", {"text": "again"}, 1))[0].text == "again"
        stats = toolbox.stats()["servers"]["faulty"]
    assert stats["tools"]["crash"] == {**ZERO, "calls": 1, "errors": 1, "unavailable": 1, "retries": 1,
                                       "reconnects": stats["tools"]["crash"]["reconnects"]}
    assert stats["reconnects"] >= 2  # after the first crash and after the crash's retry
    assert stats["errors"] == sum(r.is_error for r in results) and stats["calls"] == len(sent) + 1


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_an_http_server_killed_in_the_middle_of_a_batch_then_restarted_serves_again():
    port = free_port()
    command = [sys.executable, "-m", FAULTY, "--transport", "http", "--port", str(port)]
    with server_process(command) as first:
        url = first.url()
        toolbox = Toolbox({"mcpServers": {"faulty": {"url": url, "timeout_s": 10, "retries": 1}}})
        try:
            toolbox.start()
            pid = server_pid(toolbox)
            sent = calls("slow_sometimes", {"p_slow": 1.0, "slow_ms": 1000}, 8)
            timer = kill_later(pid, 0.3)
            started = time.monotonic()
            results = toolbox.call_many(sent)
            timer.join()
            assert time.monotonic() - started < 30  # nothing waits for a server that is gone
            assert_aligned(results, sent)
            assert all(r.is_error for r in results), [r.text for r in results]
            first.process.wait(10)
            with server_process(command) as second:
                second.url()
                deadline = time.monotonic() + 30
                while (answer := toolbox.call_many(calls("echo", {"text": "back"}, 1))[0]).is_error:
                    assert time.monotonic() < deadline, answer.text
                    time.sleep(0.2)
                assert server_pid(toolbox) == second.process.pid
            stats = toolbox.stats()["servers"]["faulty"]
        finally:
            toolbox.close()
    assert stats["tools"]["slow_sometimes"]["errors"] == 8
    assert stats["reconnects"] >= 1 and stats["errors"] >= 8


# -- a sick server beside a healthy one --------------------------------------------------------------------


@pytest.mark.alone
@pytest.mark.integration
@pytest.mark.timeout(120)
@pytest.mark.parametrize("batching", [True, False])
def test_a_hanging_tool_hits_its_deadline_while_a_healthy_server_beside_it_stays_fast(batching):
    deadline_s = 3.0
    servers = {"faulty": faulty_entry(timeout_s=deadline_s, batching=batching), "sleep": sleep_server_entry()}
    with Toolbox({"mcpServers": servers}) as toolbox:
        toolbox.call_many([ToolCall("echo", {}), ToolCall("sleep", {"ms": 0})])  # both processes are up
        healthy_latencies = []
        for _ in range(2):
            sent = [*calls("hang", {}, 4), *calls("sleep", {"ms": 5}, 32, first_id=4)]
            started = time.monotonic()
            results = toolbox.call_many(sent)
            assert time.monotonic() - started < deadline_s + 10
            assert_aligned(results, sent)
            for hung in results[:4]:
                assert hung.is_error and "'hang'" in hung.text and "deadline" in hung.text, hung.text
            assert [r.text for r in results[4:]] == ["slept 5 ms"] * 32
            healthy_latencies += [r.latency_s for r in results[4:]]
        stats = toolbox.stats()["servers"]
    assert max(healthy_latencies) < deadline_s / 3, max(healthy_latencies)  # far from the sick server's deadline
    assert stats["faulty"]["tools"]["hang"] == {**ZERO, "calls": 8, "errors": 8, "timeouts": 8}
    assert stats["sleep"]["errors"] == 0 and stats["sleep"]["calls"] == 65


@pytest.mark.integration
@pytest.mark.timeout(120)
@pytest.mark.parametrize("batching", [True, False])
def test_a_tool_slow_on_a_tenth_of_its_calls_times_out_on_exactly_those(batching):
    with Toolbox({"mcpServers": {"faulty": faulty_entry(timeout_s=2.0, batching=batching)}}) as toolbox:
        sent = calls("slow_sometimes", {"p_slow": 0.1, "slow_ms": 60_000}, 30)
        started = time.monotonic()
        results = toolbox.call_many(sent)
        assert time.monotonic() - started < 15
        assert_aligned(results, sent)
        assert sum(r.text == "fast" for r in results) == 27
        assert sum(r.is_error and "deadline" in r.text for r in results) == 3
        assert toolbox.call_many(calls("echo", {"text": "alive"}, 1))[0].text == "alive"
        stats = toolbox.stats()["servers"]["faulty"]["tools"]["slow_sometimes"]
    assert stats == {**ZERO, "calls": 30, "errors": 3, "timeouts": 3}


# -- a server that will not start, one that leaks ----------------------------------------------------------


@pytest.mark.integration
@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_stdio_server_that_refuses_to_start_fails_the_start_in_a_few_words(how):
    entry = (faulty_entry("--refuse-start", retries=0) if how == "option" else
             faulty_entry(retries=0, env={"RLF_FAULTY_REFUSE_START": "1"}))
    toolbox = Toolbox({"mcpServers": {"faulty": entry}})
    started = time.monotonic()
    with pytest.raises(TransportError) as failure:
        toolbox.start()
    toolbox.close()
    assert time.monotonic() - started < 30
    headline, *tail = str(failure.value).splitlines()
    assert headline == "server 'faulty': the process exited with code 3 during start; last lines of its stderr:"
    assert len(tail) == 1 and "refusing to start" in tail[0]
    assert "Traceback" not in str(failure.value)


@pytest.mark.integration
def test_an_http_server_that_refuses_to_start_leaves_nothing_to_connect_to():
    port = free_port()
    with server_process([sys.executable, "-m", FAULTY, "--transport", "http", "--port", str(port),
                         "--refuse-start"]) as refused:
        assert refused.process.wait(30) == 3
        assert "refusing to start" in refused.stderr
    toolbox = Toolbox({"mcpServers": {"faulty": {"url": f"http://127.0.0.1:{port}/mcp", "retries": 0}}})
    with pytest.raises(TransportError) as failure:
        toolbox.start()
    toolbox.close()
    message = str(failure.value)
    assert len(message.splitlines()) == 1 and "'faulty'" in message and "refused" in message, message


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_server_that_leaks_memory_grows_until_killed_and_then_starts_afresh():
    with Toolbox({"mcpServers": {"faulty": faulty_entry(timeout_s=30)}}) as toolbox:
        pid = server_pid(toolbox)
        before = resident_mib(pid)
        leaks = toolbox.call_many(calls("leak", {"mb": 64}, 3))
        assert sorted(r.text for r in leaks) == ["holding 128 MiB", "holding 192 MiB", "holding 64 MiB"]
        assert resident_mib(pid) - before > 180
        os.kill(pid, signal.SIGKILL)
        assert toolbox.call_many(calls("echo", {"text": "fresh"}, 1))[0].text == "fresh"
        new_pid = server_pid(toolbox)
        assert new_pid != pid and resident_mib(new_pid) < before + 32
        stats = toolbox.stats()["servers"]["faulty"]
    # one retry when the call reached the session before it noticed the process was gone
    assert stats["reconnects"] == 1 and stats["errors"] == 0 and stats["retries"] <= 1
