"""A hostile query cannot take the process's memory or the workers: a row of 512 one-megabyte blobs is refused
before it is built, a session runs at most two queries at once, the deadline counts the wait for a worker, and a
query past its deadline is interrupted even where the progress handler does not run."""

from __future__ import annotations

import asyncio
import resource
import sys
import time

import pytest
from mcp import Client

from rlfactory_envs.sql.tasks import SAMPLE_DB_DIR
from rlfactory_reward_models.sql.execution import SqlExecutionReward
from rlfactory_tool_servers.sql.server import SqlLimits, SqlTools, create_server
from rlfactory_tool_servers.sql.sandbox import engine
from rlfactory_tool_servers.sql.sandbox.catalog import DatabaseCatalog, FairSlots
from rlfactory_tool_servers.sql.sandbox.engine import QueryTimeout, ReadOnlyDatabase, ResultTooLarge

WIDE_BLOBS = "SELECT " + ", ".join(["zeroblob(999999)"] * 512)
CARTESIAN = "SELECT count(*) FROM sales a, sales b, sales c, sales d, sales e, sales f"
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"  # any database
RSS_GROWTH_LIMIT_MB = 200


def peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def sample_database() -> ReadOnlyDatabase:
    return DatabaseCatalog(SAMPLE_DB_DIR).get("bookshop")


def test_a_row_of_512_megabyte_blobs_is_refused_before_it_is_built():
    db = sample_database()
    before = peak_rss_mb()
    for _ in range(4):
        with pytest.raises(ResultTooLarge, match="too big for a row"):
            db.execute(WIDE_BLOBS)
    assert peak_rss_mb() - before < RSS_GROWTH_LIMIT_MB
    assert len(db.execute("SELECT zeroblob(999999), zeroblob(999999)", engine.QueryLimits(max_bytes=10**8)).rows) == 1
    assert db.execute("SELECT name FROM authors WHERE author_id = 1 -- a trailing comment").rows == [("Idris Mallet",)]


def test_the_tool_and_the_reward_refuse_the_wide_row_with_a_message():
    catalog = DatabaseCatalog(SAMPLE_DB_DIR, threads=2)
    before = peak_rss_mb()

    async def call() -> str:
        async with Client(create_server(SqlTools(catalog))) as client:
            result = await client.call_tool("run_query", {"db_id": "bookshop", "sql": WIDE_BLOBS})
        assert result.is_error
        return result.content[0].text

    assert "too_large" in asyncio.run(call())
    reward = SqlExecutionReward(catalog, test_suite="off")
    scored = reward.verify("bookshop", "SELECT 1", WIDE_BLOBS)
    assert scored.value == 0.0 and "too big for a row" in scored.reason
    assert peak_rss_mb() - before < RSS_GROWTH_LIMIT_MB


def test_the_value_limit_shrinks_with_the_column_count():
    assert engine.value_limit(1) == engine.MAX_VALUE_BYTES
    assert engine.value_limit(512) * 512 <= max(engine.MAX_ROW_BYTES, 512 * engine.MIN_VALUE_BYTES)


async def test_a_session_runs_at_most_two_queries_and_others_go_first():
    slots = FairSlots(total=3, per_session=2)
    far = time.monotonic() + 60
    held = [slots.slot("hostile", far) for _ in range(3)]
    await held[0].__aenter__()
    await held[1].__aenter__()
    third = asyncio.ensure_future(held[2].__aenter__())
    await asyncio.sleep(0.05)
    assert not third.done() and slots.running == {"hostile": 2}  # queued, though a thread is free
    async with slots.slot("honest", far):
        assert slots.running == {"hostile": 2, "honest": 1}
    await held[0].__aexit__(None, None, None)
    await asyncio.wait_for(third, 5)
    assert slots.running == {"hostile": 2}
    await held[1].__aexit__(None, None, None)
    await held[2].__aexit__(None, None, None)
    assert slots.running == {}


async def test_waiting_for_a_slot_counts_against_the_deadline():
    slots = FairSlots(total=1, per_session=1)
    async with slots.slot("a", time.monotonic() + 60):
        with pytest.raises(QueryTimeout, match="waited past its deadline"):
            async with slots.slot("b", time.monotonic() + 0.2):
                pass
    assert slots.running == {}


async def test_the_third_query_of_a_session_waits_on_the_real_server():
    service = SqlTools(DatabaseCatalog(SAMPLE_DB_DIR, threads=8), SqlLimits(timeout_s=1.0))
    hostile = [service.run_query("bookshop", CARTESIAN, "hostile") for _ in range(3)]
    outcomes = await asyncio.gather(*hostile, return_exceptions=True)
    messages = [str(outcome) for outcome in outcomes]
    assert sum("waited past its deadline" in message for message in messages) == 1, messages
    assert sum("ran longer than 1 s" in message for message in messages) == 2, messages


def test_a_query_past_its_deadline_is_interrupted_without_the_progress_handler(monkeypatch):
    monkeypatch.setattr(engine, "PROGRESS_OPCODES", 2**30)  # connections opened now: the handler never runs
    db = sample_database()
    started = time.monotonic()
    with pytest.raises(QueryTimeout):
        db.execute(CARTESIAN, engine.QueryLimits(timeout_s=0.3))
    assert time.monotonic() - started < 10  # the join runs for minutes when nothing stops it


def test_a_query_queued_past_its_deadline_is_not_run():
    with pytest.raises(QueryTimeout, match="waited longer than its deadline"):
        sample_database().execute("SELECT 1", not_after=time.monotonic() - 1)


def test_a_query_that_yields_the_cpu_still_answers_and_still_stops():
    db = sample_database()
    yielding = engine.QueryLimits(timeout_s=0.5, yield_after_s=0.0)
    assert db.execute("SELECT count(*) FROM sales", yielding).rows == db.execute("SELECT count(*) FROM sales").rows
    with pytest.raises(QueryTimeout):
        db.execute(CARTESIAN, yielding)


def test_the_env_sends_its_episode_in_meta_and_the_model_never_sees_it():
    from rlfactory_envs.kernel.tool_call import ToolCall
    from rlfactory_envs.sql.env import SqlEnv

    env = SqlEnv(test_suite="off")
    try:
        env.reset(seed=0)
        [spec] = [spec for spec in env.tool_specs if spec.name == "run_query"]
        assert "session" not in spec.input_schema["properties"] and spec.episode_state
        [bound] = env._bind_arguments([ToolCall("run_query", {"sql": "SELECT 1"})])
        assert bound.episode == bound.affinity == env.episode_id and "session" not in bound.arguments
    finally:
        env.close()


async def test_an_honest_step_merged_with_hostile_queries_does_not_wait_for_them():
    """The honest and the hostile envs step on one loop, so their queries travel in one merged request; the honest
    one comes back when it is done, not when the hostile ones hit their deadline."""
    from rlfactory_envs.sql.env import SqlEnv, sql_server_config

    config = sql_server_config(str(SAMPLE_DB_DIR), timeout_s=3.0)
    honest, hostile = (SqlEnv(tool_servers=config, test_suite="off") for _ in range(2))
    try:
        await honest.areset(seed=0)
        await hostile.areset(seed=0)
        attack = "".join('<tool_call>{"name": "run_query", "arguments": {"sql": "%s"}}</tool_call>' % ENDLESS
                         for _ in range(2))
        started = time.monotonic()

        async def timed(env, action):
            _, _, _, _, info = await env.astep(action)
            return info, time.monotonic() - started

        (info, honest_s), (attacked_info, attacked_s) = await asyncio.gather(
            timed(honest, '<tool_call>{"name": "run_query", "arguments": {"sql": "SELECT 1"}}</tool_call>'),
            timed(hostile, attack))
        assert not info["tool_results"][0]["is_error"]
        assert all("longer than" in r["text"] for r in attacked_info["tool_results"]), attacked_info["tool_results"]
        assert honest_s < attacked_s / 2, (honest_s, attacked_s)
    finally:
        honest.close()
        hostile.close()
