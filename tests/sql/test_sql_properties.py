"""The env semantics of the two NL2SQL ids through ``rlfactory_envs.testing`` (one test per property), with the SQL
family's own rules: rewards are exactly 0.0 or 1.0, and a batch of envs scores each env's own task."""

from __future__ import annotations

import asyncio
import json

from hypothesis import given, settings
from hypothesis import strategies as st

import rlfactory_envs  # noqa: F401
from rlfactory_envs import EnvBatch
from rlfactory_envs.testing import semantics_test_class

IDS = ["rlf/NL2SQL-Spider-v0", "rlf/NL2SQL-BIRD-v0"]
ENV_KWARGS = {"max_turns": 3, "max_action_chars": 4096, "query_timeout_s": 0.5}


def call(name, **arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


sql_text = st.one_of(st.sampled_from(["SELECT 1", "SELECT * FROM books", "DROP TABLE books", "SELECT 1; SELECT 2",
                                      "SELECT count(*) FROM students", "PRAGMA query_only=0", ""]),
                     st.text(max_size=60))
sql_actions = st.one_of(
    sql_text.map(lambda sql: call("run_query", sql=sql)),
    st.fixed_dictionaries({"db_id": st.text(max_size=20), "sql": sql_text}).map(lambda a: call("run_query", **a)),
    sql_text.map(lambda sql: f"<answer>{sql}</answer>"),
)
"""Real and hostile SQL, mixed into the library's actions (which already cover the markup and every tool)."""


def sql_rewards(env, action, result):
    """Rewards are exactly 0.0 or 1.0, and 0.0 for an episode cut short without an answer."""
    assert result.reward in (0.0, 1.0), f"the SQL reward {result.reward!r} for {action[:80]!r} is not 0.0 or 1.0"
    if result.truncated:
        assert result.reward == 0.0, f"a truncated SQL episode scored {result.reward!r}, not 0.0"


SQL_SEMANTICS = {"env_kwargs": ENV_KWARGS, "max_examples": 50, "actions": sql_actions,
                 "idle_action": call("list_tables"), "check_step": sql_rewards}
TestSpiderSemantics = semantics_test_class("rlf/NL2SQL-Spider-v0", **SQL_SEMANTICS)
TestBirdSemantics = semantics_test_class("rlf/NL2SQL-BIRD-v0", **SQL_SEMANTICS)


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
