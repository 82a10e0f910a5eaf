"""The env semantics of tests/kernel/test_env_properties.py, as hypothesis properties of the two NL2SQL ids."""

from __future__ import annotations

import asyncio
import json

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rlfactory_envs  # noqa: F401
from rlfactory_envs import EnvBatch
from tests.env_semantics import assert_max_turns_truncates, play_checking_semantics

IDS = ["rlf/NL2SQL-Spider-v0", "rlf/NL2SQL-BIRD-v0"]
PROPERTY_SETTINGS = settings(max_examples=25, deadline=None,
                             suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module", params=IDS)
def env(request):
    env = gym.make(request.param, max_turns=3, max_action_chars=4096, query_timeout_s=0.5).unwrapped
    yield env
    env.close()


def call(name, **arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


sql_text = st.one_of(st.sampled_from(["SELECT 1", "SELECT * FROM books", "DROP TABLE books", "SELECT 1; SELECT 2",
                                      "SELECT count(*) FROM students", "PRAGMA query_only=0", ""]),
                     st.text(max_size=60))
markup = st.sampled_from(["<tool_call>", "</tool_call>", "<answer>", "</answer>", "<think>", "</think>", "{", "}",
                          '"name"', '"arguments"', ":", '"run_query"', '"sql"', "SELECT", ";", "\n"])
actions = st.one_of(
    st.text(max_size=200),
    st.lists(markup | st.text(max_size=12), max_size=20).map("".join),
    sql_text.map(lambda sql: call("run_query", sql=sql)),
    st.text(max_size=30).map(lambda table: call("describe_table", table=table)),
    st.just(call("list_tables")),
    st.fixed_dictionaries({"db_id": st.text(max_size=20), "sql": sql_text}).map(lambda a: call("run_query", **a)),
    sql_text.map(lambda sql: f"<answer>{sql}</answer>"),
    st.integers(4000, 9000).map(lambda n: "x" * n),
)


def test_check_env_passes(env):
    check_env(env)


@PROPERTY_SETTINGS
@given(seed=st.integers(0, 2**31 - 1))
def test_seeded_reset_is_deterministic(env, seed):
    assert env.reset(seed=seed) == env.reset(seed=seed)


@PROPERTY_SETTINGS
@given(seed=st.integers(0, 1000), episode=st.lists(actions, min_size=1, max_size=5))
def test_episode_semantics(env, seed, episode):
    for reward, info in play_checking_semantics(env, seed, episode):
        assert reward in (0.0, 1.0)
        for result in info.get("tool_results", []):
            assert "Traceback" not in result["text"]


@PROPERTY_SETTINGS
@given(seed=st.integers(0, 1000))
def test_max_turns_bounds_every_episode(env, seed):
    assert_max_turns_truncates(env, seed, call("list_tables"))


@settings(max_examples=10, deadline=None)
@given(plan=st.lists(st.sampled_from(["query", "gold", "junk", "skip"]), min_size=2, max_size=10),
       seed=st.integers(0, 1000), env_id=st.sampled_from(IDS))
def test_batch_outputs_align_with_inputs(plan, seed, env_id):
    async def run():
        batch = EnvBatch.make(env_id, len(plan), max_turns=3)
        try:
            resets = await batch.areset(seeds=[seed + i for i in range(len(plan))])
            golds = [info["task"]["gold_sql"] for _, info in resets]
            texts = {"query": lambda i: call("run_query", sql=golds[i]),
                     "gold": lambda i: f"<answer>{golds[i]}</answer>",
                     "junk": lambda i: f"junk {i}", "skip": lambda i: None}
            results = await batch.astep([texts[kind](i) for i, kind in enumerate(plan)])
            for i, (kind, result) in enumerate(zip(plan, results)):
                if kind == "skip":
                    assert result is None
                    continue
                assert result.info["task_id"] == resets[i][1]["task_id"]
                if kind == "gold":
                    assert result.terminated and result.reward == 1.0
                elif kind == "query":
                    assert not result.info["tool_results"][0]["is_error"]
                    assert "<tool_response>" in result.observation
                else:
                    assert "neither a tool call nor a final answer" in result.observation
        finally:
            batch.close()

    asyncio.run(run())
