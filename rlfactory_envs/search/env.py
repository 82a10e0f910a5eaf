"""``rlf/Search-NQ-v0``: Search-R1-style open-domain QA. The agent searches a corpus through the search MCP
server and answers; the reward is exact match against the golden answers (``reward_models.qa_reward``).

Data, by precedence: ``data_path=`` / ``corpus_path=``, then the ``RLF_SEARCH_DATA`` / ``RLF_SEARCH_CORPUS``
environment variables, then the embedded synthetic sample shipped in the package. ``tool_servers=`` replaces the
default search server entirely (e.g. ``{"mcpServers": {"search": {"url": "http://10.0.0.5:8000/mcp"}}}``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from rlfactory_envs.kernel.chat_format import Qwen3ChatFormat, SearchR1Format
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.mcp_config import bundled_server_config
from rlfactory_envs.kernel.task_source import TaskSource, file_version
from rlfactory_envs.kernel.parsers import DEFAULT_MAX_TOOL_CALLS, HermesToolCallParser, SearchR1Parser
from rlfactory_envs.kernel.toolbox import ToolSpec
from rlfactory_envs.search.baseline import SearchThenTitlePolicy
from rlfactory_envs.search.prompt import search_r1_prompt, tool_calling_prompt
from rlfactory_envs.search.task import SearchTask
from rlfactory_envs.search.tasks import SAMPLE_CORPUS_PATH, load_search_tasks, sample_tasks
from reward_models.qa_reward import QAExactMatchReward

DATA_ENV_VAR = "RLF_SEARCH_DATA"
CORPUS_ENV_VAR = "RLF_SEARCH_CORPUS"


def search_server_config(corpus_path: str, *, transport: Literal["inprocess", "stdio"] = "inprocess",
                         index_dir: str | None = None, retriever: str = "bm25",
                         server_args: Sequence[str] = (), tuning: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``mcpServers`` document for the bundled search server over ``corpus_path``.

    ``server_args`` go to the server's command line as they are (e.g. ``["--faiss-index", P, "--encoder", E]``
    with ``retriever="faiss"``; see ``python -m tool_servers.search --help``)."""
    args = ["--corpus", str(corpus_path), "--retriever", retriever, *server_args]
    if index_dir:
        args += ["--index-dir", str(index_dir)]
    return bundled_server_config("search", "tool_servers.search", args, transport=transport, tuning=tuning)


def shared_tasks(data_path: str | None) -> TaskSource[SearchTask]:
    """The tasks of ``data_path`` (the embedded sample for ``None``), loaded once per file version and shared by
    every env of the process: a batch of thousands of envs holds one copy of the dataset."""
    return _cached_tasks(*file_version(data_path))


@functools.lru_cache(maxsize=8)
def _cached_tasks(path: str | None, mtime_ns: int, size: int) -> TaskSource[SearchTask]:
    return load_search_tasks(path) if path else sample_tasks()


class SearchEnv(ToolEnv):
    """Open-domain QA with a search tool. ``chat_format="qwen3"`` (``<tool_call>`` JSON, the default) or
    ``"search_r1"`` (``<search>``/``<information>`` tags)."""

    def __init__(
        self,
        *,
        data_path: str | None = None,
        corpus_path: str | None = None,
        tool_servers: Mapping[str, Any] | str | None = None,
        transport: Literal["inprocess", "stdio"] = "inprocess",
        retriever: str = "bm25",
        index_dir: str | None = None,
        server_args: Sequence[str] = (),
        chat_format: Literal["qwen3", "search_r1"] = "qwen3",
        enable_thinking: bool = True,
        max_turns: int = 4,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        format_score: float = 0.0,
        **env_kwargs: Any,
    ):
        data_path = data_path or os.environ.get(DATA_ENV_VAR) or None
        corpus_path = corpus_path or os.environ.get(CORPUS_ENV_VAR) or str(SAMPLE_CORPUS_PATH)
        tasks = shared_tasks(data_path)
        if tool_servers is None:
            tool_servers = search_server_config(corpus_path, transport=transport, index_dir=index_dir,
                                                retriever=retriever, server_args=server_args)
        if chat_format == "qwen3":
            parser: Any = HermesToolCallParser(max_tool_calls=max_tool_calls)
            fmt: Any = Qwen3ChatFormat(enable_thinking=enable_thinking)
        elif chat_format == "search_r1":
            parser, fmt = SearchR1Parser(), SearchR1Format()
        else:
            raise ValueError("chat_format must be 'qwen3' or 'search_r1'")
        self.corpus_path = corpus_path
        super().__init__(tasks=tasks, tool_servers=tool_servers, parser=parser, chat_format=fmt,
                         reward_model=QAExactMatchReward(format_score=format_score), max_turns=max_turns,
                         **env_kwargs)

    def task_from_dict(self, data: Mapping[str, Any]) -> SearchTask:
        return SearchTask.from_dict(data)

    def ground_truth(self, task: SearchTask) -> dict[str, list[str]]:
        return {"target": list(task.golden_answers)}

    def initial_messages(self, task: SearchTask, tools: list[ToolSpec]) -> list[dict[str, Any]]:
        if isinstance(self.chat_format, SearchR1Format):
            return [{"role": "user", "content": search_r1_prompt(task)}]
        return [{"role": "user", "content": tool_calling_prompt(task)}]

    def scripted_policy(self) -> SearchThenTitlePolicy:
        return SearchThenTitlePolicy()

    def invalid_action_feedback(self) -> str:
        if isinstance(self.chat_format, SearchR1Format):
            return ("My previous action is invalid. To search, I should put the query between <search> and "
                    "</search>. To give the final answer, I should put it between <answer> and </answer>. "
                    "Let me try again.")
        return ("Your response contained neither a tool call nor a final answer. Call the search tool inside "
                "<tool_call></tool_call>, or give the final answer between <answer> and </answer>.")
