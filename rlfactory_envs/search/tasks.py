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

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rlfactory_envs.kernel.task_source import TaskSource
from rlfactory_envs.search.task import SearchTask

__all__ = ["SAMPLE_CORPUS_PATH", "SAMPLE_QUESTIONS_PATH", "SAMPLE_NAME", "load_search_tasks", "sample_tasks"]

_DATA_DIR = Path(__file__).resolve().parent / "data"
SAMPLE_QUESTIONS_PATH = _DATA_DIR / "sample_questions.jsonl"
"""The embedded synthetic sample's questions (NQ-open jsonl layout); see ``rlfactory_envs.search.sample_data``."""
SAMPLE_CORPUS_PATH = _DATA_DIR / "sample_corpus.jsonl"
"""The embedded synthetic sample's passages (Search-R1 wiki-18 jsonl layout)."""
SAMPLE_NAME = "rlf-search-sample"

_JSON_SUFFIXES = (".jsonl", ".json")
_PARQUET_SUFFIX = ".parquet"
_QUESTION_MARKER = "Question:"


def load_search_tasks(path: str | os.PathLike[str]) -> TaskSource[SearchTask]:
    """Every task in the QA file at ``path``, in file order; the source is named after the file's stem.

    ``ValueError`` for an unknown suffix, a malformed row (with file and line/row number), repeated task ids or a
    file without tasks; ``FileNotFoundError`` when there is no such file.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in _JSON_SUFFIXES:
        rows = _json_rows(path)
    elif suffix == _PARQUET_SUFFIX:
        rows = _parquet_rows(path)
    else:
        raise ValueError(f"{path}: cannot read search tasks from a {suffix or 'suffix-less'} file; "
                         f"expected one of .jsonl, .json, .parquet")
    tasks: list[SearchTask] = []
    seen: dict[str, str] = {}
    for where, number, row in _decoded(rows, path):
        place = f"{where} {number + 1}"
        try:
            task = _task_from_row(row, default_id=str(number))
        except ValueError as exc:
            raise ValueError(f"{path}: {place}: {exc}") from None
        if task.task_id in seen:
            raise ValueError(f"{path}: {place}: task id {task.task_id!r} repeats the one of {seen[task.task_id]}")
        seen[task.task_id] = place
        tasks.append(task)
    if not tasks:
        raise ValueError(f"{path}: the file holds no search tasks")
    return TaskSource(tasks, name=path.stem, path=str(path))


def sample_tasks() -> TaskSource[SearchTask]:
    """The embedded synthetic sample's questions, named ``"rlf-search-sample"``."""
    source = load_search_tasks(SAMPLE_QUESTIONS_PATH)
    source.name = SAMPLE_NAME
    return source


def _decoded(rows: Iterator[tuple[str, int, Any]], path: Path) -> Iterator[tuple[str, int, Any]]:
    """``rows``, with a file that is not UTF-8 text reported as a ``ValueError`` naming it."""
    try:
        yield from rows
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text: {exc}") from None


def _json_rows(path: Path) -> Iterator[tuple[str, int, Any]]:
    """``("line", 0-based line number, object)`` per non-blank line; a JSON-list file yields ``("item", ...)``."""
    with path.open("r", encoding="utf-8-sig") as lines:
        first = lines.read(1)
        while first.isspace():
            first = lines.read(1)
        lines.seek(0)
        if path.suffix.lower() == ".json" and first == "[":
            try:
                items = json.load(lines)
            except ValueError as exc:
                raise ValueError(f"{path}: not valid JSON: {exc}") from None
            if not isinstance(items, list):
                raise ValueError(f"{path}: expected a JSON list of objects")
            for number, item in enumerate(items):
                yield "item", number, item
            return
        for number, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"{path}: line {number + 1}: not valid JSON: {exc}") from None
            yield "line", number, row


def _parquet_rows(path: Path) -> Iterator[tuple[str, int, Any]]:
    """``("row", 0-based row number, row as a dict)`` per row of the parquet file, read batch by batch."""
    import pyarrow.parquet as pq

    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several error types for a file that is not parquet
        raise ValueError(f"{path}: not a readable parquet file: {exc}") from None
    number = 0
    for batch in parquet.iter_batches():
        for row in batch.to_pylist():
            yield "row", number, row
            number += 1


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
