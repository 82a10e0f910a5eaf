"""`rlf rollout my_env.yaml --policy openai`: the README's example env played end to end by an OpenAI-compatible
endpoint on loopback (a scripted model behind real HTTP) through the installed command."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse

from tests.conftest import chat_completion, openai_endpoint

REPO_ROOT = Path(__file__).resolve().parents[2]
SPEC = REPO_ROOT / "examples" / "custom_env" / "env.yaml"


async def scripted_model(request: Request) -> JSONResponse:
    """Turn 1: multiply the first two numbers of the question (a structured tool call). Turn 2: answer the tool's
    result without its trailing ``.0``."""
    body = await request.json()
    last = body["messages"][-1]
    if last["role"] == "user":
        a, b = re.findall(r"\d+(?:\.\d+)?", last["content"])[:2]
        arguments = json.dumps({"a": float(a), "b": float(b)})
        call = {"id": "call_0", "type": "function", "function": {"name": "multiply", "arguments": arguments}}
        return JSONResponse(chat_completion({"content": None, "tool_calls": [call]}))
    value = float(last["content"])
    return JSONResponse(chat_completion({"content": f"<answer>{value:g}</answer>"}))


@pytest.fixture(scope="module")
def endpoint():
    with openai_endpoint(scripted_model) as url:
        yield url


def test_rollout_of_an_env_spec_through_an_openai_endpoint(endpoint, tmp_path):
    out = tmp_path / "trajectories.jsonl"
    done = subprocess.run([sys.executable, "-m", "rlfactory_envs.cli", "rollout", str(SPEC), "--policy", "openai",
                           "--base-url", endpoint, "--model", "scripted", "--repeat", "2", "--no-progress", "--out",
                           str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["task_id"] for r in records] == ["q1", "q1", "q2", "q2", "q3", "q3"]  # every task twice, in order
    assert all(r["env_id"] == str(SPEC) and r["tool_calls"] == 1 for r in records)
    # 12 x 17 and 23.5 x 8 are right; the road question needs an addition, which this model never makes
    assert {"q3"} < {r["task"]["id"] for r in records}  # both outcomes are played
    assert all((r["reward"] == 1.0) == (r["task"]["id"] != "q3") for r in records)
    assert all(r["reward_parts"] == {"used_tool": 1.0} for r in records)
    assert "mean reward" in done.stdout
