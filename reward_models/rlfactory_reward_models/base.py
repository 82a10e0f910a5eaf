"""The reward protocol: what every reward model keeps (async, batchable, a declared range, named parts) and what it
is given. The lowest layer of the rewards: the env's kernel and every reward model depend on it, never the other
way round."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


class ToolOutcome(Protocol):
    """What ``RewardInput.call_tool`` answers: the tool's text and whether it is an error (the kernel's
    ``ToolResult``)."""

    text: str
    is_error: bool



@dataclass(frozen=True)
class Reward:
    """A scalar reward and the named parts it was made from (for ``info`` and logging).

    ``value`` always lies in the model's ``reward_range``. ``parts`` holds diagnostics such as
    ``{"exact_match": 1.0, "f1": 1.0, "substring_match": 1.0, "format": 1.0}``; ``reason`` says in words why
    the reward is what it is when that is not obvious (an execution error, a missing answer).
    """

    value: float
    parts: Mapping[str, float] = field(default_factory=dict)
    reason: str | None = None
    info: Mapping[str, Any] = field(default_factory=dict)
    """Structured detail for the episode's last ``info`` (e.g. ``{"travel_eval": {...}}``), JSON-ready; its keys
    never replace the env's own."""

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "parts": dict(self.parts), "reason": self.reason, "info": dict(self.info)}


@dataclass(frozen=True)
class RewardInput:
    """What a reward model may look at for one finished episode.

    ``task`` is the family's task object (e.g. ``SearchTask``); ``answer`` the final answer the parser extracted
    from the model's last response (``None`` when the episode ended without one); ``response`` that last raw
    response, for format checks; ``messages`` the whole episode as chat messages and ``tool_results`` every tool
    call the env ran (``{"name", "arguments", "text", "is_error", "server"}``), for rewards that verify the
    answer against the tools' own output; ``call_tool`` asks the servers themselves. Reward models score the
    answer, never text from the prompt.
    """

    task: Any
    answer: str | None
    response: str = ""
    messages: Sequence[Mapping[str, Any]] = ()
    tool_results: Sequence[Mapping[str, Any]] = ()
    call_tool: Callable[[str, Mapping[str, Any]], Awaitable[ToolOutcome]] | None = None
    """Call a tool of the episode's servers as the env does (hidden tools included, the episode's session
    bound): for a reward that a server computes from the state it holds (a phone's final state). ``None``
    outside an env."""


@runtime_checkable
class RewardModel(Protocol):
    """Scores finished episodes. Implementations must never raise on odd answers: they score them 0."""

    reward_range: tuple[float, float]

    async def score(self, item: RewardInput) -> Reward: ...

    async def score_batch(self, items: Sequence[RewardInput]) -> list[Reward]: ...


class RewardModelBase:
    """Default ``score_batch`` for models whose single ``score`` is already cheap or concurrent."""

    reward_range: tuple[float, float] = (0.0, 1.0)

    async def score(self, item: RewardInput) -> Reward:  # pragma: no cover - abstract
        raise NotImplementedError

    async def score_batch(self, items: Sequence[RewardInput]) -> list[Reward]:
        return list(await asyncio.gather(*(self.score(item) for item in items)))
