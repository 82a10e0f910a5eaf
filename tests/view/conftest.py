"""Trajectory files of every family, written by ``rlf rollout --out`` as a user runs it (one session's worth)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse

from tests.conftest import REPO_ROOT, chat_completion, openai_endpoint
from tests.view.viewer import rlf_command

FAMILY_IDS = {"search": "rlf/Search-NQ-v0", "sql": "rlf/NL2SQL-Spider-v0", "travel": "rlf/Travel-v0",
              "android": "rlf/Android-v0"}
"""A registered id per family with a scripted baseline (``rlf rollout --policy scripted``)."""
CUSTOM_ENV = REPO_ROOT / "examples" / "custom_env" / "env.yaml"


async def calculator_model(request: Request) -> JSONResponse:
    """A scripted model for the generic family's example env: multiply once, then answer 204."""
    body = await request.json()
    history = " ".join(str(m.get("content")) for m in body["messages"])
    text = "<answer>204</answer>" if "</tool_call>" in history or "tool_response" in history else \
        '<tool_call>{"name": "multiply", "arguments": {"a": 12, "b": 17}}</tool_call>'
    return JSONResponse(chat_completion({"content": text}))


def rollout(env: str, out: Path, *extra: str) -> None:
    """``rlf rollout ENV -n 4 --out OUT``, failing the test with its output when it fails."""
    done = subprocess.run([*rlf_command(), "rollout", env, "-n", "4", "--out", str(out), "--no-progress", *extra],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="session")
def family_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A trajectory file per family, by family name (``generic``: the custom env of examples/, played by a
    scripted OpenAI-compatible endpoint)."""
    folder = tmp_path_factory.mktemp("runs")
    runs = {}
    for family, env_id in FAMILY_IDS.items():
        runs[family] = folder / f"{family}.jsonl"
        rollout(env_id, runs[family])
    with openai_endpoint(calculator_model) as base_url:
        runs["generic"] = folder / "generic.jsonl"
        rollout(str(CUSTOM_ENV), runs["generic"], "--policy", "openai", "--base-url", base_url, "--model", "calc")
    return runs


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
