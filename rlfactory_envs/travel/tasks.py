"""Load TravelPlanner queries from the files they ship in, whatever their layout; each row is read by its content:

- **the benchmark's rows** (``osunlp/TravelPlanner``: ``org``, ``dest``, ``days``, ``visiting_city_number``,
  ``date``, ``people_number``, ``local_constraint``, ``budget``, ``query``, ``level``, ...) as JSON lines, a JSON
  list, parquet, or CSV. The released CSVs store ``date`` and ``local_constraint`` as Python-literal text, which
  ``TravelQuery.from_dict`` reads; their other columns (``reference_information``, ``annotated_plan``) are left.
- **chat rows** (``std_travelplanner.jsonl``: ``{"messages": [system, user, assistant]}``, the list or its
  Python-literal text): the user message holds ``Given Information:[{'Description': ..., 'Content': ...}, ...]``
  and then ``Query:<text>``; the fields come from the text with ``parse_query_text``, the Descriptions serving as
  reference keys. The assistant's gold plan is read by ``load_gold_plans``.
- **text-only rows** (``{"idx", "query", ...}``, e.g. a submission file such as ``example_evaluation.jsonl``): the
  fields come from the text.

Reading the text needs the sandbox's city names: ``city_states`` is a city -> state mapping, or a sandbox
``database/`` folder (then ``open_sandbox(folder).city_state``, opened only when a row needs it). Task ids are the
row's ``task_id`` / ``idx`` when it has one, else its 0-based position. A malformed row is a ``ValueError`` naming
the file and the row (``line N``, ``item N``, ``row N``); repeated ids and a file without rows are errors too.
"""

from __future__ import annotations

import ast
import csv
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from rlfactory_envs.kernel.task_files import ROW_FILE_SUFFIXES, Row, read_rows, read_tasks
from rlfactory_envs.kernel.task_source import TaskSource
from rlfactory_envs.travel.family import SAMPLE_DATABASE_DIR, SAMPLE_QUERIES_PATH
from rlfactory_envs.travel.query_text import parse_query_text
from rlfactory_envs.travel.query import TravelQuery, python_literal
from rlfactory_tool_servers.travel.store import open_sandbox

__all__ = ["SAMPLE_NAME", "SAMPLE_QUERIES_PATH", "CityStates", "load_gold_plans", "load_travel_tasks",
           "sample_tasks"]

SAMPLE_NAME = "rlf-travel-sample"
TASK_FILE_SUFFIXES = (*ROW_FILE_SUFFIXES, ".csv")

CityStates = Mapping[str, str] | str | os.PathLike[str] | None
"""A city -> state mapping, a sandbox ``database/`` folder to read it from, or ``None`` (official rows only)."""

_GIVEN_INFORMATION_RE = re.compile(r"Given Information:", re.IGNORECASE)
_QUERY_MARKER = "Query:"
_DESCRIPTION_RE = re.compile(r"""['"]Description['"]\s*:\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")""")


def load_travel_tasks(data_path: str | os.PathLike[str] | None, city_states: CityStates = None, *,
                      name: str | None = None) -> TaskSource[TravelQuery]:
    """Every query of ``data_path`` in file order, as ``TravelQuery``; ``None``: the embedded sample
    (``sample_tasks``). The source is named ``name``, else after the file's stem.

    ``ValueError`` for an unknown suffix, a malformed row (with file and row), repeated task ids, a file without
    queries, or a text-only row when no ``city_states`` is given; ``FileNotFoundError`` for a missing file."""
    if data_path is None:
        return sample_tasks()
    path = Path(data_path)
    cities = _LazyCityStates(city_states)
    return read_tasks(path, lambda data, default_id: _task_from_row(data, default_id, cities), "travel queries",
                      rows=_task_rows(path), name=name)


def sample_tasks() -> TaskSource[TravelQuery]:
    """The embedded synthetic sample's queries (``rlfactory_envs/travel/sample_data.py``), named
    ``"rlf-travel-sample"``."""
    return load_travel_tasks(SAMPLE_QUERIES_PATH, SAMPLE_DATABASE_DIR, name=SAMPLE_NAME)


def load_gold_plans(path: str | os.PathLike[str]) -> list[list[dict[str, Any]]]:
    """The gold plan of each chat row of ``path`` (``std_travelplanner.jsonl``), in file order: the assistant
    message read as a Python literal, a list of day dicts (the trailing ``{}`` entries kept as they are).
    ``ValueError`` naming the file and line of a row without one."""
    path = Path(path)
    plans = []
    for row in read_rows(path, what="gold plans"):
        try:
            if not isinstance(row.data, Mapping) or row.data.get("messages") is None:
                raise ValueError("expected a chat row {\"messages\": [...]}")
            plan = python_literal(_message(row.data["messages"], "assistant").strip(),
                                  "the assistant message (the gold plan)")
            if not isinstance(plan, list) or not all(isinstance(day, dict) for day in plan):
                raise ValueError("the assistant message is not a list of day dicts")
        except ValueError as exc:
            raise ValueError(f"{path}: {row.place}: {exc}") from None
        plans.append(plan)
    return plans


class _LazyCityStates:
    """The city -> state mapping, read from a sandbox folder the first time a row needs it."""

    def __init__(self, source: CityStates):
        self._source = source
        self._mapping: Mapping[str, str] | None = source if isinstance(source, Mapping) else None

    def get(self) -> Mapping[str, str]:
        if self._mapping is None:
            if self._source is None:
                raise ValueError("a row without structured fields needs city_states (a city -> state mapping or "
                                 "the sandbox's database/ folder) to read its query text")
            self._mapping = open_sandbox(self._source).city_state
        return self._mapping


def _task_rows(path: Path) -> Iterator[Row]:
    suffix = path.suffix.lower()
    if suffix != ".csv":
        if suffix not in ROW_FILE_SUFFIXES:
            raise ValueError(f"{path}: cannot read travel queries from a {suffix or 'suffix-less'} file; expected "
                             f"one of {', '.join(TASK_FILE_SUFFIXES)}")
        yield from read_rows(path, what="travel queries")
        return
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    limit = csv.field_size_limit()
    csv.field_size_limit(1 << 30)  # the released CSVs' reference_information cells exceed the default 128 KiB
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            for index, record in enumerate(csv.DictReader(handle)):
                yield Row(index, f"row {index + 1}", record)
    except csv.Error as exc:
        raise ValueError(f"{path}: not a readable CSV file: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text: {exc}") from None
    finally:
        csv.field_size_limit(limit)


def _task_from_row(data: Any, default_id: str, cities: _LazyCityStates) -> TravelQuery:
    if not isinstance(data, Mapping):
        raise ValueError(f"expected a JSON object / table row, got {type(data).__name__}")
    data = {str(key).strip() if key is not None else key: value for key, value in data.items()}
    task_id = _row_id(data, default_id)
    if "org" in data:
        return TravelQuery.from_dict(data, task_id=task_id)
    if data.get("messages") is not None:
        text, keys = _chat_query(data["messages"])
        row = parse_query_text(text, city_states=cities.get(), reference_keys=keys)
    elif isinstance(data.get("query"), str):
        row = parse_query_text(data["query"], city_states=cities.get())
    else:
        raise ValueError("a row needs the benchmark's fields (org, dest, days, ...), chat 'messages', or a "
                         "'query' text")
    return TravelQuery.from_dict(row, task_id=task_id)


def _row_id(data: Mapping[str, Any], default_id: str) -> str:
    for key in ("task_id", "idx"):
        value = data.get(key)
        if value is not None and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return default_id


def _message(messages: Any, role: str) -> str:
    """The content of the last ``role`` message of a chat (a list of messages or its JSON / Python-literal text)."""
    messages = python_literal(messages.strip() if isinstance(messages, str) else messages, "'messages'")
    if not isinstance(messages, Sequence) or isinstance(messages, str):
        raise ValueError("'messages' must be a list of chat messages")
    contents = [m.get("content") for m in messages if isinstance(m, Mapping) and m.get("role") == role]
    if not contents or not isinstance(contents[-1], str):
        raise ValueError(f"'messages' has no {role} message with text content")
    return contents[-1]


def _chat_query(messages: Any) -> tuple[str, list[str]]:
    """The query text and the reference Descriptions of a chat row's user message."""
    user = _message(messages, "user")
    before, marker, query = user.rpartition(_QUERY_MARKER)
    if not marker or not query.strip():
        raise ValueError("the user message has no 'Query:' text")
    given = _GIVEN_INFORMATION_RE.search(before)
    if given is None:
        return query.strip(), []
    information = before[given.end():].strip()
    try:
        blocks = ast.literal_eval(information)
        keys = [str(block["Description"]) for block in blocks if isinstance(block, Mapping) and "Description" in block]
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        keys = [next(group for group in match.groups() if group is not None)
                for match in _DESCRIPTION_RE.finditer(information)]  # a block list that is not a clean literal
    return query.strip(), keys
