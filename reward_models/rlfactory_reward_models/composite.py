"""A weighted sum of rewards: ``{"exact_match": 0.7, "judge": 0.3, "format": 0.1}``.

Each term is a reward model, or one named part of a model's reward (``f1`` of the QA reward, ``pass_rate`` of the
travel verdict), times its weight. A model shared by several terms is scored once per episode. The declared range is
the weighted sum of the terms' ranges (a negative weight is a penalty), and each term's value is checked against its
model's range: a term that fails (its model raised, gave a value outside its range or no such part, or marked its
reward ``reward_failed``) counts the low end of its weighted range, with the reason: the model's low end for a
positive weight, its high end for a penalty (a penalty a policy can make fail must not be escaped that way).
``parts`` holds each term's value under its name, then the models' own parts where no term has that name; ``info``
merges the models' (e.g. ``travel_eval``, ``judge``), names the terms that failed in ``failed_terms`` (raised, out
of range, or marked ``reward_failed`` by their model: a judge that gave no verdict), and is ``reward_failed`` only
when every term failed.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlfactory_reward_models.base import Reward, RewardInput, RewardModel, RewardModelBase


@dataclass(frozen=True)
class RewardTerm:
    """``weight`` times ``model``'s reward, or times its part ``part``."""

    name: str
    model: RewardModel
    weight: float = 1.0
    part: str | None = None

    @property
    def bounds(self) -> tuple[float, float]:
        low, high = self.model.reward_range
        return min(self.weight * low, self.weight * high), max(self.weight * low, self.weight * high)

    @property
    def worst(self) -> float:
        """The unweighted value a failed term counts: the one that makes the weighted term lowest."""
        low, high = self.model.reward_range
        return low if self.weight >= 0 else high

    def value(self, reward: Reward | BaseException) -> tuple[float, str | None]:
        """This term's unweighted value in ``reward`` (its model's result), and why it failed, if it did."""
        low, high = self.model.reward_range
        if isinstance(reward, BaseException):
            return self.worst, f"raised {type(reward).__name__}: {reward}"
        value = reward.value if self.part is None else reward.parts.get(self.part)
        if value is None:
            return self.worst, f"the reward has no part {self.part!r}"
        if not isinstance(value, (int, float)) or not math.isfinite(value) or not low <= value <= high:
            return self.worst, f"gave {value!r:.40}, outside [{low:g}, {high:g}]"
        if reward.info.get("reward_failed"):
            return self.worst, None  # the model's own reason is added with the others
        return float(value), None


class WeightedReward(RewardModelBase):
    """The weighted sum of ``terms`` (see the module docstring)."""

    def __init__(self, terms: Sequence[RewardTerm]):
        if not terms:
            raise ValueError("a weighted reward needs at least one term")
        self.terms = list(terms)
        self.reward_range = (math.fsum(t.bounds[0] for t in self.terms), math.fsum(t.bounds[1] for t in self.terms))
        self._models = list({id(t.model): t.model for t in self.terms}.values())

    @property
    def models(self) -> list[RewardModel]:
        """The distinct models the terms read, each scored once per episode."""
        return list(self._models)

    async def score(self, item: RewardInput) -> Reward:
        return (await self.score_batch([item]))[0]

    async def score_batch(self, items: Sequence[RewardInput]) -> list[Reward]:
        results = await asyncio.gather(*(model.score_batch(items) for model in self._models), return_exceptions=True)
        by_model: dict[int, Sequence[Reward | BaseException]] = {}
        for model, result in zip(self._models, results):
            by_model[id(model)] = [result] * len(items) if isinstance(result, BaseException) else result
        return [self._combine({key: rewards[i] for key, rewards in by_model.items()}) for i in range(len(items))]

    def _combine(self, rewards: Mapping[int, Reward | BaseException]) -> Reward:
        weighted, parts, reasons, failed = [], {}, [], []
        for term in self.terms:
            reward = rewards[id(term.model)]
            value, failure = term.value(reward)
            weighted.append(term.weight * value)
            parts[term.name] = value
            if failure is not None:
                reasons.append(f"{term.name}: {failure}")
            if failure is not None or (isinstance(reward, Reward) and reward.info.get("reward_failed")):
                failed.append(term.name)
        info: dict[str, Any] = {}
        for term in self.terms:
            reward = rewards[id(term.model)]
            if isinstance(reward, Reward):
                for key, part in reward.parts.items():
                    parts.setdefault(key, part)
                for key, value in reward.info.items():
                    info.setdefault(key, value)
                if reward.reason and not any(r.startswith(f"{term.name}:") for r in reasons):
                    reasons.append(f"{term.name}: {reward.reason}")
        info.pop("reward_failed", None)
        if failed:
            info["failed_terms"] = failed
        if len(failed) == len(self.terms):
            info["reward_failed"] = True
        low, high = self.reward_range
        return Reward(min(max(math.fsum(weighted), low), high), parts, "; ".join(dict.fromkeys(reasons)) or None, info)

    def __repr__(self) -> str:
        return "WeightedReward(" + ", ".join(f"{t.name}={t.weight:g}" for t in self.terms) + ")"
