"""Load NL2SQL tasks from Spider's and BIRD's files, checked against the databases that are really there.

- Spider: ``dev.json`` / ``train_spider.json`` (a JSON list of ``{"db_id", "question", "query", ...}``), databases
  in ``database/<db_id>/<db_id>.sqlite`` beside it.
- BIRD: ``dev.json`` (``{"question_id", "db_id", "question", "evidence", "SQL", "difficulty"}``), databases in
  ``dev_databases/<db_id>/<db_id>.sqlite`` beside it.

A ``.jsonl`` file (one such object a line) is read too. ``db_dir`` defaults to the folder beside the file
(``database/``, else ``dev_databases/``, ``train_databases/``). Questions whose database is absent from ``db_dir``
are left out with a warning (the shared Spider copy lacks ``wta_1``); none left is an error. Task ids are BIRD's
``question_id`` when there is one, else the 0-based position in the file, so they stay stable when tasks are left
out.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from rlfactory_envs.kernel.task_files import read_rows
from rlfactory_envs.kernel.task_source import TaskSource
from rlfactory_envs.sql.family import SAMPLE_DB_DIR, SAMPLE_QUESTIONS_PATH
from rlfactory_envs.sql.task import SqlTask
from rlfactory_tool_servers.sql.sandbox.catalog import find_databases

__all__ = ["SAMPLE_DB_DIR", "SAMPLE_NAME", "SAMPLE_QUESTIONS_PATH", "Dataset", "default_db_dir", "gold_queries",
           "load_sql_tasks",
           "sample_tasks"]

logger = logging.getLogger(__name__)

SAMPLE_NAME = "rlf-sql-sample"
_DB_DIR_NAMES = ("database", "dev_databases", "train_databases")

Dataset = Literal["spider", "bird"]
"""The benchmark a task set comes from: it names the set and is each task's ``data_source``."""


def default_db_dir(data_path: str | os.PathLike[str]) -> Path:
    """The database folder beside a question file; ``FileNotFoundError`` when the file is missing, or naming the
    folders looked for."""
    if not Path(data_path).is_file():
        raise FileNotFoundError(f"no such file: {data_path} (the questions file given as data_path)")
    parent = Path(data_path).resolve().parent
    for name in _DB_DIR_NAMES:
        if (parent / name).is_dir():
            return parent / name
    raise FileNotFoundError(f"no database folder ({', '.join(_DB_DIR_NAMES)}) beside {data_path}; pass db_dir=")


def load_sql_tasks(data_path: str | os.PathLike[str] | None, db_dir: str | os.PathLike[str] | None = None,
                   dataset: Dataset = "spider", *, name: str | None = None) -> TaskSource[SqlTask]:
    """The questions of ``data_path`` whose database is in ``db_dir``, in file order; ``None``: the embedded
    sample (``sample_tasks``).

    ``ValueError`` for a malformed row (with its position), repeated ids, or no usable question;
    ``FileNotFoundError`` for a missing file or database folder."""
    if data_path is None:
        return sample_tasks(dataset)
    path = Path(data_path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    db_dir = Path(db_dir) if db_dir is not None else default_db_dir(path)
    databases = find_databases(db_dir)
    tasks: list[SqlTask] = []
    missing: dict[str, int] = {}
    for row in read_rows(path, json_layout="list", what="SQL tasks"):
        if not isinstance(row.data, Mapping):
            raise ValueError(f"{path}: {row.place}: expected a JSON object, got {type(row.data).__name__}")
        try:
            task = SqlTask.from_dict(row.data, task_id=str(row.index), data_source=dataset)
        except ValueError as exc:
            raise ValueError(f"{path}: {row.place}: {exc}") from None
        if task.db_id not in databases:
            missing[task.db_id] = missing.get(task.db_id, 0) + 1
            continue
        tasks.append(task)
    if missing:
        logger.warning("%s: %d questions left out: their databases are not in %s (%s)", path,
                       sum(missing.values()), db_dir, ", ".join(f"{k}: {v}" for k, v in sorted(missing.items())))
    if not tasks:
        raise ValueError(f"{path}: no question has its database in {db_dir}")
    ids = [task.task_id for task in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: repeated task ids")
    return TaskSource(tasks, name=name or f"{dataset}-{path.stem}", path=str(path))


def gold_queries(tasks: Iterable[SqlTask]) -> dict[str, list[str]]:
    """``{db_id: [gold query, ...]}`` of ``tasks``, in task order: what a generated test suite is distilled for."""
    queries: dict[str, list[str]] = {}
    for task in tasks:
        queries.setdefault(task.db_id, []).append(task.gold_sql)
    return queries


def sample_tasks(dataset: Dataset = "spider") -> TaskSource[SqlTask]:
    """The embedded synthetic sample, named ``"rlf-sql-sample"``."""
    return load_sql_tasks(SAMPLE_QUESTIONS_PATH, SAMPLE_DB_DIR, dataset=dataset, name=SAMPLE_NAME)
