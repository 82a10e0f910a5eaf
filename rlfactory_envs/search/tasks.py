"""Load search tasks from the files QA datasets ship in: NQ-open / FlashRAG jsonl and Search-R1 parquet.

``load_search_tasks`` picks the reader by file suffix:

- ``.jsonl`` / ``.json``: one JSON object a line, NQ-open's ``{"question": str, "answer": [str, ...]}`` or
  FlashRAG's ``{"id": str, "question": str, "golden_answers": [str, ...]}`` (a ``.json`` file holding one JSON
  list of such objects is read too). Blank lines are skipped.
- ``.parquet``: Search-R1's layout, columns ``data_source``, ``prompt`` (chat messages whose user message ends in
  ``Question: {question}``), ``ability``, ``reward_model`` (``{"style": "rule", "ground_truth": {"target":
  [answers]}}``) and ``extra_info`` (``{"split": str, "index": int}``). Read with pyarrow alone.

Task ids are the row's own id when it has one (``id``, else ``extra_info`` as ``f"{split}_{index}"``), else the
0-based line (jsonl) or row (parquet, JSON list) number as a string. A malformed row raises ``ValueError`` naming
the file and its 1-based line or row number.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from rlfactory_envs.kernel.task_files import read_tasks
from rlfactory_envs.kernel.task_source import TaskSource
from rlfactory_envs.search.family import SAMPLE_CORPUS_PATH, SAMPLE_QUESTIONS_PATH
from rlfactory_envs.search.task import SearchTask
from rlfactory_reward_models.qa_match import scorable_answers

__all__ = ["SAMPLE_CORPUS_PATH", "SAMPLE_NAME", "SAMPLE_QUESTIONS_PATH", "load_search_tasks", "sample_tasks"]

logger = logging.getLogger(__name__)

SAMPLE_NAME = "rlf-search-sample"
_QUESTION_MARKER = "Question:"


def load_search_tasks(path: str | os.PathLike[str] | None) -> TaskSource[SearchTask]:
    """Every task in the QA file at ``path``, in file order; the source is named after the file's stem. ``None``:
    the embedded sample (``sample_tasks``).

    ``ValueError`` for an unknown suffix, a malformed row (with file and line/row number), repeated task ids or a
    file without tasks; ``FileNotFoundError`` when there is no such file.
    """
    if path is None:
        return sample_tasks()
    return without_unscorable(read_tasks(path, _task_from_row, "search tasks"))


def without_unscorable(tasks: TaskSource[SearchTask]) -> TaskSource[SearchTask]:
    """``tasks`` less those whose every golden answer normalises to ``""`` (``---``, ``)``): no answer can be
    judged against them, and the matching Search-R1 uses would pay an answer of ``.`` or ``the``. They are named
    in a warning; none left is a ``ValueError``."""
    kept = [task for task in tasks if scorable_answers(task.golden_answers)]
    if len(kept) == len(tasks):
        return tasks
    left_out = [task for task in tasks if not scorable_answers(task.golden_answers)]
    logger.warning("%s: %d tasks left out: every golden answer normalises to an empty string, so no answer can be "
                   "scored (%s)", tasks.path or tasks.name, len(left_out),
                   ", ".join(f"{task.task_id}: {list(task.golden_answers)!r}" for task in left_out[:5])
                   + (", ..." if len(left_out) > 5 else ""))
    if not kept:
        raise ValueError(f"{tasks.path or tasks.name}: no task has a golden answer that can be scored")
    return TaskSource(kept, name=tasks.name, path=tasks.path)


def sample_tasks() -> TaskSource[SearchTask]:
    """The embedded synthetic sample's questions, named ``"rlf-search-sample"``."""
    source = load_search_tasks(SAMPLE_QUESTIONS_PATH)
    source.name = SAMPLE_NAME
    return source


def _task_from_row(row: Any, default_id: str) -> SearchTask:
    if not isinstance(row, Mapping):
        raise ValueError(f"expected a JSON object / table row, got {type(row).__name__}")
    data: dict[str, Any] = {"task_id": _row_id(row, default_id), "question": _question(row)}
    answers = _answers(row)
    if answers is not None:
        data["golden_answers"] = answers
    data_source = row.get("data_source")
    if isinstance(data_source, str) and data_source:
        data["data_source"] = data_source
    return SearchTask.from_dict(data)


def _row_id(row: Mapping[str, Any], default_id: str) -> str:
    row_id = row.get("id")
    if row_id is not None and not isinstance(row_id, bool) and str(row_id).strip():
        return str(row_id)
    extra_info = row.get("extra_info")
    if isinstance(extra_info, Mapping) and extra_info.get("index") is not None:
        split = extra_info.get("split")
        return f"{split}_{extra_info['index']}" if split else str(extra_info["index"])
    return default_id


def _question(row: Mapping[str, Any]) -> Any:
    """The ``question`` field when there is one, else the question inside the (Search-R1) user prompt."""
    question = row.get("question")
    if isinstance(question, str) and question.strip():
        return question
    if row.get("prompt") is None:
        return question  # SearchTask.from_dict says what is wrong with it
    user_message = _user_message(row["prompt"])
    _, marker, after = user_message.rpartition(_QUESTION_MARKER)
    if marker and after.strip():
        return after.strip()
    return user_message.strip()


def _user_message(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Mapping):
        prompt = [prompt]
    if isinstance(prompt, list):
        contents = [m.get("content") for m in prompt if isinstance(m, Mapping) and m.get("role") == "user"]
        if contents and isinstance(contents[-1], str):
            return contents[-1]
    raise ValueError("'prompt' must be a string or a list of chat messages with a string user 'content'")


def _answers(row: Mapping[str, Any]) -> Any:
    """The golden answers: a top-level answer field, else Search-R1's ``reward_model.ground_truth.target``."""
    for key in ("golden_answers", "answer", "answers", "target"):
        if row.get(key) is not None:
            return row[key]
    reward_model = row.get("reward_model")
    if isinstance(reward_model, Mapping):
        ground_truth = reward_model.get("ground_truth")
        if isinstance(ground_truth, Mapping):
            return ground_truth.get("target")
        return ground_truth
    return None
