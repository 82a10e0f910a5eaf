"""rlf/Search-NQ-v0 over indexes built by ``rlf index build``: ``index_dir=`` (FAISS, Milvus, two fused) and
``retriever_url=`` (a Search-R1 retriever, here our own server's ``/retrieve``), through ``gym.make``."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

import rlfactory_envs  # noqa: F401  (registers the rlf/* ids)

from tests.search.conftest import MINILM, SAMPLE_MAX_LENGTH, write_passages
from tests.server_process import http_tool_server

# Words from the text of the sample's passage 0 (Evan Morris), not its title.
QUERY = "lobbyist for Genentech and its parent corporation Roche"


def search_call(query: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "search", "arguments": {"query": query, "topk": 2}}) + "\n</tool_call>"


def first_search(**env_kwargs: object) -> str:
    """The observation of one ``search`` call in a fresh env built with ``env_kwargs``."""
    env = gym.make("rlf/Search-NQ-v0", **env_kwargs).unwrapped
    try:
        env.reset(seed=0)
        observation, *_ = env.step(search_call(QUERY))
    finally:
        env.close()
    return observation


def test_env_serves_a_faiss_index(minilm_sample_index: Path, wiki_sample: Path) -> None:
    observation = first_search(corpus_path=str(wiki_sample), index_dir=str(minilm_sample_index))
    assert 'Doc 1(Title: "Evan Morris")' in observation


def test_env_fuses_bm25_and_faiss(minilm_sample_index: Path, wiki_sample: Path, tmp_path: Path) -> None:
    observation = first_search(corpus_path=str(wiki_sample), index_dir=[str(tmp_path / "bm25"),
                                                                         str(minilm_sample_index)])
    assert 'Doc 1(Title: "Evan Morris")' in observation


def test_env_serves_a_milvus_lite_index(offline_hub: None, wiki_sample: Path, tmp_path: Path) -> None:
    pytest.importorskip("milvus_lite", reason="the milvus extra (milvus-lite) is not installed")
    from rlfactory_tool_servers.search.index_build import build_index

    corpus = write_passages(tmp_path / "corpus.jsonl", wiki_sample, 40)
    build_index(corpus, tmp_path / "milvus", backend="milvus", model=MINILM, max_length=SAMPLE_MAX_LENGTH,
                progress=False)
    observation = first_search(corpus_path=str(corpus), index_dir=str(tmp_path / "milvus"))
    assert 'Doc 1(Title: "Evan Morris")' in observation


@pytest.mark.integration
def test_env_forwards_to_a_search_r1_retriever(wiki_sample: Path) -> None:
    with http_tool_server("rlfactory_tool_servers.search", "--corpus", str(wiki_sample)) as url:
        observation = first_search(retriever_url=url.removesuffix("/mcp") + "/retrieve")
    local = first_search(corpus_path=str(wiki_sample))
    assert 'Doc 1(Title: "Evan Morris")' in observation and observation == local
