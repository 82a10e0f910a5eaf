"""A reason a user's tool raises reaches the model, served in-process or by `rlf serve functions` over stdio, and
the server prints no traceback for it."""

from __future__ import annotations

import json
import sys

import gymnasium as gym
import pytest

import rlfactory_envs  # noqa: F401 - registers the ids
from tests.generic.test_generic_env import ROWS, call, write_jsonl

CONVERT = "tests.generic.fixtures:convert"
SERVED = {"mcpServers": {"units": {"command": sys.executable,
                                   "args": ["-m", "rlfactory_envs.cli", "serve", "functions", CONVERT]}}}


@pytest.mark.parametrize("tools", [{"tools": [CONVERT]}, {"tool_servers": SERVED}], ids=["in-process", "stdio"])
def test_the_reason_a_tool_raises_reaches_the_model(tmp_path, capfd, tools):
    env = gym.make("rlf/MCP-v0", data_path=write_jsonl(tmp_path / "q.jsonl", ROWS), **tools).unwrapped
    try:
        env.reset(seed=0)
        obs, *_, info = env.step(call("convert", value=1, unit="length"))
    finally:
        env.close()
    [result] = info["tool_results"]
    assert result["is_error"] and result["text"] == \
        "Error executing tool convert: ValueError: cannot convert mass to length", json.dumps(result)
    assert result["text"] in obs
    assert "Traceback" not in capfd.readouterr().err
