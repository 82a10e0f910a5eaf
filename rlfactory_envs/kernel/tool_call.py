"""The data that flows through one turn: parsed tool calls, their results, and the parsed action.

Thousands of each are made per batch step, so they are slotted dataclasses, not frozen ones (a frozen dataclass's
``__init__`` sets each field through ``object.__setattr__``: 2.0 us against 0.4 us a call); nothing changes one after
it is made."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class ToolCall:
    """One call the model asked for: a tool name and a JSON object of arguments.

    ``call_id`` numbers the calls of one response in order (0, 1, ...), so results can be matched back.
    ``episode`` is the id of the episode the call belongs to, set on calls to a tool that keeps state per episode:
    the toolbox sends it in the request's ``_meta`` (``rlfactory_tool_servers.wire.EPISODE``), where the server
    keeps the episode's state apart by it; the model never sees it. ``affinity`` keeps state together on a server run
    as several replicas: calls with the same affinity go to the same replica (the one that holds their state), and
    are not moved to another when it is down (they fail as ``"unavailable"``); ``None`` lets the toolbox send the
    call to any replica. A server that is not replicated ignores it. An env sets it to the episode id on calls to a
    tool that keeps state per episode.
    """

    name: str
    arguments: dict[str, Any]
    call_id: int = 0
    affinity: str | None = None
    episode: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments}


@dataclass(slots=True)
class ToolResult:
    """What one tool call produced, as the text the model will read.

    ``is_error`` is true for anything that is not a normal answer of the tool: an unknown tool, arguments the
    tool rejected, a deadline, a dead server (the last two also set ``failure``). ``latency_s`` is the wall time
    from the call to its result, ``server`` the MCP server that answered (``None`` when the call never reached one).
    """

    name: str
    text: str
    is_error: bool = False
    latency_s: float = 0.0
    server: str | None = None
    call_id: int = 0
    failure: str | None = None
    """Why the call failed when the cause was not the call itself: ``"timeout"`` (a deadline passed),
    ``"unavailable"`` (the server stayed unreachable) or ``"closed"`` (the toolbox was closed); ``None`` for an
    answer or an error the tool gave."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "text": self.text,
            "is_error": self.is_error,
            "latency_s": self.latency_s,
            "server": self.server,
        }


@dataclass(slots=True)
class ParsedAction:
    """What a parser read out of one raw model response.

    - ``tool_calls``: the well-formed calls, in the order they appear (already capped by the parser).
    - ``answer``: the final answer text when the response gives one, else ``None``.
    - ``errors``: one clear sentence per problem the model should hear about (a malformed call, a cap that
      dropped calls). Errors never raise: they are shown to the model in the next observation.
    """

    tool_calls: list[ToolCall] = field(default_factory=list)
    answer: str | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        """True when the response neither calls a tool nor answers."""
        return not self.tool_calls and self.answer is None
