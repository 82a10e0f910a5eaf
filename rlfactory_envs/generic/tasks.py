"""Loading the generic env's tasks from a JSONL, JSON or parquet file (``GenericTask.from_row`` per row)."""

from __future__ import annotations

import os

from rlfactory_envs.generic.family import SAMPLE_QUESTIONS_PATH
from rlfactory_envs.generic.task import GenericTask
from rlfactory_envs.kernel.task_files import read_tasks
from rlfactory_envs.kernel.task_source import TaskSource

SAMPLE_NAME = "rlf-mcp-sample"


def load_generic_tasks(path: str | os.PathLike[str] | None) -> TaskSource[GenericTask]:
    """Every row of ``path`` as a task, in file order, named after the file's stem; ``None``: the embedded sample.
    ``ValueError`` names the file and row of a row without a question, a repeated id, or an empty file."""
    if path is None:
        source = load_generic_tasks(SAMPLE_QUESTIONS_PATH)
        source.name = SAMPLE_NAME
        return source
    return read_tasks(path, GenericTask.from_row, "rows")
