"""Tool calls are read as the serving stack reads them (vLLM's hermes parser: strict JSON) unless repair is asked
for; a repaired call runs and counts as a format error in ``info`` and in the rollout's summary."""

from __future__ import annotations

import asyncio
import json

import gymnasium as gym

import rlfactory_envs  # noqa: F401 - registers the ids
from rlfactory_envs.rollout.model_free import ReplayPolicy
from rlfactory_envs.rollout.runner import run_rollouts

BARE_WORDS = "<tool_call>{name: search, arguments: {query: corrow}}</tool_call>"
CUT_SHORT = '<tool_call>{"name": "search", "arguments": {"query": "co'


def step_once(response: str, **settings):
    env = gym.make("rlf/Search-NQ-v0", **settings).unwrapped
    try:
        env.reset(seed=0)
        return env.step(response)
    finally:
        env.close()


def test_by_default_a_call_vllm_would_reject_runs_nothing_and_the_model_is_told():
    for response in (BARE_WORDS, CUT_SHORT):
        obs, _, _, _, info = step_once(response)
        assert info["tool_calls"] == [] and info["tool_results"] == []
        [error] = info["parse_errors"]
        assert error.startswith("Tool call 1 could not be read: it is not valid JSON") and error in obs


def test_asked_to_repair_the_call_runs_and_is_a_format_error(tmp_path):
    obs, _, _, _, info = step_once(BARE_WORDS, repair_tool_calls=True)
    assert info["tool_calls"] == [{"name": "search", "arguments": {"query": "corrow"}}]
    assert "Corrow" in info["tool_results"][0]["text"]
    [error] = info["parse_errors"]
    assert error.startswith("Tool call 1 was repaired before it ran") and error in obs
    replay = tmp_path / "replay.jsonl"
    replay.write_text(json.dumps({"task_id": "rlf-sample-000", "responses": [BARE_WORDS, "<answer>x</answer>"]}))
    summary, [record] = asyncio.run(run_rollouts("rlf/Search-NQ-v0", lambda env: ReplayPolicy(replay), 1,
                                                 env_kwargs={"repair_tool_calls": True}, progress=False))
    assert record.tool_calls == 1 and record.format_errors == 1 and summary.format_errors == 1
    assert "format errors                1" in summary.table()
