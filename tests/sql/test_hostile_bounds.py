"""A hostile query cannot take the process's memory or the workers: a row of 512 one-megabyte blobs is refused
before it is built, a caller runs at most two queries at once, a query that outgrows a light CPU slice goes on as
heavy and leaves threads and the CPU to light ones, the deadline counts the wait for a worker, and a query past its
deadline is interrupted even where the progress handler does not run."""

from __future__ import annotations

import asyncio
import math
import resource
import sys
import threading
import time

import pytest
from mcp import Client

from rlfactory_envs.sql.tasks import SAMPLE_DB_DIR
from rlfactory_reward_models.sql.execution import SqlExecutionReward
from rlfactory_tool_servers.sql.server import SqlLimits, SqlTools, create_server, heavy_threads, parse_options
from rlfactory_tool_servers.sql.sandbox import engine, statement_check
from mcp.server.mcpserver.exceptions import ToolError
from rlfactory_tool_servers.sql.sandbox.catalog import DatabaseCatalog
from rlfactory_tool_servers.sql.sandbox.engine import QueryTimeout, ReadOnlyDatabase, ResultTooLarge
from rlfactory_tool_servers.sql.sandbox.cpu_share import HEAVY_BATON, HEAVY_RUNNERS
from rlfactory_tool_servers.sql.sandbox.fair_pool import FairPool, SliceSpent, Turn

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


async def blocked(pool: FairPool, client, gate: threading.Event, not_after: float = math.inf):
    """A unit of ``client`` that holds its thread until ``gate`` opens; the task running it."""
    task = asyncio.ensure_future(pool.run(client, lambda turn: gate.wait(30), not_after))
    await asyncio.sleep(0.05)
    return task


async def test_a_client_runs_at_most_its_limit_and_others_go_first():
    pool = FairPool(3, reserve=0)
    hostile, gate = pool.client("hostile", 2), threading.Event()
    held = [await blocked(pool, hostile, gate) for _ in range(3)]
    assert not held[2].done() and hostile.running == 2 and hostile.waiting == 1  # queued, though a thread is free
    assert await pool.run(pool.client("honest"), lambda turn: "answered", time.monotonic() + 5) == "answered"
    gate.set()
    assert await asyncio.gather(*held) == [True] * 3
    assert (pool.busy, hostile.running, hostile.waiting) == (0, 0, 0)
    pool.close()


async def test_waiting_for_a_thread_counts_against_the_deadline():
    pool, gate = FairPool(1, reserve=0), threading.Event()
    held = await blocked(pool, pool.client("a"), gate)
    with pytest.raises(QueryTimeout, match="waited past its deadline"):
        await pool.run(pool.client("b"), lambda turn: None, time.monotonic() + 0.2)
    gate.set()
    await held
    assert pool.busy == 0
    pool.close()


@pytest.mark.alone
async def test_heavy_units_keep_the_reserved_threads_free_for_light_ones():
    """Three quarters of the threads at most go to heavy clients: with every one of those held, a light client is
    admitted at once, a heavy one waits."""
    pool, gate = FairPool(4), threading.Event()
    heavy = pool.client("heavy", 8)
    heavy.heavy = True  # as a spent slice makes it
    held = [await blocked(pool, heavy, gate) for _ in range(4)]
    assert (pool.heavy_busy, heavy.waiting) == (3, 1)
    started = time.monotonic()
    assert await pool.run(pool.client("light"), lambda turn: turn.heavy, time.monotonic() + 5) is False
    assert time.monotonic() - started < 0.5
    gate.set()
    await asyncio.gather(*held)
    pool.close()


async def test_the_sql_servers_heavy_queries_take_no_thread_of_the_light_ones():
    """The SQL server's pool: heavy queries hold ``--heavy-threads`` threads of their own, so with 32 hostile
    episodes' queries holding or waiting for every one, 32 light queries run at once (when heavy ones held three
    quarters of the 32 threads, 8 did and the rest queued behind them)."""
    options = parse_options(["--db-dir", str(SAMPLE_DB_DIR)])
    pool = DatabaseCatalog(options.db_dir, threads=options.threads, heavy_threads=heavy_threads(options)).pool
    gate, together = threading.Event(), threading.Barrier(options.threads, timeout=5)
    hostile = [pool.client(f"hostile-{i}", 2) for i in range(32)]
    for client in hostile:
        client.heavy = True  # as a spent slice makes it
    held = [asyncio.ensure_future(pool.run(client, lambda turn: gate.wait(30), math.inf))
            for client in hostile for _ in range(2)]
    await asyncio.sleep(0.1)
    assert pool.heavy_busy == pool.heavy_threads == 24
    light = [pool.run(pool.client(f"honest-{i}"), lambda turn: together.wait(), time.monotonic() + 5)
             for i in range(options.threads)]
    assert sorted(await asyncio.gather(*light)) == list(range(options.threads))  # all running at once
    gate.set()
    await asyncio.gather(*held)
    pool.close()


@pytest.mark.alone
def test_a_light_turn_stops_past_its_cpu_slice_and_a_heavy_one_at_its_deadline():
    db, pool = sample_database(), FairPool(2)
    light = Turn(pool.client(), False)
    light.begin()
    try:
        with pytest.raises(SliceSpent):
            db.execute(CARTESIAN, engine.QueryLimits(timeout_s=30), turn=light)
    finally:
        light.end()
    heavy = Turn(pool.client(), True)
    heavy.begin()
    try:
        assert db.execute("SELECT count(*) FROM sales", turn=heavy).rows[0][0] > 0
        started = time.monotonic()
        with pytest.raises(QueryTimeout):
            db.execute(CARTESIAN, engine.QueryLimits(timeout_s=0.3), turn=heavy)
        assert time.monotonic() - started < 1.0
    finally:
        heavy.end()


async def test_a_query_that_spends_its_slice_goes_on_as_heavy_and_gives_its_answer():
    catalog = DatabaseCatalog(SAMPLE_DB_DIR, threads=2)
    tools = SqlTools(catalog, SqlLimits(timeout_s=20))
    slow = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 3000000) "
            "SELECT count(*) FROM c")  # about 0.3 s of CPU: over a light slice
    assert (await tools.run_query("bookshop", slow, "slow")).splitlines()[1] == "3000000"
    assert catalog.pool.client("slow").heavy and not catalog.pool.client("quick").heavy
    catalog.close()


LONG_TEXT = "SELECT count(*) FROM sales WHERE 1 NOT IN (" + ", ".join(map(str, range(2, 2_002))) + ")"  # > 4 KB


async def test_a_long_query_text_is_read_holding_the_cpu_baton_and_once_per_call(monkeypatch):
    """A text too long to cache starts heavy: its parse (milliseconds of compiled code that keep the GIL) now waits
    for the CPU baton like its query, so 32 hostile episodes sending one each are read one at a time, not on every
    thread at once while honest steps wait for the GIL; and a query pre-empted mid-run is not read again."""
    parses, runs = [], []
    real_parse, real_run = statement_check._parse, ReadOnlyDatabase.run_trusted

    def parse(sql):
        parses.append((len(sql), HEAVY_BATON.free))
        return real_parse(sql)

    def run_once_preempted(self, *args, **kwargs):
        runs.append(len(args[0]))
        if len(runs) == 1:
            raise SliceSpent()  # as when its turn is withdrawn from the baton's queue
        return real_run(self, *args, **kwargs)

    monkeypatch.setattr(statement_check, "_parse", parse)
    monkeypatch.setattr(ReadOnlyDatabase, "run_trusted", run_once_preempted)
    catalog = DatabaseCatalog(SAMPLE_DB_DIR, threads=2)
    try:
        assert int((await SqlTools(catalog).run_query("bookshop", LONG_TEXT, "long")).splitlines()[1]) > 0
    finally:
        catalog.close()
    assert len(runs) == 2
    assert parses == [(len(LONG_TEXT), HEAVY_RUNNERS - 1)]  # read once, by the baton's holder


@pytest.mark.alone
async def test_honest_queries_are_answered_at_once_beside_many_hostile_callers():
    """More hostile callers than threads, each with two endless queries: before the fair pool their queries held
    every thread until their deadline and an honest query waited for it (or was never run)."""
    catalog = DatabaseCatalog(SAMPLE_DB_DIR, threads=8)
    tools = SqlTools(catalog, SqlLimits(timeout_s=3.0))
    hostile = [asyncio.ensure_future(tools.run_query("bookshop", ENDLESS, f"hostile-{i}"))
               for i in range(8) for _ in range(2)]
    await asyncio.sleep(0.3)  # every hostile query has spent its slice and runs (or waits) as heavy
    took = []
    for i in range(10):
        started = time.monotonic()
        assert (await tools.run_query("bookshop", "SELECT count(*) FROM sales", f"honest-{i}")).splitlines()[1]
        took.append(time.monotonic() - started)
    assert max(took) < 0.5, took
    outcomes = await asyncio.gather(*hostile, return_exceptions=True)
    assert all(isinstance(outcome, ToolError) for outcome in outcomes)
    catalog.close()


async def test_the_third_query_of_a_session_waits_on_the_real_server():
    service = SqlTools(DatabaseCatalog(SAMPLE_DB_DIR, threads=8), SqlLimits(timeout_s=1.0))
    hostile = [service.run_query("bookshop", CARTESIAN, "hostile") for _ in range(3)]
    outcomes = await asyncio.gather(*hostile, return_exceptions=True)
    messages = [str(outcome) for outcome in outcomes]
    assert sum("was not run" in message for message in messages) == 1, messages
    assert sum("ran longer than 1 s" in message for message in messages) == 2, messages


@pytest.mark.alone
def test_a_query_past_its_deadline_is_interrupted_without_the_progress_handler(monkeypatch):
    monkeypatch.setattr(engine, "PROGRESS_OPCODES", 2**30)  # connections opened now: the handler never runs
    db = sample_database()
    started = time.monotonic()
    with pytest.raises(QueryTimeout):
        db.execute(CARTESIAN, engine.QueryLimits(timeout_s=0.3))
    assert time.monotonic() - started < 10  # the join runs for minutes when nothing stops it


def test_a_query_queued_past_its_deadline_is_not_run():
    with pytest.raises(QueryTimeout, match="deadline passed before the query could start"):
        sample_database().execute("SELECT 1", not_after=time.monotonic() - 1)


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


@pytest.mark.alone
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
