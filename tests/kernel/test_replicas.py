"""A tool server run as several replicas (an ``mcpServers`` entry with ``urls``), against real HTTP subprocesses on
loopback: calls spread across the replicas, a replica killed in the middle of a batch loses no call and is taken
out, then back once it answers again; calls with one affinity stay on one replica, and fail clearly when it dies;
Android episodes on replicated servers reach the phone their episode opened.

Time bounds are generous (a loaded 2-core machine): each is several times what the test needs."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from urllib.parse import urlsplit

import pytest

from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.config import HttpServerEntry, ReplicatedHttpServerEntry, load_mcp_config
from rlfactory_envs.kernel.mcp.errors import TransportError
from rlfactory_envs.kernel.mcp.replicas import ReplicatedClient
from rlfactory_envs.kernel.mcp.server_client import UNAVAILABLE, Outcome
from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.runtime import Parts
from rlfactory_envs.kernel.tool_call import ToolCall, ToolResult
from rlfactory_envs.rollout.runner import run_rollouts
from tests.conftest import free_port
from tests.server_process import ServerProcess, server_process
from rlfactory_envs.kernel.families import tooling_of

FAULTY = "rlfactory_tool_servers.faulty"
ANDROID = "rlfactory_tool_servers.android"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="replicas are killed with SIGKILL")


def http_command(module: str, port: int = 0) -> list[str]:
    return [sys.executable, "-m", module, "--transport", "http", "--port", str(port)]


@contextmanager
def replicas(module: str, count: int) -> Iterator[tuple[list[ServerProcess], list[str]]]:
    """``count`` HTTP replicas of ``module``, started together; their processes and URLs, stopped on exit."""
    with ExitStack() as stack:
        processes = [stack.enter_context(server_process(http_command(module))) for _ in range(count)]
        yield processes, [process.url() for process in processes]


def pids(toolbox: Toolbox, count: int, affinity: str | None = None) -> list[int]:
    results = toolbox.call_many([ToolCall("pid", {}, call_id=i, affinity=affinity) for i in range(count)])
    assert not any(r.is_error for r in results), [r.text for r in results if r.is_error][:3]
    return [int(r.text) for r in results]


def wait_until(condition, timeout_s: float, what: str) -> float:
    """Seconds until ``condition()`` held, asking every 0.1 s; ``AssertionError`` naming ``what`` after
    ``timeout_s``."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout_s, f"{what} within {timeout_s} s"
        time.sleep(0.1)
    return time.monotonic() - started


# -- the config ----------------------------------------------------------------------------------------------


def test_an_entry_with_urls_is_a_replicated_http_server_with_one_tuning():
    config = load_mcp_config({"mcpServers": {"s": {"urls": ["http://a:8000/mcp", "http://b:8000/mcp"],
                                                   "type": "http", "headers": {"X": "1"}, "timeout_s": 5,
                                                   "replica_probe_s": 0.25}}})
    entry = config.servers["s"]
    assert isinstance(entry, ReplicatedHttpServerEntry) and entry.replica_probe_s == 0.25
    replica = entry.replica("http://b:8000/mcp")
    assert isinstance(replica, HttpServerEntry)
    assert (replica.url, replica.type, replica.headers, replica.timeout_s) == ("http://b:8000/mcp",
                                                                               "streamable-http", {"X": "1"}, 5)
    single = load_mcp_config({"mcpServers": {"s": {"url": "http://a:8000/mcp"}}}).servers["s"]
    assert type(single) is HttpServerEntry


@pytest.mark.parametrize(("entry", "expected"), [
    ({"urls": ["http://a/mcp"], "url": "http://a/mcp"}, "exactly one of 'command' (stdio), 'url' (HTTP), 'urls'"),
    ({"urls": []}, "mcpServers.s is invalid: urls: List should have at least 1 item"),
    ({"urls": ["http://a/mcp", "http://b/mcp", "http://a/mcp"]},
     "each replica URL must appear once; repeated: http://a/mcp"),
    ({"urls": "http://a/mcp"}, "mcpServers.s is invalid: urls: Input should be a valid list"),
    ({"urls": ["http://a/mcp"], "type": "stdio"}, "an entry with 'urls' takes one of 'streamable-http'"),
    ({"urls": ["http://a/mcp"], "replica_probe_s": 0}, "replica_probe_s: Input should be greater than 0"),
])
def test_a_replicated_entry_is_refused_in_a_sentence(entry, expected):
    with pytest.raises(ConfigError) as refused:
        load_mcp_config({"mcpServers": {"s": entry}})
    assert expected in str(refused.value)


# -- the routing rules, on replicas faked in-process ---------------------------------------------------------


def fake_replicas(count: int, dead: tuple[int, ...] = ()) -> ReplicatedClient:
    """A started client of ``count`` replicas whose calls answer their URL at once; those in ``dead`` answer
    ``unavailable``."""
    entry = ReplicatedHttpServerEntry(urls=[f"http://r{i}/mcp" for i in range(count)], replica_probe_s=60)
    client = ReplicatedClient("s", entry)
    for index, replica in enumerate(client._replicas):
        async def outcome(call: ToolCall, url: str = replica.url, dead: bool = index in dead) -> Outcome:
            await asyncio.sleep(0)
            return Outcome(f"{url} is gone", True, UNAVAILABLE) if dead else Outcome(url, False)

        replica.client.outcome = outcome  # type: ignore[method-assign]
        replica.started = replica.counters.up = True
    return client


def run_calls(client: ReplicatedClient, *batches: list[ToolCall]) -> list[ToolResult]:
    """The results of each batch of calls, run together, one batch after another; the client closed after."""
    async def run() -> list[ToolResult]:
        try:
            return [result for calls in batches for result in await asyncio.gather(*map(client.call, calls))]
        finally:
            await client.close()
    return asyncio.run(run())


def test_a_call_a_replica_fails_to_answer_is_sent_to_each_other_one_and_counted_once():
    client = fake_replicas(3, dead=(0, 1))
    [result] = run_calls(client, [ToolCall("t", {})])
    assert (result.text, result.is_error, result.server) == ("http://r2/mcp", False, "s")
    stats = client.stats.snapshot()
    assert (stats["calls"], stats["errors"], stats["unavailable"], stats["retries"]) == (1, 0, 0, 2)
    assert [(r["up"], r["calls"], r["unavailable"], r["marked_down"]) for r in stats["replicas"].values()] == [
        (False, 1, 1, 1), (False, 1, 1, 1), (True, 1, 0, 0)]


def test_a_call_no_replica_answers_is_unavailable_and_the_next_is_refused_at_once():
    client = fake_replicas(2, dead=(0, 1))
    first, refused = run_calls(client, [ToolCall("t", {}, call_id=0)], [ToolCall("t", {}, call_id=1)])
    assert first.failure == "unavailable" and first.text == "http://r1/mcp is gone"
    assert refused.failure == "unavailable" and "none of its 2 replicas is up" in refused.text
    stats = client.stats.snapshot()
    assert (stats["calls"], stats["errors"], stats["unavailable"], stats["retries"]) == (2, 2, 2, 1)
    assert [r["calls"] for r in stats["replicas"].values()] == [1, 1]  # the second call was sent nowhere


def test_affinities_are_remembered_up_to_the_bound_least_recently_used_dropped_first():
    client = fake_replicas(2)
    client.max_affinities = 2
    first = [ToolCall("t", {}, affinity=a) for a in ("a", "b", "a", "c")]  # "c" to r1: r0 has 2 in flight
    then = [ToolCall("t", {}, affinity=a) for a in ("c", "a", "b")]
    results = run_calls(client, first, then)
    assert [r.text.removeprefix("http://").removesuffix("/mcp") for r in results] == [
        "r0", "r1", "r0", "r1", "r1", "r0", "r0"]  # "b", dropped for "c", came anew: to the next replica in turn
    assert list(client._affinities) == ["a", "b"]


# -- spreading, a replica killed in the middle of a batch, and back ---------------------------------------


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_calls_spread_across_replicas_and_one_killed_mid_batch_loses_no_call_and_comes_back():
    with replicas(FAULTY, 3) as (processes, urls):
        entry = {"urls": urls, "timeout_s": 10, "retries": 1, "replica_probe_s": 0.2}
        with Toolbox({"mcpServers": {"faulty": entry}}) as toolbox:
            seen = pids(toolbox, 30)
            assert set(seen) == {p.process.pid for p in processes}
            assert sorted(seen.count(pid) for pid in set(seen)) == [10, 10, 10]  # least loaded, ties in turn

            victim = processes[0]
            sent = [ToolCall("slow_sometimes", {"p_slow": 1.0, "slow_ms": 500}, call_id=i) for i in range(200)]
            killer = threading.Timer(0.25, os.kill, (victim.process.pid, signal.SIGKILL))  # while all 200 run
            killer.start()
            started = time.monotonic()
            results = toolbox.call_many(sent)
            elapsed = time.monotonic() - started
            killer.join()
            assert [(r.name, r.call_id) for r in results] == [(c.name, c.call_id) for c in sent]
            assert [r.text for r in results] == ["slow: 500 ms"] * 200  # those on the victim re-sent elsewhere
            assert elapsed < 15, elapsed
            stats = toolbox.stats()["servers"]["faulty"]
            down = stats["replicas"][urls[0]]
            assert down["up"] is False and down["marked_down"] == 1 and down["unavailable"] >= 1
            assert all(stats["replicas"][url]["up"] for url in urls[1:])
            tool = stats["tools"]["slow_sometimes"]
            assert (tool["calls"], tool["errors"], tool["unavailable"]) == (200, 0, 0)
            assert tool["retries"] >= down["unavailable"]  # each call the victim failed was sent again
            assert set(pids(toolbox, 12)) == {p.process.pid for p in processes[1:]}  # the dead one takes none

            victim.process.wait(10)
            port = urlsplit(urls[0]).port
            assert port is not None
            with server_process(http_command(FAULTY, port)) as restarted:
                assert restarted.url() == urls[0]
                back_s = wait_until(lambda: toolbox.stats()["servers"]["faulty"]["replicas"][urls[0]]["up"], 10,
                                    "the restarted replica is taken back")
                assert restarted.process.pid in pids(toolbox, 30)
                replica = toolbox.stats()["servers"]["faulty"]["replicas"][urls[0]]
                assert replica["back_up"] == 1 and replica["marked_down"] == 1
                print(f"mid-batch kill: 200 calls answered in {elapsed:.2f} s; taken back {back_s:.2f} s after the "
                      "restart")


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_replica_down_at_start_begins_out_and_is_taken_in_once_it_listens():
    with replicas(FAULTY, 1) as (_, [live_url]):
        port = free_port()
        late_url = f"http://127.0.0.1:{port}/mcp"
        entry = {"urls": [late_url, live_url], "retries": 0, "replica_probe_s": 0.2}
        with Toolbox({"mcpServers": {"faulty": entry}}) as toolbox:
            assert toolbox.stats()["servers"]["faulty"]["replicas"][late_url]["up"] is False
            assert len(set(pids(toolbox, 8))) == 1
            with server_process(http_command(FAULTY, port)) as late:
                late.url()
                wait_until(lambda: toolbox.stats()["servers"]["faulty"]["replicas"][late_url]["up"], 10,
                           "the late replica is taken in")
                assert late.process.pid in pids(toolbox, 8)


@pytest.mark.timeout(60)
def test_a_server_none_of_whose_replicas_answers_fails_the_start():
    urls = [f"http://127.0.0.1:{free_port()}/mcp" for _ in range(2)]
    toolbox = Toolbox({"mcpServers": {"faulty": {"urls": urls, "retries": 0}}})
    with pytest.raises(TransportError) as failure:
        toolbox.start()
    toolbox.close()
    message = str(failure.value)
    assert "none of its 2 replicas could be reached" in message and all(url in message for url in urls)


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_replicas_that_list_different_tools_are_refused_naming_both():
    with replicas(FAULTY, 1) as (_, [faulty_url]), replicas("rlfactory_tool_servers.sleep", 1) as (_, [sleep_url]):
        toolbox = Toolbox({"mcpServers": {"s": {"urls": [faulty_url, sleep_url]}}})
        with pytest.raises(ConfigError) as refused:
            toolbox.start()
        toolbox.close()
    assert "replicas of server 's' list different tools" in str(refused.value)
    assert faulty_url in str(refused.value) and sleep_url in str(refused.value)


# -- affinity ------------------------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_calls_with_one_affinity_stay_on_one_replica_and_fail_clearly_when_it_dies():
    with replicas(FAULTY, 3) as (processes, urls):
        entry = {"urls": urls, "timeout_s": 10, "retries": 1, "replica_probe_s": 0.2}
        with Toolbox({"mcpServers": {"faulty": entry}}) as toolbox:
            affinities = [f"episode-{i}" for i in range(9)]
            sent = [ToolCall("pid", {}, call_id=i, affinity=affinities[i % 9]) for i in range(90)]
            held: dict[str, set[int]] = {a: set() for a in affinities}
            for _ in range(2):
                for call, result in zip(sent, toolbox.call_many(sent)):
                    held[call.affinity].add(int(result.text))
            assert all(len(on) == 1 for on in held.values()), held
            holder = {a: next(iter(on)) for a, on in held.items()}
            assert set(holder.values()) == {p.process.pid for p in processes}  # new affinities go to the least loaded

            victim = processes[0].process.pid
            os.kill(victim, signal.SIGKILL)
            processes[0].process.wait(10)
            for attempt in ("the first calls find it dead", "it is already out"):
                started = time.monotonic()
                results = toolbox.call_many(sent)
                assert time.monotonic() - started < 10, attempt
                for call, result in zip(sent, results):
                    if holder[call.affinity] == victim:
                        assert result.is_error and result.failure == "unavailable", (attempt, result.text)
                        assert f"holds this episode's session ({urls[0]}) is down" in result.text
                        assert "the session's state is lost" in result.text
                    else:
                        assert int(result.text) == holder[call.affinity], attempt  # not moved
            assert victim not in pids(toolbox, 12)  # calls without affinity avoid the dead replica
            replica = toolbox.stats()["servers"]["faulty"]["replicas"][urls[0]]
            assert replica["up"] is False and replica["marked_down"] == 1


# -- sticky sessions end to end: Android episodes on replicated servers ---------------------------------------


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_android_episodes_on_replicated_servers_reach_their_own_phone():
    with replicas(ANDROID, 3) as (_, urls):
        servers = {"mcpServers": {"android": {"urls": urls, "timeout_s": 30}}}
        holder = Parts()
        toolbox = holder.toolbox(servers)  # the envs share it; held here to read its counters after they close
        try:
            summary, records = asyncio.run(run_rollouts("rlf/Android-v0", lambda env: tooling_of(env).baseline_policy(env), 12,
                                                        batch_size=12, env_kwargs={"tool_servers": servers},
                                                        progress=False))
            stats = toolbox.stats()["servers"]["android"]
        finally:
            holder.release()
    assert summary.episodes == 12 and summary.failed == 0
    assert [r.reward for r in records] == [1.0] * 12, [r.reward for r in records]
    assert stats["errors"] == 0
    assert all(stats["replicas"][url]["calls"] > 0 for url in urls)  # the episodes were spread
    assert sum(r["calls"] for r in stats["replicas"].values()) == stats["calls"]  # each sent once, where it was
