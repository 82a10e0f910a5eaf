"""What tooling needs of a user's env (``rlf/MCP-v0``): the reference answer the audit sends (the row's ground truth
as answer text) and the ground truth a trainer's data file shows (the row's own)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlfactory_envs.generic.task import GenericTask
from rlfactory_envs.kernel.families import FamilyTooling


class GenericTooling(FamilyTooling):
    def reference_answer(self, env: Any, task: GenericTask) -> str | None:
        """The row's ground truth as answer text: itself, or its first accepted answer (a list, Search-R1's
        ``{"target": [...]}``); ``None`` for a row without one or whose ground truth is structured otherwise."""
        truth = task.ground_truth
        if isinstance(truth, Mapping):
            truth = truth.get("target")
        if isinstance(truth, (list, tuple)):
            truth = truth[0] if truth else None
        if truth is None or isinstance(truth, (Mapping, list, tuple)) or not str(truth).strip():
            return None
        return str(truth)

    def ground_truth(self, env: Any, task: GenericTask) -> Any:
        return task.ground_truth
