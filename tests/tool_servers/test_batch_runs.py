"""How a batched form runs its elements: a user's blocking function in one worker thread per batch (another joins
when one element holds it), so a hanging call fails alone at the deadline; a sync toolset method inline; and the
sleep server's waits sharing one timer per millisecond; an async element that never waits needs no task."""

from __future__ import annotations

import asyncio
import functools
import threading
import time

from mcp import Client

from rlfactory_tool_servers.batch_runs import ElementDeadline, Run
from rlfactory_tool_servers.functions import build_server
from rlfactory_tool_servers.sleep.server import Alarms
from rlfactory_tool_servers.wire import DEADLINE

THREADS: list[int] = []
RELEASE = threading.Event()


def where(x: int) -> int:
    """The worker thread that ran the call (recorded), and ``x`` back."""
    THREADS.append(threading.get_ident())
    return x


def hang_on(x: int) -> int:
    """``x`` back, but ``x == 0`` waits (at most 5 s) until the test releases it."""
    if x == 0:
        RELEASE.wait(5)
    return x


async def batch(client: Client, tool: str, calls: list[dict], **options) -> dict:
    result = await client.call_tool(f"{tool}_batch", {"calls": calls, **options})
    assert not result.is_error, result.content
    return result.structured_content


async def test_a_batch_of_quick_blocking_calls_takes_one_worker_thread():
    THREADS.clear()
    async with Client(build_server([f"{__name__}:where"])) as client:
        reply = await batch(client, "where", [{"x": i} for i in range(500)], deadline_s=10)
    assert [entry["text"] for entry in reply["results"]] == [str(i) for i in range(500)]
    assert len(THREADS) == 500 and len(set(THREADS)) == 1
    assert threading.get_ident() not in THREADS  # not the loop's thread


async def test_a_hanging_blocking_call_holds_back_no_other_and_fails_alone_at_the_deadline():
    RELEASE.clear()
    try:
        async with Client(build_server([f"{__name__}:hang_on"])) as client:
            started = time.monotonic()
            first = await batch(client, "hang_on", [{"x": i} for i in range(50)], deadline_s=1.0,
                                reply_after_s=0.05)
            answered_in = time.monotonic() - started
            assert first["results"][0] is None and first["ticket"] is not None
            assert [entry["text"] for entry in first["results"][1:]] == [str(i) for i in range(1, 50)]
            assert answered_in < 0.9  # a sibling thread took the other calls long before the deadline
            late = await batch(client, "hang_on", [], collect=first["ticket"], reply_after_s=0.05)
            while late["ticket"] is not None and "0" not in late["results"]:
                late = await batch(client, "hang_on", [], collect=late["ticket"], reply_after_s=0.05)
        assert late["results"]["0"]["failure"] == DEADLINE and "deadline" in late["results"]["0"]["text"]
    finally:
        RELEASE.set()


async def test_waits_ending_in_the_same_millisecond_share_one_timer():
    alarms = Alarms()
    started = time.monotonic()
    waits = [asyncio.ensure_future(alarms.wait(50)) for _ in range(2000)]
    await asyncio.sleep(0)
    assert len(alarms._due) < 100  # one timer per millisecond the 2,000 waits took to begin, not 2,000
    await asyncio.gather(*waits)
    assert 0.05 <= time.monotonic() - started < 1.0 and not alarms._due
    await asyncio.wait_for(alarms.wait(0), 0.01)  # no wait at all


async def test_async_elements_that_never_wait_take_no_task_and_the_others_run_on_to_their_end():
    cleaned: list[str] = []

    async def at_once(x: int) -> int:
        return x

    async def after_a_wait(x: int) -> int:
        await asyncio.sleep(0.01)
        return 10 * x

    async def fails_at_once() -> None:
        raise ValueError("at once")

    async def fails_after_a_wait() -> None:
        await asyncio.sleep(0)
        raise ValueError("after a wait")

    async def hangs() -> None:
        try:
            await asyncio.sleep(10)
        finally:
            cleaned.append("hangs")

    before = len(asyncio.all_tasks())
    run = Run.of({0: functools.partial(at_once, 1), 1: functools.partial(after_a_wait, 2), 2: fails_at_once,
                  3: fails_after_a_wait, 4: hangs}, deadline_s=0.3)
    assert len(asyncio.all_tasks()) - before == 3  # the three that wait, not the two done at once
    done = await run.next_reply(None)
    assert done[0] == 1 and done[1] == 20
    assert str(done[2]) == "at once" and str(done[3]) == "after a wait"
    assert isinstance(done[4], ElementDeadline) and run.finished
    await asyncio.sleep(0)
    assert cleaned == ["hangs"]  # the cancellation reached the coroutine itself
