"""The NL2SQL family's own properties: a batch of envs scores each env's own task (the env semantics of both ids,
with the family's rules, are in ``tests/test_semantics.py``)."""

from __future__ import annotations

import asyncio
import json

from hypothesis import given, settings
from hypothesis import strategies as st

import rlfactory_envs  # noqa: F401
from rlfactory_envs import EnvBatch

IDS = ["rlf/NL2SQL-Spider-v0", "rlf/NL2SQL-BIRD-v0"]


def call(name, **arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


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
