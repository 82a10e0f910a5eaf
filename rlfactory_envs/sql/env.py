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

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from rlfactory_envs.kernel.chat_template import settings_chat_format
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.config import bundled_server_config
from rlfactory_envs.kernel.mcp.toolbox import ToolSpec
from rlfactory_envs.kernel.reward_setting import FamilyRewards, build_reward
from rlfactory_envs.kernel.runtime import Parts, Runtime
from rlfactory_envs.kernel.settings import BundledServing, EnvSettings, EpisodeLimits, RewardScoring
from rlfactory_envs.kernel.task_source import file_version
from rlfactory_envs.sql.family import FAMILY, SAMPLE_DB_DIR
from rlfactory_envs.sql.prompt import sql_prompt
from rlfactory_envs.sql.task import SqlTask
from rlfactory_envs.sql.tasks import Dataset, default_db_dir, gold_queries, load_sql_tasks
from rlfactory_reward_models.base import RewardInput
from rlfactory_reward_models.sql.execution import SqlExecutionReward
from rlfactory_tool_servers.sql.sandbox.catalog import find_databases


def sql_server_config(db_dir: str, *, transport: Literal["inprocess", "stdio"] = "inprocess",
                      timeout_s: float = 5.0, server_args: list[str] | tuple[str, ...] = (),
                      tuning: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``mcpServers`` document for the bundled SQL server over ``db_dir`` (query deadline ``timeout_s``)."""
    args = ["--db-dir", str(db_dir), "--timeout-s", f"{timeout_s:g}", *server_args]
    return bundled_server_config("sql", "rlfactory_tool_servers.sql", args, transport=transport, tuning=tuning)


def _judge_fields(item: RewardInput) -> dict[str, str]:
    task: SqlTask = item.task
    question = f"{task.question}\n(Evidence: {task.evidence})" if task.evidence else task.question
    return {"question": f"{question}\n(Database: {task.db_id})", "reference": task.gold_sql}


class SqlServing(BundledServing):
    """The SQL server, in this process or over stdio; ``query_timeout_s`` bounds every query, the tools' and the
    reward's."""

    query_timeout_s: float = 5.0


class SqlScoring(RewardScoring):
    """Execution match: ``comparison`` (Spider's or BIRD's; default the dataset's), ``distinct`` (``"keep"``, or
    ``"strip"`` as the official Spider evaluator), ``empty_gold`` (``"unscored"``: a task whose gold result is empty
    on every database of its suite scores 0.0; ``"match"`` as the official evaluators), ``constant_gold`` (the same
    for a gold result that is the same on every database of the suite, which a constant would match), and the test
    suite:
    ``test_suite`` ``"generate"`` (the official test-suite databases where a database's folder has them, else
    ``suite_size`` variants generated with ``suite_seed``, cached in ``suite_dir``), ``"official"`` (those databases
    when present, else the main file) or ``"off"`` (the main file alone)."""

    comparison: Literal["spider", "bird"] | None = None
    distinct: Literal["keep", "strip"] = "keep"
    empty_gold: Literal["match", "unscored"] = "unscored"
    constant_gold: Literal["match", "unscored"] = "unscored"
    test_suite: Literal["generate", "official", "off"] | bool = "generate"
    suite_size: int = 10
    suite_seed: int = 0
    suite_dir: str | None = None


class SqlSettings(EnvSettings):
    """``rlf/NL2SQL-Spider-v0`` and ``rlf/NL2SQL-BIRD-v0``'s settings: the dataset's layout, its questions and
    databases (the embedded sample by default)."""

    dataset: Dataset = "spider"
    data_path: str | None = None
    db_dir: str | None = None
    limits: EpisodeLimits = EpisodeLimits(max_turns=6)
    serving: SqlServing = SqlServing()
    scoring: SqlScoring = SqlScoring()


@dataclasses.dataclass(eq=False, kw_only=True)
class SqlRuntime(Runtime):
    dataset: Dataset
    db_dir: str
    database_ids: frozenset[str]


def sql_data(settings: SqlSettings) -> tuple[str | None, str]:
    """The questions file and the database folder the settings name (or the environment's, or the sample's)."""
    data_path = settings.data_path
    db_dir = settings.db_dir
    if data_path is None:
        db_dir = db_dir or str(SAMPLE_DB_DIR)
        if Path(db_dir).resolve() != SAMPLE_DB_DIR.resolve():
            raise ConfigError("db_dir= without data_path=: give the questions file too (or neither for the "
                              "embedded sample)")
    return data_path, str(Path(db_dir or default_db_dir(data_path)).resolve())


def execution_reward(settings: SqlSettings, parts: Parts, data_path: str | None, db_dir: str) -> SqlExecutionReward:
    """One execution reward (worker threads, connection pools, gold cache, test suites) per settings and task set,
    shared by every runtime; its generated suites are distilled for the gold queries of the task set."""
    scoring, timeout_s = settings.scoring, float(settings.serving.query_timeout_s)
    tasks = parts.tasks(load_sql_tasks, data_path, db_dir, settings.dataset)
    options = dict(comparison=scoring.comparison or settings.dataset, distinct=scoring.distinct, timeout_s=timeout_s,
                   empty_gold=scoring.empty_gold, constant_gold=scoring.constant_gold, test_suite=scoring.test_suite,
                   suite_size=int(scoring.suite_size), suite_seed=int(scoring.suite_seed), suite_dir=scoring.suite_dir)
    key = ("sql_execution_reward", db_dir, file_version(data_path), settings.dataset, tuple(sorted(options.items())))
    return parts.part(key, lambda: SqlExecutionReward(db_dir, suite_queries=gold_queries(tasks), **options))


class SqlEnv(ToolEnv):
    """NL2SQL with database tools. ``dataset="spider"`` (Spider's comparison and prompt) or ``"bird"`` (BIRD's set
    comparison, the evidence in the prompt); see ``SqlScoring`` for the reward's settings. The reward runs both
    queries on each database of the task's test suite and scores 1.0 only if all match; the tools see only
    ``<db_id>.sqlite``."""

    settings_model = SqlSettings
    family = FAMILY
    prompt_tools = ("list_tables", "describe_table", "run_query")
    runtime: SqlRuntime

    @classmethod
    def build_runtime(cls, settings: SqlSettings, parts: Parts) -> SqlRuntime:
        data_path, db_dir = sql_data(settings)
        serving, scoring = settings.serving, settings.scoring
        servers = serving.tool_servers or sql_server_config(db_dir, transport=serving.transport,
                                                            timeout_s=serving.query_timeout_s)
        execution = execution_reward(settings, parts, data_path, db_dir)
        rewards = FamilyRewards(default=execution, named={"execution_match": (execution, None)},
                                judge_template="sql", judge_fields=_judge_fields)
        return SqlRuntime(settings=settings, parts=parts, dataset=settings.dataset, db_dir=db_dir,
                          database_ids=frozenset(find_databases(db_dir)),
                          tasks=parts.tasks(load_sql_tasks, data_path, db_dir, settings.dataset),
                          toolbox=parts.toolbox(servers),
                          chat_format=settings_chat_format(settings),
                          reward_model=build_reward(scoring.reward, scoring.judge, rewards))

    def task_from_dict(self, data: Mapping[str, Any]) -> SqlTask:
        task = SqlTask.from_dict(data, data_source=self.runtime.dataset)
        if task.db_id not in self.runtime.database_ids:
            raise ValueError(f"no database {task.db_id[:100]!r} in {self.runtime.db_dir}")
        return task

    def bound_arguments(self, task: SqlTask) -> dict[str, Any]:
        return {"db_id": task.db_id}

    def initial_messages(self, task: SqlTask, tools: list[ToolSpec]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": sql_prompt(task, with_evidence=self.runtime.dataset == "bird")}]
