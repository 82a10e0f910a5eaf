"""The toolbox against real MCP servers: in-process, stdio subprocesses and streamable HTTP."""

import os
import signal
import sys
import time

import pytest

from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.config import as_stdio, bundled_server_config, load_mcp_config
from rlfactory_envs.kernel.mcp.session import TransportError
from rlfactory_envs.kernel.mcp.toolbox import Toolbox, ToolSpec
from rlfactory_envs.kernel.runtime import Parts
from rlfactory_envs.kernel.tool_call import ToolCall
from rlfactory_envs.kernel.tool_filter import ToolFilter
from tests.conftest import count_requests, sleep_server_entry
from tests.server_process import http_tool_server

INPROCESS_SLEEP = {"mcpServers": {"sleep": {"module": "rlfactory_tool_servers.sleep"}}}


@pytest.fixture
def inprocess():
    toolbox = Toolbox(INPROCESS_SLEEP).start()
    yield toolbox
    toolbox.close()


def sleeps(*ms):
    return [ToolCall("sleep", {"ms": m}, call_id=i) for i, m in enumerate(ms)]


def test_catalog_hides_batched_forms(inprocess):
    names = [spec.name for spec in inprocess.specs]
    assert "sleep" in names and "sleep_batch" not in names
    schema = next(s for s in inprocess.openai_schemas() if s["function"]["name"] == "sleep")
    assert schema["type"] == "function" and schema["function"]["parameters"]["properties"]["ms"]["type"] == "integer"


def test_results_align_with_calls_whatever_the_finishing_order(inprocess):
    calls = sleeps(60, 0, 30, 10, 0)
    results = inprocess.call_many(calls)
    assert [r.text for r in results] == ["slept 60 ms", "slept 0 ms", "slept 30 ms", "slept 10 ms", "slept 0 ms"]
    assert [r.call_id for r in results] == [0, 1, 2, 3, 4]
    assert all(r.server == "sleep" and not r.is_error and r.latency_s >= 0 for r in results)


def test_concurrent_calls_are_merged_into_one_request(inprocess, monkeypatch):
    seen = count_requests(monkeypatch)
    results = inprocess.call_many(sleeps(*[5] * 100))
    assert all(r.text == "slept 5 ms" for r in results)
    assert seen == ["sleep_batch"]


def test_merging_can_be_turned_off(monkeypatch):
    with Toolbox({"mcpServers": {"sleep": {"module": "rlfactory_tool_servers.sleep", "batching": False}}}) as toolbox:
        seen = count_requests(monkeypatch)
        latencies = [60, 1, 40, 0, 20] * 4  # results come back in a different order than they were asked
        results = toolbox.call_many(sleeps(*latencies))
        assert [r.text for r in results] == [f"slept {ms} ms" for ms in latencies]
        assert seen == ["sleep"] * 20


def test_batches_are_split_at_max_batch_size(monkeypatch):
    with Toolbox({"mcpServers": {"sleep": {"module": "rlfactory_tool_servers.sleep", "max_batch_size": 8}}}) as toolbox:
        seen = count_requests(monkeypatch)
        results = toolbox.call_many(sleeps(*range(20)))
        assert [r.text for r in results] == [f"slept {m} ms" for m in range(20)]
        assert seen == ["sleep_batch", "sleep_batch", "sleep_batch"]


def test_bad_calls_fail_alone(inprocess):
    calls = [ToolCall("sleep", {"ms": 1}), ToolCall("nope", {}), ToolCall("sleep", {"ms": "soon"}),
             ToolCall("sleep", {"ms": -5}), ToolCall("sleep", {"ms": 1, "extra": True})]
    results = inprocess.call_many(calls)
    assert not results[0].is_error
    assert results[1].is_error and "unknown tool 'nope'" in results[1].text and "sleep" in results[1].text
    assert results[2].is_error and "invalid arguments" in results[2].text
    assert results[3].is_error and "between 0 and" in results[3].text
    assert results[4].is_error and "extra" in results[4].text


async def test_async_calls_from_any_loop(inprocess):
    results = await inprocess.acall_many(sleeps(1, 2))
    assert [r.text for r in results] == ["slept 1 ms", "slept 2 ms"]


def test_deadline_turns_a_hang_into_an_error_and_the_server_stays_usable():
    with Toolbox({"mcpServers": {"sleep": {"module": "rlfactory_tool_servers.sleep", "timeout_s": 0.3}}}) as toolbox:
        started = time.perf_counter()
        slow, fast = toolbox.call_many([ToolCall("sleep", {"ms": 60_000}), ToolCall("process_id", {})])
        assert time.perf_counter() - started < 5
        assert slow.is_error and "deadline" in slow.text
        assert not fast.is_error
        assert toolbox.call_many(sleeps(1))[0].text == "slept 1 ms"


def test_shared_toolboxes_are_reference_counted():
    """Runtimes with equal tool configs hold one toolbox; it closes when the last of them gives it back."""
    one, two = Parts(), Parts()
    first, second = one.toolbox(INPROCESS_SLEEP), two.toolbox(INPROCESS_SLEEP)
    assert first is second
    first.start()
    one.release()
    assert first.call_many(sleeps(1))[0].text == "slept 1 ms"
    two.release()
    three = Parts()
    assert three.toolbox(INPROCESS_SLEEP) is not first
    three.release()


def test_tool_name_collisions_are_refused():
    toolbox = Toolbox({"mcpServers": {"a": {"module": "rlfactory_tool_servers.sleep"}, "b": {"module": "rlfactory_tool_servers.sleep"}}})
    with pytest.raises(ValueError, match="offered by both"):
        toolbox.start()


def test_unreachable_server_fails_at_start_with_its_name():
    toolbox = Toolbox({"mcpServers": {"ghost": {"command": "/nonexistent/server", "retries": 0}}})
    with pytest.raises(TransportError, match="ghost"):
        toolbox.start()


def test_config_documents():
    config = load_mcp_config('{"mcpServers": {"s": {"module": "rlfactory_tool_servers.sleep", "timeout_s": 2, "disabled": false}}}')
    stdio = as_stdio(config, sys.executable).servers["s"]
    assert stdio.command == sys.executable and stdio.args == ["-m", "rlfactory_tool_servers.sleep"] and stdio.timeout_s == 2
    for bad, message in [({}, "mcpServers"), ({"mcpServers": {}}, "names no server"),
                         ({"mcpServers": {"s": {"command": "x", "url": "y"}}}, "exactly one"),
                         ({"mcpServers": {"s": {"url": "http://x", "timeout_s": -1}}}, "invalid")]:
        with pytest.raises(ValueError, match=message):
            load_mcp_config(bad)


def test_bundled_server_config_in_process_or_over_stdio():
    inprocess = bundled_server_config("s", "rlfactory_tool_servers.sleep", ["--x", "1"], tuning={"timeout_s": 2})
    assert inprocess == {"mcpServers": {"s": {"module": "rlfactory_tool_servers.sleep", "args": ["--x", "1"], "timeout_s": 2}}}
    stdio = load_mcp_config(bundled_server_config("s", "rlfactory_tool_servers.sleep", ["--x", "1"], transport="stdio"))
    entry = stdio.servers["s"]
    assert entry.command == sys.executable and entry.args == ["-m", "rlfactory_tool_servers.sleep", "--x", "1", "--log-level", "error"]
    with pytest.raises(ValueError, match="inprocess"):
        bundled_server_config("s", "rlfactory_tool_servers.sleep", [], transport="http")


@pytest.mark.integration
def test_stdio_server_killed_mid_episode_is_reconnected():
    with Toolbox({"mcpServers": {"sleep": sleep_server_entry(timeout_s=10)}}) as toolbox:
        pid = int(toolbox.call_many([ToolCall("process_id", {})])[0].text)
        os.kill(pid, signal.SIGKILL)
        results = toolbox.call_many(sleeps(1, 2))
        assert [r.text for r in results] == ["slept 1 ms", "slept 2 ms"]
        assert int(toolbox.call_many([ToolCall("process_id", {})])[0].text) != pid


@pytest.mark.integration
def test_stdio_server_that_keeps_crashing_gives_an_error_result():
    with Toolbox({"mcpServers": {"sleep": sleep_server_entry(retries=1)}}) as toolbox:
        crashed = toolbox.call_many([ToolCall("exit_process", {"code": 3})])[0]
        assert crashed.is_error and "unavailable after 2 attempts" in crashed.text
        assert toolbox.call_many(sleeps(1))[0].text == "slept 1 ms"


@pytest.mark.integration
def test_stdio_close_stops_the_server_process():
    toolbox = Toolbox({"mcpServers": {"sleep": sleep_server_entry()}})
    pid = int(toolbox.call_many([ToolCall("process_id", {})])[0].text)
    toolbox.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"server process {pid} still runs after close()")


@pytest.fixture
def http_sleep_server(tmp_path):
    with http_tool_server("rlfactory_tool_servers.sleep") as url:
        yield url


@pytest.mark.integration
def test_streamable_http_server(http_sleep_server, monkeypatch):
    with Toolbox({"mcpServers": {"sleep": {"url": http_sleep_server, "headers": {"X-Test": "1"}}}}) as toolbox:
        seen = count_requests(monkeypatch)
        results = toolbox.call_many(sleeps(*[3] * 50))
        assert [r.text for r in results] == ["slept 3 ms"] * 50
        assert seen == ["sleep_batch"]


def test_inprocess_server_with_bad_arguments_fails_at_start_without_killing_the_loop():
    toolbox = Toolbox({"mcpServers": {"search": {"module": "rlfactory_tool_servers.search", "args": ["--corpus", "/no/such"]}}})
    with pytest.raises(TransportError, match="refused its arguments"):
        toolbox.start()
    with Toolbox(INPROCESS_SLEEP) as toolbox:
        assert toolbox.call_many(sleeps(1))[0].text == "slept 1 ms"


@pytest.mark.integration
def test_pooled_sessions_spread_requests_over_server_processes():
    with Toolbox({"mcpServers": {"sleep": sleep_server_entry(sessions=2)}}) as toolbox:
        pids = {toolbox.call_many([ToolCall("process_id", {})])[0].text for _ in range(4)}
        assert len(pids) == 2


def test_concurrency_limit_serialises_requests():
    toolbox = Toolbox({"mcpServers": {"sleep": {"module": "rlfactory_tool_servers.sleep", "batching": False,
                                                "max_concurrency": 1}}})
    try:
        toolbox.start()
        started = time.perf_counter()
        results = toolbox.call_many(sleeps(*[50] * 4))
        assert all(not r.is_error for r in results)
        assert time.perf_counter() - started >= 0.2  # four 50 ms calls, one at a time
    finally:
        toolbox.close()


@pytest.mark.integration
def test_a_hanging_call_fails_alone_and_the_server_survives_the_deadline():
    with Toolbox({"mcpServers": {"sleep": sleep_server_entry(timeout_s=1.0)}}) as toolbox:
        pid = toolbox.call_many([ToolCall("process_id", {})])[0].text
        started = time.perf_counter()
        fast, hung, fast_too = toolbox.call_many(sleeps(10, 60_000, 20))
        assert time.perf_counter() - started < 5
        assert (fast.text, fast_too.text) == ("slept 10 ms", "slept 20 ms")
        assert hung.is_error and "'sleep'" in hung.text and "deadline" in hung.text and "_batch" not in hung.text
        assert toolbox.call_many([ToolCall("process_id", {})])[0].text == pid  # same process: nothing crashed


@pytest.mark.alone
@pytest.mark.integration
def test_the_deadline_covers_reconnecting_to_a_slow_starting_server():
    slow_start = {"command": "sh", "args": ["-c", f"sleep 2; exec {sys.executable} -m rlfactory_tool_servers.sleep"],
                  "timeout_s": 0.5}
    with Toolbox({"mcpServers": {"sleep": slow_start}}) as toolbox:
        pid = int(toolbox.call_many([ToolCall("process_id", {})])[0].text)
        os.kill(pid, signal.SIGKILL)
        started = time.perf_counter()
        [result] = toolbox.call_many(sleeps(1))
        assert time.perf_counter() - started < 1.5
        assert result.is_error and "deadline" in result.text
        deadline = time.monotonic() + 20  # the reconnect goes on in the background and then serves calls
        while time.monotonic() < deadline and toolbox.call_many(sleeps(1))[0].is_error:
            time.sleep(0.2)
        assert toolbox.call_many(sleeps(1))[0].text == "slept 1 ms"


@pytest.mark.parametrize(("filter_args", "message"), [
    ((["sleep", "search"], ()), "tools_allowed names tools no server offers: search"),
    ((None, ["search"]), "tools_denied names tools no server offers: search"),
    ((None, (), ["device_open"]), "the env calls tools no server offers: device_open"),
])
def test_a_filter_naming_a_tool_no_server_offers_says_which_setting(filter_args, message):
    catalog = [ToolSpec("sleep", "", {"type": "object"}, "s"), ToolSpec("process_id", "", {"type": "object"}, "s")]
    with pytest.raises(ConfigError, match=message):
        ToolFilter(*filter_args).specs(catalog)
    assert [spec.name for spec in ToolFilter(None, ["sleep"], ["process_id"]).specs(catalog)] == []
