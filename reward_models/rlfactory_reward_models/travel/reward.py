"""The travel reward: the official verdict on the submitted plan, as a scalar.

``reward="final_pass"`` (default): 1 when the plan passes every commonsense and every hard constraint, else 0,
the benchmark's final pass. ``"pass_rate"``: the share of the constraints that apply (the eight commonsense ones
and the hard ones the query sets) that the plan passes, a denser signal. A mapping of weights over the parts
(``delivered``, ``commonsense_pass``, ``hard_pass``, ``final_pass``, ``pass_rate``) mixes them, normalised by the
weights' sum. The whole verdict goes to ``info["travel_eval"]``; the reason names the first failed constraint.
``strict`` (default ``True``) reads a plan strictly: exact names (``lookup.PlanLookup``), legs in the benchmark's
modes on each day's route and date (``legs``), exactly the trip's days; ``False`` is the official reading, which
pays name fragments and made-up legs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlfactory_reward_models.errors import ConfigError
from rlfactory_reward_models.base import Reward, RewardInput, RewardModelBase
from rlfactory_reward_models.travel.evaluate import applicable_hard, evaluate_plan
from rlfactory_reward_models.travel.lookup import PlanLookup
from rlfactory_reward_models.travel.plan_text import parse_plan
from rlfactory_reward_models.travel.trip import TripQuery
from rlfactory_tool_servers.travel.store import TravelSandbox

PARTS = ("delivered", "commonsense_pass", "hard_pass", "final_pass", "pass_rate")


def pass_rate(query: TripQuery, verdict: Mapping[str, Any]) -> float:
    """Passed constraints over applicable ones (eight commonsense, and the hard ones the query sets)."""
    applicable = applicable_hard(query)
    passed = sum(value is True for value in verdict["commonsense"].values())
    passed += sum(verdict["hard"].get(name) is True for name in applicable)
    return passed / (len(verdict["commonsense"]) + len(applicable))


def reward_weights(reward: str | Mapping[str, float]) -> dict[str, float]:
    """The weights a ``reward=`` setting stands for; ``ConfigError`` for an unknown part or no positive weight."""
    weights = {reward: 1.0} if isinstance(reward, str) else dict(reward)
    unknown = [name for name in weights if name not in PARTS]
    if unknown:
        raise ConfigError(f"travel reward: unknown part {unknown[0]!r}; use one of {', '.join(PARTS)} or a mapping "
                          "of weights over them")
    if any(not isinstance(w, (int, float)) or w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise ConfigError(f"travel reward: weights must be non-negative numbers with a positive sum, got {weights}")
    return {name: float(w) for name, w in weights.items()}


class TravelPlanReward(RewardModelBase):
    """Scores a submitted plan against its query over ``sandbox`` (see the module docstring)."""

    reward_range = (0.0, 1.0)

    def __init__(self, sandbox: TravelSandbox, *, reward: str | Mapping[str, float] = "final_pass",
                 strict: bool = True) -> None:
        self.sandbox = sandbox
        self.weights = reward_weights(reward)
        self.strict = strict

    def verdict(self, query: TripQuery, answer: str | None) -> dict[str, Any]:
        plan, why = parse_plan(answer)
        return evaluate_plan(query, plan, PlanLookup(self.sandbox, strict=self.strict),
                             not_delivered=why or "no plan was delivered")

    async def score(self, item: RewardInput) -> Reward:
        query: TripQuery = item.task
        verdict = self.verdict(query, item.answer)
        parts = {name: float(bool(verdict[name])) for name in PARTS[:4]}
        parts["pass_rate"] = pass_rate(query, verdict) if verdict["delivered"] else 0.0
        value = sum(parts[name] * w for name, w in self.weights.items()) / sum(self.weights.values())
        reason = None
        if not verdict["final_pass"]:
            name, why = next(iter(verdict["messages"].items()), ("plan", "a constraint failed"))
            reason = f"{name}: {why}"
        return Reward(value, parts, reason, info={"travel_eval": verdict})
