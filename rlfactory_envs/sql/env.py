"""``rlf/NL2SQL-Spider-v0`` and ``rlf/NL2SQL-BIRD-v0``: answer a question with one SQLite query, after exploring the
task's database with the SQL MCP server's tools; rewarded by execution (``rlfactory_reward_models.sql.execution``).

Data, by precedence: ``data_path=`` / ``db_dir=``, then the ``RLF_SQL_DATA`` / ``RLF_SQL_DB_DIR`` environment
variables, then the embedded synthetic sample (three small databases). ``data_path`` is Spider's ``dev.json`` (or
``train_spider.json``) or BIRD's ``dev.json``; ``db_dir`` defaults to the ``database/`` (``dev_databases/``) folder
beside it. ``tool_servers=`` replaces the default SQL server (its tools must take ``db_id``).

Test suites: the reward requires a match on other databases of the same schema too: the official Spider test-suite
databases where a database folder holds other ``.sqlite`` files beside ``<db_id>.sqlite``, else variants generated
for the task set and cached outside the data folder (``test_suite=``, see ``SqlEnv``).

The env binds each call's ``db_id`` to the task's database (``bound_arguments``): the schemas the model sees
have no ``db_id``, and whatever the model writes there is replaced, so it reaches only its own task's database.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from rlfactory_envs.kernel.chat_format import Qwen3ChatFormat
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.config import bundled_server_config
from rlfactory_envs.kernel.mcp.toolbox import ToolSpec
from rlfactory_reward_models.base import RewardInput
from rlfactory_envs.kernel.reward_hacks import RewardHack
from rlfactory_envs.kernel.task_source import shared_tasks
from rlfactory_envs.sql.baseline import ExploreThenGuessPolicy
from rlfactory_envs.sql.family import FAMILY, SAMPLE_DB_DIR
from rlfactory_envs.sql.hacks import sql_hacks
from rlfactory_envs.sql.prompt import sql_prompt
from rlfactory_envs.sql.task import SqlTask
from rlfactory_envs.sql.tasks import Dataset, default_db_dir, gold_queries, load_sql_tasks
from rlfactory_envs.kernel.reward_setting import FamilyRewards, JudgeSetting, RewardSetting, build_reward
from rlfactory_reward_models.sql.execution import Comparison, DistinctMode, EmptyGold, SqlExecutionReward, TestSuite
from rlfactory_tool_servers.sql.sandbox.catalog import find_databases


def sql_server_config(db_dir: str, *, transport: Literal["inprocess", "stdio"] = "inprocess",
                      timeout_s: float = 5.0, server_args: list[str] | tuple[str, ...] = (),
                      tuning: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``mcpServers`` document for the bundled SQL server over ``db_dir`` (query deadline ``timeout_s``)."""
    args = ["--db-dir", str(db_dir), "--timeout-s", f"{timeout_s:g}", *server_args]
    return bundled_server_config("sql", "rlfactory_tool_servers.sql", args, transport=transport, tuning=tuning)


@functools.lru_cache(maxsize=8)
def shared_reward(db_dir: str, comparison: Comparison, distinct: DistinctMode, timeout_s: float,
                  empty_gold: EmptyGold = "unscored", test_suite: TestSuite = "generate", suite_size: int = 10,
                  suite_seed: int = 0, suite_dir: str | None = None, data_path: str | None = None,
                  dataset: Dataset = "spider") -> SqlExecutionReward:
    """One reward model (worker threads, connection pools, gold cache, test suites) per settings and task set,
    shared by every env; its generated suites are distilled for the gold queries of ``data_path``'s tasks."""
    queries = gold_queries(shared_tasks(load_sql_tasks, data_path, db_dir, dataset))
    return SqlExecutionReward(db_dir, comparison=comparison, distinct=distinct, timeout_s=timeout_s,
                              empty_gold=empty_gold, test_suite=test_suite, suite_size=suite_size,
                              suite_seed=suite_seed, suite_dir=suite_dir, suite_queries=queries)


def _judge_fields(item: RewardInput) -> dict[str, str]:
    task: SqlTask = item.task
    question = f"{task.question}\n(Evidence: {task.evidence})" if task.evidence else task.question
    return {"question": f"{question}\n(Database: {task.db_id})", "reference": task.gold_sql}


class SqlEnv(ToolEnv):
    """NL2SQL with database tools. ``dataset="spider"`` (Spider's comparison and prompt) or ``"bird"`` (BIRD's set
    comparison, the evidence in the prompt). ``distinct``: ``"keep"`` (default) or ``"strip"`` (the official Spider
    evaluator's default). ``empty_gold``: ``"unscored"`` (default: a task whose gold result is empty on every
    database of its suite scores 0.0) or ``"match"`` (as the official evaluators; see ``SqlExecutionReward``).
    ``test_suite``: ``"generate"`` (default: the official test-suite databases where a database's folder has them,
    else ``suite_size`` variants generated with ``suite_seed``, cached in ``suite_dir``), ``"official"`` (those
    databases when present, else the main file) or ``"off"`` (the main file alone). The reward runs both queries
    on each database and scores 1.0 only if all match; the tools see only ``<db_id>.sqlite``.
    ``query_timeout_s`` bounds every query, the tools' and the reward's."""

    prompt_tools = ("list_tables", "describe_table", "run_query")

    def __init__(
        self,
        *,
        dataset: Dataset = "spider",
        data_path: str | None = None,
        db_dir: str | None = None,
        tool_servers: Mapping[str, Any] | str | None = None,
        transport: Literal["inprocess", "stdio"] = "inprocess",
        distinct: Literal["keep", "strip"] = "keep",
        comparison: Literal["spider", "bird"] | None = None,
        empty_gold: Literal["match", "unscored"] = "unscored",
        test_suite: Literal["generate", "official", "off"] | bool = "generate",
        suite_size: int = 10,
        suite_seed: int = 0,
        suite_dir: str | None = None,
        query_timeout_s: float = 5.0,
        enable_thinking: bool = True,
        max_turns: int = 6,
        reward: RewardSetting = None,
        judge: JudgeSetting = None,
        **env_kwargs: Any,
    ):
        if dataset not in ("spider", "bird"):
            raise ConfigError(f"dataset must be 'spider' or 'bird', got {dataset!r}")
        data_path = FAMILY.setting("data_path", data_path)
        db_dir = FAMILY.setting("db_dir", db_dir)
        if data_path is None:
            db_dir = db_dir or str(SAMPLE_DB_DIR)
            if Path(db_dir).resolve() != SAMPLE_DB_DIR.resolve():
                raise ConfigError("db_dir= without data_path=: give the questions file too (or neither for the "
                                  "embedded sample)")
        db_dir = str(Path(db_dir or default_db_dir(data_path)).resolve())
        self.dataset = dataset
        self.db_dir = db_dir
        self.database_ids = frozenset(find_databases(db_dir))
        if tool_servers is None:
            tool_servers = sql_server_config(db_dir, transport=transport, timeout_s=query_timeout_s)
        execution = shared_reward(db_dir, comparison or dataset, distinct, float(query_timeout_s), empty_gold,
                                  test_suite, int(suite_size), int(suite_seed), suite_dir, data_path, dataset)
        rewards = FamilyRewards(default=execution, named={"execution_match": (execution, None)},
                                judge_template="sql", judge_fields=_judge_fields)
        # The server's per-session fairness counts an episode's queries together; the model never sees `session`.
        env_kwargs.setdefault("episode_argument", "session")
        super().__init__(tasks=shared_tasks(load_sql_tasks, data_path, db_dir, dataset), tool_servers=tool_servers,
                         chat_format=Qwen3ChatFormat(enable_thinking=enable_thinking),
                         reward_model=build_reward(reward, judge, rewards),
                         max_turns=max_turns, **env_kwargs)

    def task_from_dict(self, data: Mapping[str, Any]) -> SqlTask:
        task = SqlTask.from_dict(data, data_source=self.dataset)
        if task.db_id not in self.database_ids:
            raise ValueError(f"no database {task.db_id[:100]!r} in {self.db_dir}")
        return task

    def bound_arguments(self, task: SqlTask) -> dict[str, Any]:
        return {"db_id": task.db_id}

    def initial_messages(self, task: SqlTask, tools: list[ToolSpec]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": sql_prompt(task, with_evidence=self.dataset == "bird")}]

    def scripted_policy(self) -> ExploreThenGuessPolicy:
        return ExploreThenGuessPolicy()

    def reference_answer(self, task: SqlTask) -> str | None:
        return task.gold_sql

    def reward_hacks(self) -> list[RewardHack]:
        return sql_hacks()
