"""Reading the rows of a task file, whatever layout it comes in: JSON lines, a JSON list, or parquet.

``read_rows`` picks the reader by file suffix and yields each row with where it was found, so a loader can say
``file: line 7: what is wrong``:

- ``.jsonl``: one JSON value a line (blank lines skipped), places ``line N``;
- ``.json``: a JSON list (places ``item N``) or, when the file does not start with ``[``, JSON lines;
- ``.parquet``: the table's rows as dicts, read batch by batch with pyarrow (places ``row N``).

Numbers in places are 1-based; ``Row.index`` is the 0-based position. Every failure is a ``ValueError`` naming the
file (``FileNotFoundError`` for a missing one), never a decoder's traceback.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from rlfactory_envs.kernel.task_source import HasTaskId, TaskSource

ROW_FILE_SUFFIXES = (".jsonl", ".json", ".parquet")

TaskT = TypeVar("TaskT", bound=HasTaskId)


@dataclass(frozen=True)
class Row:
    """One row of a task file: ``data`` as decoded, ``index`` its 0-based position, ``place`` e.g. ``"line 3"``."""

    index: int
    place: str
    data: Any


def read_rows(path: str | os.PathLike[str], *, json_layout: Literal["auto", "list"] = "auto",
              what: str = "tasks") -> Iterator[Row]:
    """The rows of ``path`` in file order. ``json_layout="list"`` requires a ``.json`` file to hold a JSON list;
    ``what`` names the rows in the error for an unknown suffix."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in ROW_FILE_SUFFIXES:
        raise ValueError(f"{path}: cannot read {what} from a {suffix or 'suffix-less'} file; expected one of "
                         f"{', '.join(ROW_FILE_SUFFIXES)}")
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    rows = _parquet_rows(path) if suffix == ".parquet" else _json_rows(path, json_layout)
    try:
        yield from rows
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text: {exc}") from None


def read_tasks(path: str | os.PathLike[str], parse: Callable[[Any, str], TaskT], what: str, *,
               rows: Iterable[Row] | None = None, name: str | None = None) -> TaskSource[TaskT]:
    """Every row of ``path`` as a task, ``parse(row data, default id)`` each, in file order, named ``name`` or after
    the file's stem. ``rows`` replaces ``read_rows(path)`` for a layout it does not read. ``ValueError`` names the
    file and the row of a row ``parse`` refuses, a repeated task id, or a file that holds no ``what``."""
    path = Path(path)
    tasks: list[TaskT] = []
    seen: dict[str, str] = {}
    for row in read_rows(path, what=what) if rows is None else rows:
        try:
            task = parse(row.data, str(row.index))
        except ValueError as exc:
            raise ValueError(f"{path}: {row.place}: {exc}") from None
        if task.task_id in seen:
            raise ValueError(f"{path}: {row.place}: task id {task.task_id!r} repeats the one of {seen[task.task_id]}")
        seen[task.task_id] = row.place
        tasks.append(task)
    if not tasks:
        raise ValueError(f"{path}: the file holds no {what}")
    return TaskSource(tasks, name=name or path.stem, path=str(path))


def _json_rows(path: Path, layout: str) -> Iterator[Row]:
    with path.open("r", encoding="utf-8-sig") as lines:
        first = lines.read(1)
        while first.isspace():
            first = lines.read(1)
        lines.seek(0)
        if path.suffix.lower() == ".json" and (first == "[" or layout == "list"):
            try:
                items = json.load(lines)
            except ValueError as exc:
                raise ValueError(f"{path}: not valid JSON: {exc}") from None
            if not isinstance(items, list):
                raise ValueError(f"{path}: expected a JSON list of rows, got a {type(items).__name__}")
            for index, item in enumerate(items):
                yield Row(index, f"item {index + 1}", item)
            return
        for index, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"{path}: line {index + 1}: not valid JSON: {exc}") from None
            yield Row(index, f"line {index + 1}", data)


def _parquet_rows(path: Path) -> Iterator[Row]:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several error types for a file that is not parquet
        raise ValueError(f"{path}: not a readable parquet file: {exc}") from None
    index = 0
    for batch in parquet.iter_batches():
        for data in batch.to_pylist():
            yield Row(index, f"row {index + 1}", data)
            index += 1
