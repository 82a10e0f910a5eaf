"""A user's reward function as a reward model: ``fn(answer, ground_truth, **context) -> float | dict``.

``answer`` is the final answer's text (``None`` when the episode ended without one), ``ground_truth`` the task's
reference (its ``ground_truth``: a row's for ``rlf/MCP-v0``, ``{"target": [answers]}`` for search, the gold query
for SQL, the instance for Android; ``None`` for a task without one, such as a travel query). ``context`` holds the
row's other columns by name, and ``task`` (the row), ``messages`` (the whole episode as chat messages),
``tool_results`` (every call the env ran: name, arguments, text, is_error, server) and ``response`` (the last raw
response); a function that does not take ``**context`` gets only the names it declares. It may be sync (run in a
worker thread, so it never stalls the batch's tool calls) or async.

It returns a number (``True``/``False`` count as 1/0), or a dict with a numeric ``"score"`` and any other named
numeric parts (they reach ``info["reward_parts"]``). A value outside ``reward_range``, a non-number, an exception
or a timeout scores the range's low end with the reason in ``info["reward_reason"]`` and ``info["reward_failed"]``:
a broken reward never takes a batch down, and a rollout counts it as failed, not as a wrong answer.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

from rlfactory_reward_models.errors import ConfigError
from rlfactory_reward_models.base import Reward, RewardInput, RewardModelBase
from rlfactory_tool_servers.functions.callable_ref import resolve_callable

RewardFn = Callable[..., Any]


def resolve_reward(reward: str | RewardFn, builtins: Mapping[str, RewardFn]) -> tuple[str, RewardFn]:
    """``(name, function)`` of a ``reward`` setting: a callable, a built-in name, or ``"package.module:function"``.
    ``ConfigError`` names the problem (an unknown name, a module that does not import, a missing function)."""
    if callable(reward):
        return getattr(reward, "__qualname__", repr(reward)), reward
    if not isinstance(reward, str) or not reward.strip():
        raise ConfigError(f"reward must be a built-in name ({', '.join(builtins)}), 'package.module:function' or a "
                          f"function, got {reward!r}")
    if reward in builtins:
        return reward, builtins[reward]
    if ":" not in reward:
        raise ConfigError(f"unknown reward {reward!r}: give a built-in name ({', '.join(builtins)}) or "
                          "'package.module:function'")
    try:
        return reward, resolve_callable(reward)
    except ValueError as exc:
        raise ConfigError(f"reward {exc}; the module must be importable (an env spec's folder is on the Python "
                          "path)") from None


class FunctionReward(RewardModelBase):
    """``fn`` scored per episode, its value checked against ``reward_range``; ``timeout_s`` bounds one call
    (``None``: unbounded)."""

    def __init__(self, fn: RewardFn, name: str, reward_range: tuple[float, float] = (0.0, 1.0),
                 timeout_s: float | None = 60.0):
        low, high = (float(bound) for bound in reward_range)
        if not low < high:
            raise ConfigError(f"reward_range must be [low, high] with low < high, got {list(reward_range)}")
        self.fn, self.name, self.reward_range, self.timeout_s = fn, name, (low, high), timeout_s
        parameters = inspect.signature(fn).parameters.values()
        self._takes_all = any(p.kind is p.VAR_KEYWORD for p in parameters)
        self._names = {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))

    async def score(self, item: RewardInput) -> Reward:
        task = item.task
        context = {**getattr(task, "context", {}), "task": task.to_dict(), "messages": list(item.messages),
                   "tool_results": list(item.tool_results), "response": item.response}
        try:
            value = await asyncio.wait_for(self.call(item.answer, getattr(task, "ground_truth", None), context),
                                           self.timeout_s)
        except asyncio.TimeoutError:
            return self._failed(f"reward {self.name!r} did not return within {self.timeout_s:g} s")
        except Exception as exc:  # noqa: BLE001 - a user's reward bug scores the low end, with the reason
            return self._failed(f"reward {self.name!r} raised {type(exc).__name__}: {exc}")
        try:
            return self.as_reward(value)
        except ValueError as exc:
            return self._failed(str(exc))

    async def call(self, answer: str | None, ground_truth: Any, context: Mapping[str, Any]) -> Any:
        """The function's raw return value for one episode."""
        kwargs = dict(context) if self._takes_all else {k: v for k, v in context.items() if k in self._names}
        if self._is_async:
            return await self.fn(answer, ground_truth, **kwargs)
        return await asyncio.to_thread(self.fn, answer, ground_truth, **kwargs)

    def as_reward(self, value: Any) -> Reward:
        """``value`` (a number or a dict with ``"score"``) as a ``Reward``; ``ValueError`` says what is wrong."""
        parts: dict[str, float] = {}
        if isinstance(value, Mapping):
            if "score" not in value:
                raise ValueError(f"reward {self.name!r} returned a dict without 'score': {sorted(map(str, value))}")
            for key, part in value.items():
                if key != "score":
                    parts[str(key)] = self._number(part, f"part {key!r}")
            value = value["score"]
        score = self._number(value, "score")
        low, high = self.reward_range
        if not low <= score <= high:
            raise ValueError(f"reward {self.name!r} returned {score:g}, outside reward_range [{low:g}, {high:g}]: "
                             "declare the range it returns with reward_range=[low, high]")
        return Reward(score, parts)

    def _number(self, value: Any, what: str) -> float:
        if not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise ValueError(f"reward {self.name!r} returned a {type(value).__name__} as its {what} ({value!r:.80}); "
                             "it must return a finite number or a dict with a numeric 'score'")
        return float(value)

    def _failed(self, reason: str) -> Reward:
        """The range's low end, marked failed: a rollout counts it apart from a wrong answer, a weighted reward
        names the term in ``failed_terms``."""
        return Reward(self.reward_range[0], {}, reason, {"reward_failed": True})
