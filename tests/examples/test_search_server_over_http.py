"""examples/search_server_over_http.sh against the real `rlf serve search --transport http`: the rollout's every
search goes over streamable HTTP, trajectories are written where the script says, and the episodes earn reward."""

from __future__ import annotations

import json

from rlfactory_envs.search.family import SAMPLE_QUESTIONS_PATH
from tests.conftest import free_port
from tests.examples.helpers import rlf_serve, run_example


def test_search_server_over_http_script_writes_rewarded_trajectories(tmp_path):
    # the questions: 4 of the embedded sample's, named after the script's name as its comment says
    questions = SAMPLE_QUESTIONS_PATH.read_text(encoding="utf-8").splitlines()[:4]
    (tmp_path / "nq.jsonl").write_text("\n".join(questions) + "\n", encoding="utf-8")
    with rlf_serve("search") as url:  # the embedded sample's corpus by default
        run_example(["bash", "examples/search_server_over_http.sh", "--set", "data_path=nq.jsonl"], cwd=tmp_path,
                    RETRIEVER_URL=url)
    records = [json.loads(line) for line in (tmp_path / "trajectories_http.jsonl").read_text().splitlines()]
    assert [r["task"]["question"] for r in records] == [json.loads(q)["question"] for q in questions]  # each once
    assert all(r["error"] is None and r["tool_calls"] == 1 and r["tool_errors"] == 0 for r in records), records
    assert sum(r["reward"] > 0 for r in records) >= 2
    assert records[0]["messages"][2]["role"] == "tool" and records[0]["messages"][2]["content"].startswith("Doc 1(")


def test_search_server_over_http_script_needs_the_server(tmp_path):
    """The tools really come from RETRIEVER_URL: with nothing listening there the script stops, saying so."""
    url = f"http://127.0.0.1:{free_port()}/mcp"
    done = run_example(["bash", "examples/search_server_over_http.sh"], cwd=tmp_path, expect_ok=False,
                       RETRIEVER_URL=url, N="2")
    assert done.returncode == 2 and f"cannot connect to {url}" in done.stderr, done.stderr
    assert not (tmp_path / "trajectories_http.jsonl").exists() or not (tmp_path / "trajectories_http.jsonl").read_text()
