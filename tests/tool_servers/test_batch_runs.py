"""How a batched form runs its elements: a user's blocking function in one worker thread per batch (another joins
when one element holds it), so a hanging call fails alone at the deadline; a sync toolset method inline; and the
sleep server's waits sharing one timer per millisecond."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from mcp import Client

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


@pytest.mark.alone
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


@pytest.mark.alone
async def test_waits_ending_in_the_same_millisecond_share_one_timer():
    alarms = Alarms()
    started = time.monotonic()
    waits = [asyncio.ensure_future(alarms.wait(50)) for _ in range(2000)]
    await asyncio.sleep(0)
    assert len(alarms._due) < 100  # one timer per millisecond the 2,000 waits took to begin, not 2,000
    await asyncio.gather(*waits)
    assert 0.05 <= time.monotonic() - started < 1.0 and not alarms._due
    await asyncio.wait_for(alarms.wait(0), 0.01)  # no wait at all
