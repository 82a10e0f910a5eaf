"""The ``reward=`` and ``judge=`` settings every family takes, turned into one reward model.

``reward`` is one of:

- ``None``: the family's own reward, as it always was;
- a name: one of the family's named rewards (``exact_match``, ``f1`` for search; ``execution_match`` for NL2SQL;
  ``final_pass``, ``pass_rate``, ... for travel; ``exact_match``, ``f1``, ``contains`` for ``rlf/MCP-v0``),
  ``format`` (1 when the episode gave a non-blank final answer: easy to farm, so only as a small weight beside an
  outcome reward), ``judge`` (a model judge, configured by ``judge=``), or ``"package.module:function"`` (a
  function ``fn(answer, ground_truth, **context)``, see ``function_reward``);
- a function (likewise);
- a mapping of those to weights: ``{"exact_match": 0.7, "judge": 0.3, "format": 0.1}``, their weighted sum
  (``composite.WeightedReward``), every term in ``info["reward_parts"]``.

``judge`` is the judge's configuration (``judge.JudgeConfig``: ``base_url``, ``model``, ...); it is required when
``reward`` names ``judge`` and refused when it does not, so that a judge set up by mistake is never silently
unused. Every problem is a one-line ``ConfigError`` at make.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_reward_models.base import Reward, RewardInput, RewardModel, RewardModelBase
from rlfactory_reward_models.composite import RewardTerm, WeightedReward
from rlfactory_reward_models.function_reward import FunctionReward, resolve_reward

RewardSetting = str | Callable[..., Any] | Mapping[str, float] | None
JudgeSetting = Mapping[str, Any] | None

GLOBAL_NAMES = ("format", "judge")


class AnswerFormatReward(RewardModelBase):
    """1.0 when the episode ended with a non-blank final answer, else 0.0."""

    async def score(self, item: RewardInput) -> Reward:
        given = item.answer is not None and bool(str(item.answer).strip())
        return Reward(1.0 if given else 0.0, {}, None if given else "no final answer")


@dataclass(frozen=True)
class FamilyRewards:
    """What a family offers the ``reward=`` setting.

    ``default``: its own reward (``reward=None``). ``named``: its named rewards, each a model or one part of a
    model's reward (``(model, "f1")``); names that share a model are scored once. ``judge_template`` and
    ``judge_fields``: how a judge reads its tasks (``judge.TEMPLATES``; the template's fields from a
    ``RewardInput``). ``function_range`` and ``function_timeout_s``: for a user's function."""

    default: RewardModel
    named: Mapping[str, tuple[RewardModel, str | None]]
    judge_template: str = "qa"
    judge_fields: Callable[[RewardInput], Mapping[str, str]] | None = None
    function_range: tuple[float, float] = (0.0, 1.0)
    function_timeout_s: float | None = 60.0
    functions: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """Built-in functions a name may stand for (``rlf/MCP-v0``'s ``exact_match``, ...), run as a user's function."""


def build_reward(reward: RewardSetting, judge: JudgeSetting, family: FamilyRewards) -> RewardModel:
    """The reward model ``reward`` and ``judge`` ask for (see the module docstring); ``ConfigError`` otherwise."""
    weights = _weights(reward)
    if weights is None:
        if judge is not None:
            raise ConfigError("judge= is set but the reward does not use it: name it in reward=, e.g. "
                              f"reward={{{_first_name(family)!r}: 0.7, 'judge': 0.3}}")
        return family.default
    if judge is not None and "judge" not in weights:
        raise ConfigError(f"judge= is set but reward={reward!r} does not name 'judge'; add it, e.g. "
                          f"reward={{{next(iter(weights))!r}: 0.7, 'judge': 0.3}}")
    terms = [_term(key, weight, judge, family) for key, weight in weights.items()]
    if len(terms) == 1 and terms[0].part is None and terms[0].weight == 1.0:
        return terms[0].model
    return WeightedReward(terms)


def reward_models_in(model: RewardModel) -> list[RewardModel]:
    """The models a reward is made of: a weighted reward's distinct models, else the model itself."""
    return model.models if isinstance(model, WeightedReward) else [model]


def _weights(reward: RewardSetting) -> dict[Any, float] | None:
    if reward is None:
        return None
    if isinstance(reward, Mapping):
        if not reward:
            raise ConfigError("reward= is an empty mapping; give names and weights, e.g. {'exact_match': 1.0}")
        for key, weight in reward.items():
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
                raise ConfigError(f"reward=: the weight of {key!r} must be a finite number, got {weight!r}")
        return {key: float(weight) for key, weight in reward.items()}
    return {reward: 1.0}


def _term(key: Any, weight: float, judge: JudgeSetting, family: FamilyRewards) -> RewardTerm:
    if isinstance(key, str) and key in family.named:
        model, part = family.named[key]
        return RewardTerm(key, model, weight, part)
    if key == "format":
        return RewardTerm(key, AnswerFormatReward(), weight)
    if key == "judge":
        if judge is None:
            raise ConfigError("reward names 'judge' but judge= is not set: give judge={'base_url': "
                              "'http://127.0.0.1:8001/v1', 'model': '...'} (any OpenAI-compatible endpoint)")
        from rlfactory_reward_models.judge import JudgeReward  # the OpenAI client only for a judge

        # one judge per configuration in the process: every env of a batch shares its cache and in-flight bound
        return RewardTerm(key, JudgeReward.shared(judge, default_template=family.judge_template,
                                                  fields=family.judge_fields), weight)
    if not callable(key) and not isinstance(key, str):
        raise ConfigError(f"reward=: {key!r} is neither a name nor a function")
    if isinstance(key, str) and ":" not in key and key not in family.functions:
        known = [*family.named, *family.functions, *GLOBAL_NAMES]
        raise ConfigError(f"unknown reward {key!r}: use one of {', '.join(dict.fromkeys(known))}, "
                          "'package.module:function' or a function")
    name, fn = resolve_reward(key, family.functions)
    model = FunctionReward(fn, name, family.function_range, family.function_timeout_s)
    return RewardTerm(name, model, weight)


def _first_name(family: FamilyRewards) -> str:
    return next(iter(family.named), "format")
