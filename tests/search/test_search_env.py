"""rlf/Search-NQ-v0 end to end: real data files, a real stdio server, the scripted baseline, the rollout loop."""

import asyncio
import io
import json

import gymnasium as gym
import pytest

from rlfactory_envs.rollout.runner import run_rollouts
from rlfactory_envs.search.family import FAMILY
from rlfactory_envs.search.tasks import SAMPLE_CORPUS_PATH
from tests.conftest import shared_file
from tests.server_process import http_tool_server
from rlfactory_envs.kernel.families import tooling_of

DATA_ENV_VAR, CORPUS_ENV_VAR = FAMILY.env_vars["data_path"], FAMILY.env_vars["corpus_path"]


def search_call(query: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "search", "arguments": {"query": query}}) + "\n</tool_call>"


def test_real_nq_open_and_wiki18_sample():
    data = shared_file("nq/NQ-open.dev.jsonl")
    corpus = shared_file("wiki/wiki18_sample_1000.jsonl")
    env = gym.make("rlf/Search-NQ-v0", data_path=str(data), corpus_path=str(corpus)).unwrapped
    try:
        obs, info = env.reset(seed=7)
        assert info["dataset"] == "NQ-open.dev" and len(env.tasks) == 3608  # two unscorable left out
        assert info["task"]["question"] in obs
        obs, *_ = env.step(search_call("Albert Spalding baseball glove"))
        assert 'Doc 1(Title: "Albert Spalding")' in obs
        golden = env.task.golden_answers[0]
        _, reward, terminated, truncated, info = env.step(f"<answer> {golden.upper()}. </answer>")
        assert (reward, terminated, truncated) == (1.0, True, False)
        assert info["reward_parts"]["exact_match"] == 1.0
    finally:
        env.close()


def test_data_paths_from_environment_variables(monkeypatch, tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "What colour is the sky over Orrin?", "answer": ["teal"]}) + "\n")
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "0", "contents": '"Orrin"\nThe sky over Orrin is teal.'}) + "\n")
    monkeypatch.setenv(DATA_ENV_VAR, str(questions))
    monkeypatch.setenv(CORPUS_ENV_VAR, str(corpus))
    env = gym.make("rlf/Search-NQ-v0").unwrapped
    try:
        _, info = env.reset(seed=0)
        assert info["dataset"] == "q"
        obs, *_ = env.step(search_call("sky over Orrin"))
        assert 'Doc 1(Title: "Orrin") The sky over Orrin is teal.' in obs
    finally:
        env.close()


@pytest.mark.integration
def test_search_server_as_a_stdio_subprocess():
    env = gym.make("rlf/Search-NQ-SearchR1-v0", transport="stdio").unwrapped
    try:
        _, info = env.reset(seed=3)
        entry = env.toolbox.config.servers["search"]
        assert entry.args[:2] == ["-m", "rlfactory_tool_servers.search"]
        obs, *_ = env.step(f"<think>look it up</think><search>{env.task.question}</search>")
        assert obs.startswith("\n\n<information>Doc 1(Title: ") and obs.endswith("</information>\n\n")
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["rlf/Search-NQ-v0", "rlf/Search-NQ-SearchR1-v0"])
def test_scripted_baseline_really_searches_and_scores(env_id):
    out = io.StringIO()
    summary, records = asyncio.run(run_rollouts(env_id, lambda env: tooling_of(env).baseline_policy(env), 60, batch_size=16,
                                                out=out, progress=False))
    assert summary.episodes == 60 and summary.tool_calls == 60 and summary.tool_errors == 0
    assert all(r.turns == 2 and r.terminated for r in records)
    # The sample is built so that the top passage's title answers most questions, but not all of them.
    assert 0.6 <= summary.mean_reward < 1.0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(lines) == 60 and {"task", "messages", "transcript", "reward", "tool_latency_s"} <= set(lines[0])


@pytest.mark.integration
def test_search_server_over_streamable_http(tmp_path):
    with http_tool_server("rlfactory_tool_servers.search", "--corpus", str(SAMPLE_CORPUS_PATH)) as url:
        env = gym.make("rlf/Search-NQ-v0", tool_servers={"mcpServers": {"search": {"url": url}}}).unwrapped
        try:
            _, info = env.reset(seed=2)
            obs, *_ = env.step(search_call(info["task"]["question"]))
            assert "<tool_response>\nDoc 1(Title: " in obs
        finally:
            env.close()


def test_server_config_takes_paths_and_refuses_contradicting_sources(tmp_path):
    from rlfactory_envs.kernel.errors import ConfigError
    from rlfactory_envs.search.env import search_server_config

    config = search_server_config("corpus.jsonl", index_dir=tmp_path / "idx")
    assert ["--index-dir", str(tmp_path / "idx")] == config["mcpServers"]["search"]["args"][-2:]
    with pytest.raises(ConfigError, match="drop index_dir= and milvus_uri="):
        search_server_config(None, retriever_url="http://127.0.0.1:9/retrieve", index_dir="idx")
