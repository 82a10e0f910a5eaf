"""Which env and task a verl data row asks for: read from the row's ``extra_info`` (see
``rlfactory_adapters.task_rows``).

``extra_info`` carries ``env_id``, ``env_kwargs`` (a JSON object, as text or as a dict) and ``task`` (the task in
full, as JSON text or as a dict). A loop config can give a default ``env_id`` for rows without one and
``env_kwargs`` that override the row's (deployment settings such as tool-server URLs).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class RowSpecError(ValueError):
    """A data row does not say which env or task to play; the message says how to write the data."""


@dataclass(frozen=True)
class RowSpec:
    env_id: str
    env_kwargs: dict[str, Any]
    task: dict[str, Any]


def _json_object(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str | bytes):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError as exc:
            raise RowSpecError(f"extra_info.{what} is not valid JSON: {exc}") from None
    if not isinstance(value, Mapping):
        raise RowSpecError(f"extra_info.{what} must be a JSON object, got {type(value).__name__}")
    return dict(value)


def row_spec(extra_info: Mapping[str, Any] | None, *, default_env_id: str | None = None,
             env_kwargs_override: Mapping[str, Any] | None = None) -> RowSpec:
    """The env id, env kwargs and task of a row; ``RowSpecError`` when the row cannot say."""
    extra_info = extra_info if isinstance(extra_info, Mapping) else {}
    env_id = extra_info.get("env_id") or default_env_id
    if not env_id:
        raise RowSpecError("the row has no extra_info.env_id and the loop config gives no env_id; write the data "
                           "with `python -m rlfactory_adapters.prepare_data --trainer verl --env rlf/...`")
    task = _json_object(extra_info.get("task"), "task")
    if not task:
        raise RowSpecError(f"the row for {env_id} has no extra_info.task; write the data with "
                           "`python -m rlfactory_adapters.prepare_data --trainer verl`")
    env_kwargs = _json_object(extra_info.get("env_kwargs"), "env_kwargs")
    env_kwargs.update(env_kwargs_override or {})
    return RowSpec(env_id=str(env_id), env_kwargs=env_kwargs, task=task)
