"""The fields of one trajectory line the runs table shows, read without building the rest of the line.

A line of ``rlf rollout --out`` (``rollout.runner.EpisodeRecord``) or of the trainer adapters' trajectory log is
one JSON object; the table needs a dozen of its small fields, while its bulk (the messages, the transcript) is only
read when the episode is opened. ``msgspec`` decodes a line into ``LineFields``, checking each field's type, and
skips every other field without making Python objects of it: that is what lets a 100,000-episode file be indexed
in seconds (the structs are not tracked by the garbage collector: a line's values are copied out at once). A line
that is not JSON, or whose ``env_id`` or ``reward`` is missing or of the wrong type, is not an episode record.

Fields written by later versions (``reward_reason``, ``format_version``, ``train_step``) are read when present.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

TASK_ID_KEYS = ("task_id", "id", "question_id", "instance_id")
TEMPLATE_KEYS = ("template", "db_id", "app")
DIFFICULTY_KEYS = ("difficulty", "level", "hardness")
Scalar = str | int | float | bool | None
Count = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]


class TaskFields(msgspec.Struct, gc=False):
    """What the table needs of a task: its id, template and difficulty, under the names the families use."""

    task_id: Any = None
    id: Any = None
    question_id: Any = None
    instance_id: Any = None
    template: Any = None
    db_id: Any = None
    app: Any = None
    difficulty: Any = None
    level: Any = None
    hardness: Any = None
    seed: Any = None


class StepFields(msgspec.Struct, gc=False):
    """What the table needs of one step (``EpisodeRecord.steps``)."""

    seconds: float | None = None
    truncation_reason: str | None = None


class LineFields(msgspec.Struct, gc=False):
    """What the table needs of one trajectory line; every other field of the line is skipped."""

    env_id: str
    reward: float
    seed: Any = None
    task: TaskFields | None = None
    reward_parts: dict[str, float] = {}
    terminated: bool = False
    truncated: bool = False
    turns: Count = 0
    tool_calls: Count = 0
    tool_errors: Count = 0
    tool_latency_s: list[float] = []
    error: Scalar = None
    steps: list[StepFields] = []
    train_step: Count | None = None


LINE_DECODER = msgspec.json.Decoder(LineFields)


class NotAnEpisode(ValueError):
    """The line is JSON but not an episode record; the message says what is wrong."""


def decode_line(line: bytes | memoryview) -> LineFields:
    """The table's fields of ``line``; ``msgspec.DecodeError`` when it is not JSON (a line cut short, say),
    ``NotAnEpisode`` when it is JSON of another shape."""
    try:
        return LINE_DECODER.decode(line)
    except msgspec.ValidationError as exc:
        raise NotAnEpisode(f"not an episode record: {exc}") from None


def task_label(fields: LineFields) -> str:
    """The task's id (``task_id``, ``id``, ...), else its template and seed (Android), else the episode's seed."""
    task = fields.task
    if task is not None:
        found = _first(task, TASK_ID_KEYS)
        if found:
            return found
        if task.template is not None:
            return f"{task.template}#{'' if task.seed is None else task.seed}"
    return f"seed {fields.seed}"


def template_of(fields: LineFields) -> str:
    return _first(fields.task, TEMPLATE_KEYS) if fields.task is not None else ""


def difficulty_of(fields: LineFields) -> str:
    return _first(fields.task, DIFFICULTY_KEYS) if fields.task is not None else ""


def end_reason(fields: LineFields) -> str:
    """Why the episode ended: ``error`` (outside the model), ``answer``, or the truncation's reason."""
    if fields.error:
        return "error"
    if fields.terminated:
        return "answer"
    last = fields.steps[-1].truncation_reason if fields.steps else None
    return last or ("truncated" if fields.truncated else "unfinished")


def seconds_of(fields: LineFields) -> float | None:
    """The episode's wall time: the sum of its steps' (``None`` when they were not timed)."""
    timed = [step.seconds for step in fields.steps if step.seconds is not None]
    return sum(timed) if timed else None


def _first(task: TaskFields, keys: tuple[str, ...]) -> str:
    for key in keys:
        value = getattr(task, key)
        if value is not None and not isinstance(value, (dict, list)):
            return str(value)
    return ""
