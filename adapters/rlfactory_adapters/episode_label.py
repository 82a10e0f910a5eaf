"""The ``label`` of an OpenRLHF data row: which env to build and which task to play, as JSON.

``rlfactory_adapters.task_rows.TaskRow.label()`` writes it: ``{"env_id": "rlf/Search-NQ-v0", "env_kwargs": {...},
"task": {...}}``. OpenRLHF hands the label to the agent untouched (a str from jsonl; a dict when the row held an
object).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EpisodeLabel:
    """The env id, its ``gym.make`` kwargs and the task (``reset(options={"task": task})``)."""

    env_id: str
    task: dict[str, Any]
    env_kwargs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, label: str | Mapping[str, Any]) -> EpisodeLabel:
        """Read a label; ``ValueError`` says what is wrong with it (a data-file bug, not a model's)."""
        data: Any = label
        if isinstance(label, (str, bytes)):
            try:
                data = json.loads(label)
            except ValueError as exc:
                raise ValueError(f"the OpenRLHF label is not JSON ({exc}); write the data file with `python -m "
                                 f"rlfactory_adapters.prepare_data --trainer openrlhf`: {str(label)[:200]!r}") from None
        if not isinstance(data, Mapping):
            raise ValueError(f"the OpenRLHF label must be a JSON object, got {type(data).__name__}")
        env_id, task, env_kwargs = data.get("env_id"), data.get("task"), data.get("env_kwargs") or {}
        if not isinstance(env_id, str) or not env_id:
            raise ValueError(f"the OpenRLHF label has no env_id (an rlf/* id): {sorted(data)}")
        if not isinstance(task, Mapping):
            raise ValueError(f"the OpenRLHF label of {env_id} has no task object: {sorted(data)}")
        if not isinstance(env_kwargs, Mapping):
            raise ValueError(f"the OpenRLHF label's env_kwargs must be an object, got {type(env_kwargs).__name__}")
        return cls(env_id=env_id, task=dict(task), env_kwargs=dict(env_kwargs))
