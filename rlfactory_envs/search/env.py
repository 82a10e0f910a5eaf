"""``rlf/Search-NQ-v0``: Search-R1-style open-domain QA. The agent searches a corpus through the search MCP
server and answers; the reward is exact match against the golden answers (``rlfactory_reward_models.search.qa_reward``).

Data, by precedence: ``data_path=`` / ``corpus_path=``, then the ``RLF_SEARCH_DATA`` / ``RLF_SEARCH_CORPUS``
environment variables, then the embedded synthetic sample shipped in the package. ``index_dir=`` serves an index
built by ``rlf index build`` (BM25, FAISS or Milvus; a list of two is fused), ``retriever_url=`` forwards searches to
a Search-R1 retriever service. ``tool_servers=`` replaces the default search server entirely (e.g. ``{"mcpServers": {"search": {"url": "http://10.0.0.5:8000/mcp"}}}``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from rlfactory_envs.kernel.chat_format import make_chat_format
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.config import bundled_server_config
from rlfactory_envs.kernel.mcp.toolbox import ToolSpec
from rlfactory_envs.kernel.reward_hacks import RewardHack
from rlfactory_envs.kernel.task_source import shared_tasks
from rlfactory_envs.search.baseline import SearchThenTitlePolicy
from rlfactory_envs.search.family import FAMILY, SAMPLE_CORPUS_PATH
from rlfactory_envs.search.hacks import search_hacks
from rlfactory_envs.search.prompt import PROMPTS
from rlfactory_envs.search.task import SearchTask
from rlfactory_envs.search.tasks import load_search_tasks
from rlfactory_reward_models.qa_match import normalize_answer
from rlfactory_reward_models.search.qa_reward import QAExactMatchReward
from rlfactory_envs.kernel.reward_setting import FamilyRewards, JudgeSetting, RewardSetting, build_reward


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


class SearchEnv(ToolEnv):
    """Open-domain QA with a search tool. ``chat_format="qwen3"`` (``<tool_call>`` JSON, the default) or
    ``"search_r1"`` (``<search>``/``<information>`` tags)."""

    prompt_tools = ("search",)

    def __init__(
        self,
        *,
        data_path: str | None = None,
        corpus_path: str | None = None,
        tool_servers: Mapping[str, Any] | str | None = None,
        transport: Literal["inprocess", "stdio"] = "inprocess",
        retriever: str = "bm25",
        index_dir: str | list[str] | None = None,
        retriever_url: str | None = None,
        milvus_uri: str | None = None,
        server_args: Sequence[str] = (),
        chat_format: Literal["qwen3", "search_r1"] = "qwen3",
        enable_thinking: bool = True,
        max_turns: int = 4,
        format_score: float = 0.0,
        reward: RewardSetting = None,
        judge: JudgeSetting = None,
        **env_kwargs: Any,
    ):
        if chat_format not in PROMPTS:
            raise ConfigError(f"chat_format must be one of {', '.join(PROMPTS)}, got {chat_format!r}")
        self.prompt = PROMPTS[chat_format]
        corpus_path = FAMILY.setting("corpus_path", corpus_path) or str(SAMPLE_CORPUS_PATH)
        if tool_servers is None:
            tool_servers = search_server_config(corpus_path, transport=transport, index_dir=index_dir,
                                                retriever=retriever, retriever_url=retriever_url,
                                                milvus_uri=milvus_uri, server_args=server_args)
        self.corpus_path = corpus_path
        super().__init__(tasks=shared_tasks(load_search_tasks, FAMILY.setting("data_path", data_path)),
                         tool_servers=tool_servers,
                         chat_format=make_chat_format(chat_format, enable_thinking=enable_thinking),
                         reward_model=build_reward(reward, judge, search_rewards(format_score)),
                         max_turns=max_turns, **env_kwargs)

    def task_from_dict(self, data: Mapping[str, Any]) -> SearchTask:
        return SearchTask.from_dict(data)

    def ground_truth(self, task: SearchTask) -> dict[str, list[str]]:
        return {"target": list(task.golden_answers)}

    def initial_messages(self, task: SearchTask, tools: list[ToolSpec]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": self.prompt(task)}]

    def scripted_policy(self) -> SearchThenTitlePolicy:
        return SearchThenTitlePolicy()

    def reference_answer(self, task: SearchTask) -> str | None:
        """The first golden answer that exact match can score (``"A+"`` normalises to nothing), else the first."""
        scorable = [answer for answer in task.golden_answers if normalize_answer(answer)]
        return (scorable or list(task.golden_answers) or [None])[0]

    def reward_hacks(self) -> list[RewardHack]:
        return search_hacks()
