"""Loading the generic env's tasks from a JSONL, JSON or parquet file (``GenericTask.from_row`` per row)."""

from __future__ import annotations

import os
from pathlib import Path

from rlfactory_envs.generic.family import SAMPLE_QUESTIONS_PATH
from rlfactory_envs.generic.task import GenericTask
from rlfactory_envs.kernel.task_files import read_rows
from rlfactory_envs.kernel.task_source import TaskSource

SAMPLE_NAME = "rlf-mcp-sample"


def load_generic_tasks(path: str | os.PathLike[str] | None) -> TaskSource[GenericTask]:
    """Every row of ``path`` as a task, in file order, named after the file's stem; ``None``: the embedded sample.
    ``ValueError`` names the file and row of a row without a question, a repeated id, or an empty file."""
    if path is None:
        source = load_generic_tasks(SAMPLE_QUESTIONS_PATH)
        source.name = SAMPLE_NAME
        return source
    path = Path(path)
    tasks: list[GenericTask] = []
    seen: dict[str, str] = {}
    for row in read_rows(path):
        try:
            task = GenericTask.from_row(row.data, default_id=str(row.index))
        except ValueError as exc:
            raise ValueError(f"{path}: {row.place}: {exc}") from None
        if task.task_id in seen:
            raise ValueError(f"{path}: {row.place}: id {task.task_id!r} repeats the one of {seen[task.task_id]}")
        seen[task.task_id] = row.place
        tasks.append(task)
    if not tasks:
        raise ValueError(f"{path}: the file holds no rows")
    return TaskSource(tasks, name=path.stem, path=str(path))
