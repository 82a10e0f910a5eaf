"""The fields of one trajectory line the runs table shows, read without building the rest of the line.

A line of ``rlf rollout --out`` (``rollout.runner.EpisodeRecord``) or of the trainer adapters' trajectory log is
one JSON object; the table needs a dozen of its small fields, while its bulk (the messages, the transcript) is only
read when the episode is opened. ``msgspec`` decodes a line into ``LineFields`` and skips every other field without
making Python objects of it, which is what lets a 100,000-episode file be indexed in about a second.

``table_row`` turns the decoded fields into the table's values, or says in one line why the line is not an
episode record. Fields written by later versions (``reward_reason``, ``format_version``, ``train_step``) are read
when present.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import msgspec

TASK_ID_KEYS = ("task_id", "id", "question_id", "instance_id")
TEMPLATE_KEYS = ("template", "db_id", "app")
DIFFICULTY_KEYS = ("difficulty", "level", "hardness")


class StepFields(msgspec.Struct):
    """What the table needs of one step (``EpisodeRecord.steps``)."""

    seconds: Any = None
    truncation_reason: Any = None


class LineFields(msgspec.Struct):
    """What the table needs of one trajectory line; every other field of the line is skipped."""

    env_id: Any = None
    seed: Any = None
    task: Any = None
    reward: Any = None
    reward_parts: Any = None
    terminated: Any = None
    truncated: Any = None
    turns: Any = None
    tool_calls: Any = None
    tool_errors: Any = None
    tool_latency_s: Any = None
    error: Any = None
    steps: list[StepFields] | None = None
    train_step: Any = None


LINE_DECODER = msgspec.json.Decoder(LineFields)


@dataclass(frozen=True)
class TableRow:
    """One episode's values in the runs table."""

    env: str
    task: str
    template: str
    difficulty: str
    reason: str
    reward: float
    parts: dict[str, float]
    turns: int
    tool_calls: int
    tool_errors: int
    seconds: float
    latency_ms: float
    step: int
    call_latencies: list[float]


class NotAnEpisode(ValueError):
    """The line is JSON but not an episode record; the message says what is missing."""


def decode_line(line: bytes | memoryview) -> LineFields:
    """The table's fields of ``line``; ``msgspec.DecodeError`` when it is not JSON (a line cut short, say),
    ``NotAnEpisode`` when it is JSON of another shape."""
    try:
        return LINE_DECODER.decode(line)
    except msgspec.ValidationError as exc:
        raise NotAnEpisode(f"not an episode record ({exc})") from None


def table_row(fields: LineFields) -> TableRow:
    """The table's values of a decoded line; ``NotAnEpisode`` when it has no ``env_id`` or no numeric ``reward``."""
    if not isinstance(fields.env_id, str) or not _is_number(fields.reward):
        raise NotAnEpisode("not an episode record: it needs a string env_id and a numeric reward")
    task = fields.task if isinstance(fields.task, dict) else {}
    latencies = [float(x) for x in fields.tool_latency_s or () if _is_number(x)]
    seconds = [float(s.seconds) for s in fields.steps or () if _is_number(s.seconds)]
    return TableRow(
        env=fields.env_id, task=task_label(task, fields.seed), template=_first(task, TEMPLATE_KEYS),
        difficulty=_first(task, DIFFICULTY_KEYS), reason=end_reason(fields), reward=float(fields.reward),
        parts={str(k): float(v) for k, v in (fields.reward_parts or {}).items() if _is_number(v)}
        if isinstance(fields.reward_parts, dict) else {},
        turns=_count(fields.turns), tool_calls=_count(fields.tool_calls), tool_errors=_count(fields.tool_errors),
        seconds=sum(seconds) if seconds else math.nan,
        latency_ms=1000.0 * sum(latencies) / len(latencies) if latencies else math.nan,
        step=_count(fields.train_step) if _is_number(fields.train_step) else -1, call_latencies=latencies)


def task_label(task: dict[str, Any], seed: Any) -> str:
    """The task's id (``task_id``, ``id``, ...), else its template and seed (Android), else the episode's seed."""
    found = _first(task, TASK_ID_KEYS)
    if found:
        return found
    if task.get("template") is not None:
        return f"{task['template']}#{task.get('seed', '')}"
    return f"seed {seed}"


def end_reason(fields: LineFields) -> str:
    """Why the episode ended: ``error`` (outside the model), ``answer``, or the truncation's reason."""
    if fields.error:
        return "error"
    if fields.terminated:
        return "answer"
    last = fields.steps[-1].truncation_reason if fields.steps else None
    return str(last) if last else ("truncated" if fields.truncated else "unfinished")


def _first(task: dict[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = task.get(key)
        if value is not None and not isinstance(value, (dict, list)):
            return str(value)
    return ""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _count(value: Any) -> int:
    """A count for an int32 column: 0 for what is not a non-negative number."""
    return min(int(value), 2**31 - 1) if _is_number(value) and value >= 0 else 0
