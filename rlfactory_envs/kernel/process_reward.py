"""Process (per-turn) rewards: a score for each turn, paid with that turn's step. Off by default.

``process_reward=`` takes a built-in name, ``"package.module:function"``, a function, or a mapping of those to
weights (``{"format": 0.1, "tool_errors": 0.2}``). The built-ins score one turn (``Turn``):

- ``format``: 1 when the response was readable (tool calls or a non-blank answer, with no parse error), else 0;
- ``tool_success``: the share of the turn's tool calls that succeeded (0 for a turn without calls);
- ``tool_errors``: minus the share of the turn's tool calls that failed, a penalty in [-1, 0].

A function takes the ``Turn`` and returns a finite number in [-1, 1]; it runs inline on every step, so it must be
cheap and synchronous. One that raises or returns anything else scores the low end of its weighted range for that
turn (its range's low end, or its high end under a negative weight: a penalty a policy can make fail is not escaped
that way), with the reason in ``info["process_reward_reason"]``.

A turn pays ``sum(weight * score) / max_turns``: the process rewards of an episode add up to at most
``sum(weight * high)`` however many turns it takes, and ``info["process_reward"]`` (paid) and
``info["process_reward_parts"]`` (each score) show them. The risk: a per-turn reward pays for turns. A policy
learns to spend every turn on well-formed calls (``format``, ``tool_success``) rather than answer, or to avoid
tools altogether to dodge a penalty (``tool_errors``): keep the weights well below the outcome reward's, and check
with ``rlf audit`` and the episode lengths that the policy still answers.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rlfactory_tool_servers.functions.callable_ref import resolve_callable
from rlfactory_envs.kernel.errors import ConfigError


@dataclass(frozen=True)
class Turn:
    """What a process reward sees of one turn."""

    index: int
    """1 for the first response."""
    response: str
    tool_calls: int
    tool_errors: int
    """Calls of this turn that came back as errors (unknown tool, bad arguments, timeouts, tool failures)."""
    parse_errors: int
    answered: bool
    """The response gave a final answer that is not blank (``<answer></answer>`` answers nothing)."""

    @property
    def readable(self) -> bool:
        return (self.tool_calls > 0 or self.answered) and self.parse_errors == 0


TurnScore = Callable[[Turn], float]


def _format(turn: Turn) -> float:
    return 1.0 if turn.readable else 0.0


def _tool_success(turn: Turn) -> float:
    return (turn.tool_calls - turn.tool_errors) / turn.tool_calls if turn.tool_calls else 0.0


def _tool_errors(turn: Turn) -> float:
    return -turn.tool_errors / turn.tool_calls if turn.tool_calls else 0.0


BUILTINS: dict[str, tuple[TurnScore, tuple[float, float]]] = {
    "format": (_format, (0.0, 1.0)),
    "tool_success": (_tool_success, (0.0, 1.0)),
    "tool_errors": (_tool_errors, (-1.0, 0.0)),
}
FUNCTION_RANGE = (-1.0, 1.0)

ProcessRewardSetting = str | TurnScore | Mapping[str, float] | None


@dataclass(frozen=True)
class _Term:
    name: str
    fn: TurnScore
    bounds: tuple[float, float]
    weight: float

    @property
    def worst(self) -> float:
        """What a failed score counts: the end of ``bounds`` that makes the weighted term lowest."""
        return self.bounds[0] if self.weight >= 0 else self.bounds[1]


class ProcessReward:
    """The per-turn scores a ``process_reward=`` setting asks for, paid over ``max_turns`` turns."""

    def __init__(self, setting: str | TurnScore | Mapping[str | TurnScore, float], max_turns: int):
        weights = dict(setting) if isinstance(setting, Mapping) else {setting: 1.0}
        if not weights:
            raise ConfigError("process_reward names no score; give a name (format, tool_success, tool_errors), "
                              "'package.module:function' or a mapping of them to weights")
        self.terms = [_term(key, weight) for key, weight in weights.items()]
        self.max_turns = max_turns
        low = sum(min(t.weight * t.bounds[0], t.weight * t.bounds[1]) for t in self.terms)
        high = sum(max(t.weight * t.bounds[0], t.weight * t.bounds[1]) for t in self.terms)
        self.episode_range = (low, high)
        """The bounds of an episode's process rewards added up."""

    def score(self, turn: Turn) -> tuple[float, dict[str, float], str | None]:
        """``(paid, scores by name, reason)`` for ``turn``: ``paid`` is what the step's reward gets."""
        scores: dict[str, float] = {}
        reasons = []
        for term in self.terms:
            try:
                value = term.fn(turn)
            except Exception as exc:  # noqa: BLE001 - a user's scorer must not take a batch down
                value, why = term.worst, f"raised {type(exc).__name__}: {exc}"
            else:
                why = _problem(value, term.bounds)
            if why is not None:
                reasons.append(f"process reward {term.name!r} {why}")
                value = term.worst
            scores[term.name] = float(value)
        paid = sum(term.weight * scores[term.name] for term in self.terms) / self.max_turns
        return paid, scores, "; ".join(reasons) or None


def make_process_reward(setting: ProcessRewardSetting, max_turns: int) -> ProcessReward | None:
    """The ``ProcessReward`` of a ``process_reward=`` setting, ``None`` when it is off; ``ConfigError`` names an
    unknown score or a bad weight."""
    if setting is None or setting == "" or (isinstance(setting, Mapping) and not setting):
        return None
    return ProcessReward(setting, max_turns)


def _term(key: str | TurnScore, weight: Any) -> _Term:
    if isinstance(weight, bool) or not isinstance(weight, numbers.Real) or not math.isfinite(weight):
        raise ConfigError(f"process_reward: the weight of {key!r} must be a finite number, got {weight!r}")
    if callable(key):
        return _Term(getattr(key, "__qualname__", repr(key)), key, FUNCTION_RANGE, float(weight))
    if not isinstance(key, str):
        raise ConfigError(f"process_reward: {key!r} is neither a name nor a function")
    if key in BUILTINS:
        fn, bounds = BUILTINS[key]
        return _Term(key, fn, bounds, float(weight))
    if ":" not in key:
        raise ConfigError(f"process_reward: unknown score {key!r}; use one of {', '.join(BUILTINS)} or "
                          "'package.module:function'")
    try:
        fn = resolve_callable(key)
    except ValueError as exc:
        raise ConfigError(f"process_reward: {exc}") from None
    return _Term(key, fn, FUNCTION_RANGE, float(weight))


def _problem(value: Any, bounds: tuple[float, float]) -> str | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        return f"returned {value!r:.60} (not a finite number)"
    if not bounds[0] <= value <= bounds[1]:
        return f"returned {value:g}, outside [{bounds[0]:g}, {bounds[1]:g}]"
    return None
