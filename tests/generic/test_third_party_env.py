"""The generic env with an MCP server nobody here wrote (the MCP project's reference server, from npm, over stdio),
a JSONL dataset and a reward function from a module: Gymnasium's check_env, the shipped semantics properties, and
real episodes."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import rlfactory_envs  # noqa: F401 - registers rlf/MCP-v0
from rlfactory_envs.testing import check_env_semantics
from tests.third_party_servers import everything_server_entry

pytestmark = pytest.mark.integration

ROWS = [{"id": f"sum-{a}-{b}", "question": f"What is {a} plus {b}?", "ground_truth": str(a + b)}
        for a, b in [(17, 25), (-40, 2), (1000, 2024), (3, 4)]]


@pytest.fixture(scope="module")
def settings(tmp_path_factory) -> dict:
    data = tmp_path_factory.mktemp("everything") / "sums.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    # The reference server also offers tools that run for seconds, fetch from the network or start background
    # notifications; an env picks the ones its tasks need.
    return {"tool_servers": {"mcpServers": {"everything": everything_server_entry(timeout_s=10)}},
            "data_path": str(data), "reward": "tests.generic.fixtures:numeric_reward",
            "tools_allowed": ["get-sum", "echo"], "max_turns": 3}


def test_episodes_with_the_third_party_server(settings):
    env = gym.make("rlf/MCP-v0", **settings).unwrapped
    try:
        obs, info = env.reset(options={"task_id": "sum-17-25"})
        assert obs == "What is 17 plus 25?"
        assert sorted(tool["function"]["name"] for tool in info["tools"]) == ["echo", "get-sum"]
        call = json.dumps({"name": "get-sum", "arguments": {"a": 17, "b": 25}})
        obs, reward, terminated, truncated, info = env.step(f"<tool_call>{call}</tool_call>")
        assert "The sum of 17 and 25 is 42." in obs and not info["tool_results"][0]["is_error"]
        _, reward, terminated, _, info = env.step("<answer>42</answer>")
        assert terminated and reward == 1.0
        env.reset(options={"task_id": "sum-3-4"})
        bad = json.dumps({"name": "get-sum", "arguments": {"a": "three"}})
        obs, *_ , info = env.step(f"<tool_call>{bad}</tool_call>")
        assert info["tool_results"][0]["is_error"] and "<tool_response>" in obs
        _, reward, terminated, _, _ = env.step("<answer>8</answer>")
        assert terminated and reward == 0.0
    finally:
        env.close()


def test_check_env_and_the_semantics_properties(settings):
    check_env_semantics(lambda: gym.make("rlf/MCP-v0", **settings), max_examples=15)
