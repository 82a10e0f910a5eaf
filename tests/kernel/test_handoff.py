"""Coalescing hand-over: concurrent callers on one loop share one thread hop; each gets its own results."""

import asyncio
import threading

import pytest

from rlfactory_envs.kernel.mcp.loop_thread import LoopThread
from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.tool_call import ToolCall


@pytest.fixture
def toolbox():
    toolbox = Toolbox({"mcpServers": {"sleep": {"module": "rlfactory_tool_servers.sleep"}}}).start()
    yield toolbox
    toolbox.close()


def count_hops(monkeypatch):
    hops = []
    original = LoopThread.submit

    def counting(self, coro):
        hops.append(1)
        return original(self, coro)

    monkeypatch.setattr(LoopThread, "submit", counting)
    return hops


async def test_concurrent_callers_share_one_hop_and_get_their_own_results(toolbox, monkeypatch):
    hops = count_hops(monkeypatch)
    results = await asyncio.gather(*(toolbox.acall_many([ToolCall("sleep", {"ms": ms}), ToolCall("sleep", {"ms": 0})])
                                     for ms in range(100)))
    assert [[r.text for r in pair] for pair in results] == [[f"slept {ms} ms", "slept 0 ms"] for ms in range(100)]
    assert len(hops) == 1


async def test_a_cancelled_caller_does_not_disturb_the_others(toolbox):
    slow = asyncio.ensure_future(toolbox.acall_many([ToolCall("sleep", {"ms": 300})]))
    fast = asyncio.ensure_future(toolbox.acall_many([ToolCall("process_id", {})]))  # not merged with the sleep
    await asyncio.sleep(0.05)
    slow.cancel()
    assert int((await fast)[0].text) > 0
    with pytest.raises(asyncio.CancelledError):
        await slow
    assert (await toolbox.acall_many([ToolCall("sleep", {"ms": 2})]))[0].text == "slept 2 ms"


def test_callers_on_several_threads_and_loops(toolbox):
    outcomes: dict[int, list[str]] = {}

    def caller(index: int) -> None:
        async def run():
            results = await asyncio.gather(*(toolbox.acall_many([ToolCall("sleep", {"ms": index * 10 + i})])
                                             for i in range(5)))
            return [r[0].text for r in results]
        outcomes[index] = asyncio.run(run())

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert outcomes == {i: [f"slept {i * 10 + k} ms" for k in range(5)] for i in range(4)}


async def test_closing_the_toolbox_under_waiting_callers_gives_error_results():
    toolbox = Toolbox({"mcpServers": {"sleep": {"module": "rlfactory_tool_servers.sleep"}}}).start()
    pending = asyncio.ensure_future(toolbox.acall_many([ToolCall("sleep", {"ms": 5_000})]))
    await asyncio.sleep(0.1)
    await asyncio.to_thread(toolbox.close)
    [result] = await asyncio.wait_for(pending, 10)
    assert result.is_error and "closed" in result.text


async def test_closing_the_toolbox_under_a_batch_step_ends_those_episodes_with_an_error():
    from rlfactory_envs import EnvBatch

    servers = {"mcpServers": {"sleep": {"module": "rlfactory_tool_servers.sleep"}}}
    batch = EnvBatch.make("rlf/Search-NQ-v0", 2, tool_servers=servers)
    try:
        await batch.areset(seeds=[0, 1])
        action = '<tool_call>\n{"name": "sleep", "arguments": {"ms": 5000}}\n</tool_call>'
        step = asyncio.ensure_future(batch.astep([action, action]))
        await asyncio.sleep(0.2)
        await asyncio.to_thread(batch.envs[0].toolbox.close)
        results = await asyncio.wait_for(step, 10)
        assert all(r.truncated and "stopped" in r.info["error"] for r in results)
        assert all(env.done for env in batch.envs)
    finally:
        batch.close()


def test_closing_the_toolbox_under_a_sync_step_raises_a_clear_error():
    import gymnasium as gym

    env = gym.make("rlf/Search-NQ-v0", tool_servers={"mcpServers": {"sleep": {"module": "rlfactory_tool_servers.sleep"}}}).unwrapped
    try:
        env.reset(seed=0)
        timer = threading.Timer(0.2, env.toolbox.close)
        timer.start()
        with pytest.raises(RuntimeError, match="stopped"):
            env.step('<tool_call>\n{"name": "sleep", "arguments": {"ms": 5000}}\n</tool_call>')
        timer.join()
    finally:
        env.close()


async def test_a_caller_gets_its_results_without_waiting_for_a_slow_caller_of_the_same_hop(toolbox, monkeypatch):
    hops = count_hops(monkeypatch)
    slow = asyncio.ensure_future(toolbox.acall_many([ToolCall("sleep", {"ms": 2_000})]))
    fast = asyncio.ensure_future(toolbox.acall_many([ToolCall("process_id", {})]))  # not merged with the sleep
    [result] = await asyncio.wait_for(fast, 1.0)
    assert int(result.text) > 0 and not slow.done()
    assert len(hops) == 1  # handed over together all the same
    assert (await slow)[0].text == "slept 2000 ms"


async def test_a_fast_call_merged_with_a_slow_one_is_answered_without_waiting_for_it(toolbox):
    slow = asyncio.ensure_future(toolbox.acall_many([ToolCall("sleep", {"ms": 2_000})]))
    fast = asyncio.ensure_future(toolbox.acall_many([ToolCall("sleep", {"ms": 0})]))  # one merged sleep_batch
    [result] = await asyncio.wait_for(fast, 1.0)
    assert result.text == "slept 0 ms" and not slow.done()
    assert (await slow)[0].text == "slept 2000 ms"
    assert toolbox.stats()["servers"]["sleep"]["tools"]["sleep"]["calls"] == 2
