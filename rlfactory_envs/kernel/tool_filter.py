"""Which of the servers' tools an env's model sees and may call: ``allowed`` (``None``: all) less ``denied`` and
less ``hidden`` (the tools the env calls itself).

A call to a tool the filter hides never reaches a server: it is answered as an unknown tool's call is, listing only
the tools the model sees, so the filter cannot be probed for what it hides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.toolbox import Toolbox, ToolSpec, shown_name
from rlfactory_envs.kernel.tool_call import ToolCall, ToolResult


class ToolFilter:
    """``allowed``, ``denied`` and ``hidden`` name tools; each is checked against the servers' catalog on first
    use."""

    def __init__(self, allowed: Iterable[str] | None = None, denied: Iterable[str] = (), hidden: Iterable[str] = ()):
        self.allowed = None if allowed is None else frozenset(allowed)
        self.denied = frozenset(denied)
        self.hidden = frozenset(hidden)
        self.active = self.allowed is not None or bool(self.denied | self.hidden)
        self._checked = False

    def visible(self, name: str) -> bool:
        return (self.allowed is None or name in self.allowed) and name not in self.denied and name not in self.hidden

    def specs(self, catalog: list[ToolSpec]) -> list[ToolSpec]:
        """The tools of ``catalog`` the model sees; ``ConfigError`` when a filter names a tool none offers."""
        if not self.active:
            return catalog
        if not self._checked:
            self._check({spec.name for spec in catalog})
            self._checked = True
        return [spec for spec in catalog if self.visible(spec.name)]

    def _check(self, offered: set[str]) -> None:
        """``ConfigError`` naming the tools of a setting (or of the env's own) that no server offers."""
        for names, what in ((self.allowed or (), "tools_allowed names"), (self.denied, "tools_denied names"),
                            (self.hidden, "the env calls")):
            unknown = sorted(set(names) - offered)
            if unknown:
                raise ConfigError(f"{what} tools no server offers: {', '.join(unknown)}; the servers offer "
                                  f"{', '.join(sorted(offered)) or 'no tools'}")

    async def call(self, toolbox: Toolbox, calls: Sequence[ToolCall]) -> list[ToolResult]:
        """The calls' results, in order; calls to hidden tools answered here."""
        if not self.active:
            return await toolbox.acall_many(calls)
        runs = self._runs(toolbox, calls)
        return self._merged(toolbox, calls, runs, await toolbox.acall_many(self._ran(calls, runs)))

    def start(self, toolbox: Toolbox, calls: Sequence[ToolCall], deliver: Callable[[list[ToolResult]], None]) -> None:
        """``call`` on the toolbox's loop, without waiting: ``deliver`` gets the results (``Toolbox.start_calls``)."""
        if not self.active:
            toolbox.start_calls(calls, deliver)
            return
        runs = self._runs(toolbox, calls)
        toolbox.start_calls(self._ran(calls, runs),
                            lambda results: deliver(self._merged(toolbox, calls, runs, results)))

    def _runs(self, toolbox: Toolbox, calls: Sequence[ToolCall]) -> list[bool]:
        """Which calls reach a server: a name no server offers is answered here too (the toolbox's answer would
        list every tool)."""
        return [toolbox.spec(call.name) is not None and self.visible(call.name) for call in calls]

    @staticmethod
    def _ran(calls: Sequence[ToolCall], runs: list[bool]) -> list[ToolCall]:
        return [call for call, run in zip(calls, runs) if run]

    def _merged(self, toolbox: Toolbox, calls: Sequence[ToolCall], runs: list[bool],
                results: list[ToolResult]) -> list[ToolResult]:
        ran = iter(results)
        return [next(ran) if run else self._unknown(toolbox, call) for call, run in zip(calls, runs)]

    def _unknown(self, toolbox: Toolbox, call: ToolCall) -> ToolResult:
        known = ", ".join(spec.name for spec in self.specs(toolbox.specs)) or "none"
        return ToolResult(call.name, f"Error: unknown tool {shown_name(call.name)!r}. Available tools: {known}.",
                          is_error=True, call_id=call.call_id)
