"""Policies that need no model, for smoke tests of any env, a user's own included: ``ReferencePolicy`` answers each
task's reference answer (the family's, or a user's row's ground truth), ``ReplayPolicy`` replays the responses of a
file (a trajectory file ``rlf rollout --out`` wrote, or lines a user wrote)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.reward_hacks import HackNotApplicable, final_answer, required_reference
from rlfactory_envs.rollout.policy import PolicyError


class ReferencePolicy:
    """Answers the env's reference answer for the task at once (``FamilyTooling.reference_answer``: a user's row's
    ground truth, the gold query, a golden answer); a task without one fails its episode with the reason."""

    name = "reference"
    description = ("answers each task's reference answer (its ground truth) at once, calling no tool: a check of "
                   "the data and the reward, not a model's score")

    async def act(self, env: ToolEnv, observation: str) -> str:
        try:
            return final_answer(env, required_reference(env))
        except HackNotApplicable as exc:
            raise PolicyError(str(exc)) from None


class ReplayPolicy:
    """Replays, turn by turn, the responses a file holds for each task (by ``task_id``). A line is a trajectory
    line (its assistant messages are the responses) or ``{"task_id": ..., "responses": ["...", ...]}``; the first
    line of a task is the one replayed. A task the file lacks, or a turn past its responses, fails the episode."""

    name = "replay"

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.responses = read_responses(self.path)
        self.description = f"replays the responses of {self.path} ({len(self.responses)} tasks)"

    async def act(self, env: ToolEnv, observation: str) -> str:
        task_id = str(getattr(env.task, "task_id", ""))
        responses = self.responses.get(task_id)
        if responses is None:
            raise PolicyError(f"{self.path} has no responses for task {task_id!r}")
        if env.turn >= len(responses):
            raise PolicyError(f"{self.path} has {len(responses)} responses for task {task_id!r}; turn {env.turn + 1} "
                              "has none")
        return responses[env.turn]


def read_responses(path: Path) -> dict[str, list[str]]:
    """``{task_id: [response, ...]}`` of a replay file; ``ConfigError`` naming the line that cannot be read."""
    if not path.is_file():
        raise ConfigError(f"replay file {path}: no such file")
    found: dict[str, list[str]] = {}
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                row = None
            task_id, responses = _line_responses(row, path, number)
            found.setdefault(task_id, responses)
    if not found:
        raise ConfigError(f"replay file {path} holds no line")
    return found


def _line_responses(row: Any, path: Path, number: int) -> tuple[str, list[str]]:
    where = f"replay file {path}, line {number}"
    if not isinstance(row, Mapping) or row.get("task_id") is None:
        raise ConfigError(f"{where}: expected a JSON object with a task_id and responses (or a trajectory line)")
    responses = row.get("responses")
    if responses is None:
        responses = [m.get("content") for m in row.get("messages") or () if isinstance(m, Mapping)
                     and m.get("role") == "assistant"]
    if not isinstance(responses, list) or not all(isinstance(r, str) for r in responses):
        raise ConfigError(f"{where}: responses must be a list of strings")
    return str(row["task_id"]), responses
