"""examples/evaluate_vllm_endpoint.sh against a scripted OpenAI-compatible endpoint (tests/examples/chat_server.py,
real HTTP), on the embedded sample's questions and corpus: the model's tool call and answer go through the env,
and the eval JSONL and the summary JSON are written."""

from __future__ import annotations

import json

import pytest

from rlfactory_envs.search.family import SAMPLE_CORPUS_PATH, SAMPLE_QUESTIONS_PATH
from tests.examples.chat_server import ScriptedModel, serve
from tests.examples.helpers import run_example

MODEL = "org/scripted-model"


@pytest.fixture
def endpoint():
    model = ScriptedModel(MODEL)
    with serve(model) as url:
        yield url, model


def test_evaluate_vllm_endpoint_script_writes_the_eval_and_its_summary(tmp_path, endpoint):
    base_url, model = endpoint
    run_example(["bash", "examples/evaluate_vllm_endpoint.sh", str(SAMPLE_QUESTIONS_PATH), str(SAMPLE_CORPUS_PATH)],
                cwd=tmp_path, BASE_URL=base_url, MODEL=MODEL, N="6", INDEX_DIR=str(tmp_path / "bm25"))
    records = [json.loads(line) for line in (tmp_path / "eval_scripted-model.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in records] == [f"rlf-sample-{i:03d}" for i in range(6)]  # the first six, in order
    assert all(r["error"] is None and r["terminated"] and r["tool_calls"] == 1 and r["tool_errors"] == 0
               for r in records), records
    # the structured tool call and the reasoning reach the env as the model's raw Qwen3 text
    assert records[0]["messages"][1]["content"].startswith("<think>\nI should look this up.\n</think>\n\n<tool_call>")
    summary = json.loads((tmp_path / "eval_summary.json").read_text())
    assert summary["episodes"] == 6 and summary["tool_calls"] == 6
    assert summary["mean_reward"] == pytest.approx(sum(r["reward"] for r in records) / 6) and summary["mean_reward"] > 0
    # what the script asked for: its model name, greedy decoding, its token cap, the env's search tool
    first = model.requests[0]
    assert (first["model"], first["temperature"], first["max_tokens"]) == (MODEL, 0.0, 1024)
    assert [t["function"]["name"] for t in first["tools"]] == ["search"]
    assert (tmp_path / "bm25").is_dir()  # the BM25 index went where INDEX_DIR says
