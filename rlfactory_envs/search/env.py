"""``rlf/Search-NQ-v0``: Search-R1-style open-domain QA. The agent searches a corpus through the search MCP
server and answers; the reward is exact match against the golden answers (``rlfactory_reward_models.search.qa_reward``).

Data, by precedence: ``data_path=`` / ``corpus_path=``, then the ``RLF_SEARCH_DATA`` / ``RLF_SEARCH_CORPUS``
environment variables, then the embedded synthetic sample shipped in the package. ``index_dir=`` serves an index
built by ``rlf index build`` (BM25, FAISS or Milvus; a list of two is fused), ``retriever_url=`` forwards searches to
a Search-R1 retriever service. ``tool_servers=`` replaces the default search server entirely (e.g. ``{"mcpServers": {"search": {"url": "http://10.0.0.5:8000/mcp"}}}``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from rlfactory_envs.kernel.chat_template import settings_chat_format
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.config import bundled_server_config
from rlfactory_envs.kernel.mcp.toolbox import ToolSpec
from rlfactory_envs.kernel.reward_setting import FamilyRewards, build_reward
from rlfactory_envs.kernel.runtime import Parts, Runtime
from rlfactory_envs.kernel.settings import BundledServing, EnvSettings, EpisodeLimits, RewardScoring
from rlfactory_envs.search.family import FAMILY, SAMPLE_CORPUS_PATH
from rlfactory_envs.search.prompt import PROMPTS
from rlfactory_envs.search.task import SearchTask
from rlfactory_envs.search.tasks import load_search_tasks
from rlfactory_reward_models.search.qa_reward import QAExactMatchReward


def search_server_config(corpus_path: str | None, *, transport: Literal["inprocess", "stdio"] = "inprocess",
                         index_dir: str | Sequence[str] | None = None, retriever: str = "bm25",
                         retriever_url: str | None = None, milvus_uri: str | None = None,
                         server_args: Sequence[str] = (), tuning: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``mcpServers`` document for the bundled search server over ``corpus_path``.

    ``index_dir``: one index built by ``rlf index build`` (or a list of them, fused by reciprocal rank);
    ``retriever_url``: a Search-R1 retriever to forward searches to instead of a local corpus; ``server_args`` go to
    the server's command line as they are (e.g. ``["--faiss-index", P, "--encoder", E]`` with ``retriever="faiss"``;
    see ``rlf serve search --help``)."""
    if retriever_url:
        if index_dir or milvus_uri:
            raise ConfigError("retriever_url= serves a remote retriever's passages; drop index_dir= and milvus_uri=")
        args = ["--retriever-url", retriever_url]
    else:
        args = ["--corpus", str(corpus_path), "--retriever", retriever]
        for directory in [index_dir] if isinstance(index_dir, (str, os.PathLike)) else index_dir or ():
            args += ["--index-dir", str(directory)]
        if milvus_uri:
            args += ["--milvus-uri", milvus_uri]
    args += list(server_args)
    return bundled_server_config("search", "rlfactory_tool_servers.search", args, transport=transport, tuning=tuning)


def search_rewards(format_score: float) -> FamilyRewards:
    """The search family's rewards: exact match (with ``format_score`` for a wrong answer) by default, its parts
    ``exact_match`` and ``f1`` by name; a judge reads the question and the golden answers."""
    qa = QAExactMatchReward(format_score=format_score)
    return FamilyRewards(default=qa, named={"exact_match": (qa, "exact_match"), "f1": (qa, "f1")}, judge_template="qa")


class SearchServing(BundledServing):
    """The search server: in this process or over stdio, over a corpus with BM25 or an index (``index_dir``, two
    fused), a Milvus server, or a Search-R1 retriever (``retriever_url``); ``server_args`` go to its command line."""

    retriever: str = "bm25"
    index_dir: str | list[str] | None = None
    retriever_url: str | None = None
    milvus_uri: str | None = None
    server_args: Sequence[str] = ()


class SearchScoring(RewardScoring):
    """``format_score``: what a wrong but well-formed answer earns under exact match (Search-R1's)."""

    format_score: float = 0.0


class SearchSettings(EnvSettings):
    """``rlf/Search-NQ-v0``'s settings: the questions and corpus (the embedded sample by default), the chat format."""

    data_path: str | None = None
    corpus_path: str | None = None
    chat_format: str = "qwen3"
    """``qwen3`` (``<tool_call>`` JSON), ``search_r1`` (Search-R1's tags), or the model's own template's turns
    (``chat_template=``; ``EnvSettings.chat_format``)."""
    limits: EpisodeLimits = EpisodeLimits(max_turns=4)
    serving: SearchServing = SearchServing()
    scoring: SearchScoring = SearchScoring()


@dataclasses.dataclass(eq=False, kw_only=True)
class SearchRuntime(Runtime):
    prompt: Callable[[SearchTask], str]


class SearchEnv(ToolEnv):
    """Open-domain QA with a search tool. ``chat_format="qwen3"`` (``<tool_call>`` JSON, the default) or
    ``"search_r1"`` (``<search>``/``<information>`` tags)."""

    settings_model = SearchSettings
    family = FAMILY
    prompt_tools = ("search",)
    runtime: SearchRuntime

    @classmethod
    def build_runtime(cls, settings: SearchSettings, parts: Parts) -> SearchRuntime:
        serving, scoring = settings.serving, settings.scoring
        corpus_path = settings.corpus_path or str(SAMPLE_CORPUS_PATH)
        servers = serving.tool_servers or search_server_config(
            corpus_path, transport=serving.transport, index_dir=serving.index_dir, retriever=serving.retriever,
            retriever_url=serving.retriever_url, milvus_uri=serving.milvus_uri, server_args=serving.server_args)
        prompt = PROMPTS["search_r1" if settings.chat_format == "search_r1" else "qwen3"]
        return SearchRuntime(settings=settings, parts=parts, prompt=prompt,
                             tasks=parts.tasks(load_search_tasks, settings.data_path),
                             toolbox=parts.toolbox(servers),
                             chat_format=settings_chat_format(settings, choices=("qwen3", "hermes", "search_r1")),
                             reward_model=build_reward(scoring.reward, scoring.judge,
                                                       search_rewards(scoring.format_score)))

    def task_from_dict(self, data: Mapping[str, Any]) -> SearchTask:
        return SearchTask.from_dict(data)

    def initial_messages(self, task: SearchTask, tools: list[ToolSpec]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": self.runtime.prompt(task)}]
