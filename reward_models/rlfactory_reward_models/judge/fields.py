"""What a template's fields hold for a task, when the family gives no ``fields`` function of its own.

``question``: ``task.question`` (or ``task.to_dict()["question"]``; a chat prompt's last user message; a travel
query's text). ``reference``: the first of ``task.golden_answers``, ``task.ground_truth``, ``task.gold_sql``,
``task.query`` that is set (unless it only repeats the question), written readably: one answer as it is, several as
a list, anything else as JSON. The answer is never a field here: it is always ``item.answer``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from rlfactory_reward_models.base import RewardInput

__all__ = ["default_fields", "readable"]

_REFERENCE_ATTRIBUTES = ("golden_answers", "ground_truth", "gold_sql", "query")


def default_fields(item: RewardInput) -> dict[str, str]:
    """``{"question": ..., "reference": ...}`` of ``item.task`` (empty strings for what it lacks)."""
    task = item.task
    row = _row(task)
    question = _question(task, row)
    reference = ""
    for name in _REFERENCE_ATTRIBUTES:
        value = getattr(task, name, row.get(name))
        if value is None:
            continue
        text = readable(value)
        if text.strip() and text.strip() != question.strip():
            reference = text
            break
    return {"question": question, "reference": reference}


def readable(value: Any) -> str:
    """``value`` as a judge reads it: text as is, several answers one per line (``- a``), anything else as JSON."""
    if isinstance(value, str):
        return value
    if hasattr(value, "tolist"):  # numpy arrays and scalars (parquet columns)
        value = value.tolist()
        if isinstance(value, str):
            return value
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        items = [readable(v) for v in value]
        return items[0] if len(items) == 1 else "\n".join(f"- {v}" for v in items)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def _row(task: Any) -> Mapping[str, Any]:
    if isinstance(task, Mapping):
        return task
    to_dict = getattr(task, "to_dict", None)
    if callable(to_dict):
        try:
            row = to_dict()
        except Exception:  # noqa: BLE001 - a task that cannot describe itself just gives no fields
            return {}
        return row if isinstance(row, Mapping) else {}
    return {}


def _question(task: Any, row: Mapping[str, Any]) -> str:
    question = getattr(task, "question", None)
    if not isinstance(question, str) or not question.strip():
        question = row.get("question")
    if isinstance(question, str) and question.strip():
        return question
    prompt = getattr(task, "prompt", None) or row.get("prompt")
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence):
        users = [m.get("content") for m in prompt if isinstance(m, Mapping) and m.get("role") == "user"]
        if users and isinstance(users[-1], str):
            return users[-1]
    query = getattr(task, "query", None) or row.get("query")
    return query if isinstance(query, str) else ""
