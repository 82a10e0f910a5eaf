"""A tool-verified reward: the server that holds the episode's state computes the verdict, and the reward reads it.

At the end of an episode the env calls ``tool(answer=<the final answer>)`` through ``RewardInput.call_tool`` (the
episode's session bound, the tool hidden from the model). The tool answers a JSON object: a boolean or number
``value_key`` (``"success"`` by default), which with the ``part_keys`` entries become the reward's parts (other
numbers, counts say, are no reward terms); the whole object goes to ``info[info_key]``. The Android family's ``device_verify`` is one: the phone's final state is
checked where it lives, and nothing of it travels but the verdict.

A tool that fails, answers something unreadable, or a value outside the range scores the range's low end with
the reason: a sick server never pays a trajectory.
"""

from __future__ import annotations

import json
import math
from typing import Any

from rlfactory_reward_models.base import Reward, RewardInput, RewardModelBase

MAX_REASON_CHARS = 300


class ToolVerdictReward(RewardModelBase):
    """The reward a tool answers for the episode (see the module docstring)."""

    def __init__(self, tool: str, *, value_key: str = "success", part_keys: tuple[str, ...] = (),
                 info_key: str = "verdict", reward_range: tuple[float, float] = (0.0, 1.0)):
        self.tool = tool
        self.value_key = value_key
        self.part_keys = (value_key, *part_keys)
        self.info_key = info_key
        self.reward_range = reward_range

    async def score(self, item: RewardInput) -> Reward:
        low, high = self.reward_range
        if item.call_tool is None:
            return Reward(low, {}, f"no tool access to ask {self.tool} for the verdict (score outside an env)")
        result = await item.call_tool(self.tool, {"answer": item.answer or ""})
        if result.is_error:
            return Reward(low, {}, f"{self.tool} failed: {result.text[:MAX_REASON_CHARS]}")
        try:
            verdict = json.loads(result.text)
        except json.JSONDecodeError:
            verdict = None
        if not isinstance(verdict, dict) or not _is_number(verdict.get(self.value_key)):
            return Reward(low, {}, f"{self.tool} answered no numeric {self.value_key!r}: "
                                   f"{result.text[:MAX_REASON_CHARS]}")
        value = float(verdict[self.value_key])
        if not low <= value <= high:
            return Reward(low, {}, f"{self.tool} answered {self.value_key}={value}, outside {self.reward_range}")
        parts = {key: float(verdict[key]) for key in self.part_keys if _is_number(verdict.get(key))}
        reason = verdict.get("reason") if isinstance(verdict.get("reason"), str) else None
        return Reward(value, parts, reason or None, {self.info_key: verdict})


def _is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float)) and (not isinstance(value, float) or math.isfinite(value))
