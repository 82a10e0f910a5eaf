"""The toolbox: every configured MCP server behind one catalog of tools, usable from any thread or loop.

Sessions live on the toolbox's own loop thread (see ``loop_thread``). A caller hands over a whole list of calls
in one hop (``acall_many``/``call_many``), and the calls of all coroutines of one caller loop made in the same
loop iteration share that hop (see ``handoff``); on the toolbox loop the calls run concurrently, and calls to a
tool with a batched form are merged into one MCP request per server. Results align one-to-one with the calls, and
each caller gets its own as soon as they are ready, whatever the other callers of its hop still wait for.

Runtimes with equal configs share one toolbox (``rlfactory_envs.kernel.runtime.Parts``), so a batch of envs shares
sessions and merging.

``Toolbox.stats()`` tells what the calls came to, per server and per tool (calls, errors, timeouts, retries,
reconnects; see ``stats``), over the toolbox's whole life, restarts included.

A server whose entry has several ``urls`` is reached through a ``ReplicatedClient`` (see ``replicas``): calls are
spread across its replicas, a dead replica is taken out until it answers again, and calls with the same
``ToolCall.affinity`` (an episode's) stay on one replica.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.config import McpConfig, ReplicatedHttpServerEntry, load_mcp_config
from rlfactory_envs.kernel.mcp.handoff import CoalescingHandoff
from rlfactory_envs.kernel.mcp.loop_thread import LoopThread
from rlfactory_envs.kernel.mcp.replicas import ReplicatedClient
from rlfactory_envs.kernel.mcp.server_client import ServerClient, set_if_pending
from rlfactory_envs.kernel.mcp.stats import ToolboxStats
from rlfactory_envs.kernel.tool_call import ToolCall, ToolResult
from rlfactory_tool_servers import wire

T = TypeVar("T")


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: name, description and the JSON schema of its arguments; ``episode_state``: the
    server keeps state per episode for it (its ``_meta`` says ``wire.EPISODE_STATE``); ``annotations``: what its
    server says it does to the world (MCP's tool annotations by their wire names: ``readOnlyHint``,
    ``destructiveHint``, ``idempotentHint``, ``openWorldHint``; only those it gave)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    server: str
    episode_state: bool = False
    annotations: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI function-tool form that chat templates (Qwen3's included) render."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.input_schema}}


class Toolbox:
    """Connects to the servers of an ``McpConfig`` on first use and routes tool calls to them.

    ``with Toolbox(config) as toolbox:`` connects on entry and closes on exit."""

    def __init__(self, config: McpConfig | Mapping[str, Any] | str):
        self.config = load_mcp_config(config)
        self._thread: LoopThread | None = None
        self._handoff: CoalescingHandoff[Sequence[ToolCall], list[ToolResult]] | None = None
        self._clients: dict[str, ServerClient | ReplicatedClient] = {}
        self._route: dict[str, ServerClient | ReplicatedClient] = {}
        self._specs: list[ToolSpec] = []
        self._by_name: dict[str, ToolSpec] = {}
        self._stats = ToolboxStats()
        for name in self.config.servers:  # listed with zero counts before the first call
            self._stats.server(name)
        self._start_lock = threading.Lock()
        self._started = False

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> Toolbox:
        """Connect to every server and read the tool lists (blocking; idempotent, thread-safe)."""
        with self._start_lock:
            if self._started:
                return self
            thread = LoopThread(name="rlf-toolbox")
            try:
                thread.run(self._connect_all())
            except BaseException:
                thread.run(self._close_all())
                thread.stop()
                raise
            self._thread = thread
            self._handoff = CoalescingHandoff(thread, self.start_calls)
            self._started = True
        return self

    async def astart(self) -> Toolbox:
        """``start`` without blocking the caller's loop."""
        if not self._started:
            await asyncio.to_thread(self.start)
        return self

    async def _connect_all(self) -> None:
        self._clients = {name: ReplicatedClient(name, entry, self._stats.server(name))
                         if isinstance(entry, ReplicatedHttpServerEntry) else
                         ServerClient(name, entry, self._stats.server(name))
                         for name, entry in self.config.servers.items()}
        listed = await asyncio.gather(*(c.start() for c in self._clients.values()))
        self._route, self._specs = {}, []
        for client, tools in zip(self._clients.values(), listed):
            for tool in tools:
                if tool.name in self._route:
                    raise ConfigError(f"tool {tool.name!r} is offered by both server {self._route[tool.name].name!r} "
                                     f"and server {client.name!r}; rename one")
                self._route[tool.name] = client
                hints = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
                self._specs.append(ToolSpec(tool.name, tool.description or "", dict(tool.input_schema), client.name,
                                            (tool.meta or {}).get(wire.EPISODE_STATE) is True, hints))
        self._by_name = {spec.name: spec for spec in self._specs}

    async def _close_all(self) -> None:
        await asyncio.gather(*(c.close() for c in self._clients.values()), return_exceptions=True)
        self._clients, self._route = {}, {}

    def close(self) -> None:
        """Close every session (stdio servers exit) and stop the loop thread. Safe to call twice."""
        with self._start_lock:
            thread, self._thread, self._handoff, self._started = self._thread, None, None, False
        if thread is not None:
            try:
                if not thread.is_current():
                    thread.run(self._close_all(), timeout=15)
            finally:
                thread.stop()

    @property
    def started(self) -> bool:
        """Whether its servers are connected (``start``) and not closed since."""
        return self._started

    def __enter__(self) -> Toolbox:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the catalog -----------------------------------------------------------------------------------------

    @property
    def specs(self) -> list[ToolSpec]:
        """The tools the model may call (batched forms hidden). Starts the toolbox if needed."""
        self.start()
        return list(self._specs)

    def spec(self, name: str) -> ToolSpec | None:
        """The tool named ``name``, or ``None`` when no server offers it. Starts the toolbox if needed."""
        if not self._started:
            self.start()
        return self._by_name.get(name)

    def openai_schemas(self) -> list[dict[str, Any]]:
        return [spec.openai_schema() for spec in self.specs]

    # -- counters --------------------------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """What the calls came to so far, JSON-ready: ``{"servers": {server: {"calls": n, "errors": n,
        "timeouts": n, "unavailable": n, "retries": n, "reconnects": n, "tools": {tool: {same counters}}}},
        "totals": {same counters}, "unknown_tool_calls": n}`` (see ``stats`` for what each counts); a replicated
        server also has ``"replicas": {url: {"up": bool, "calls": n, "errors": n, "unavailable": n,
        "marked_down": n, "back_up": n}}``. Cheap, from any thread; starts nothing."""
        return self._stats.snapshot()

    # -- calling ---------------------------------------------------------------------------------------------

    async def acall_many(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        """Run ``calls`` concurrently on the toolbox loop; one result per call, in order. Never raises for a call."""
        if not calls:
            return []
        if not self._started:
            await self.astart()
        thread, handoff = self._thread, self._handoff
        if thread is None or handoff is None:
            return [self._closed_result(call) for call in calls]
        if thread.is_current():
            return await self._dispatch(calls)
        try:
            return await handoff.submit(calls)
        except RuntimeError:  # closed under our feet
            return [self._closed_result(call) for call in calls]

    def call_many(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        """Blocking ``acall_many`` for code that runs no event loop."""
        if not calls:
            return []
        self.start()
        thread = self._thread
        if thread is None:
            return [self._closed_result(call) for call in calls]
        return thread.run(self._dispatch(calls))

    def run_blocking(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the toolbox loop and wait for it: how sync ``step`` reuses the async code path."""
        self.start()
        assert self._thread is not None
        return self._thread.run(coro)

    async def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the toolbox loop (one thread hop; none when already there)."""
        await self.astart()
        assert self._thread is not None
        return await self._thread.arun(coro)

    def start_calls(self, calls: Sequence[ToolCall], deliver: Callable[[list[ToolResult]], None]) -> None:
        """On the toolbox loop: start ``calls`` (no task of their own; calls to a tool with a batched form join the
        merged request of this loop iteration); ``deliver`` gets their results, in order, once all are ready."""
        if len(calls) <= 1:
            if calls:
                self._start(calls[0], lambda result: deliver([result]))
            else:
                deliver([])
            return
        results = _Results(len(calls), deliver)
        for position, call in enumerate(calls):
            self._start(call, functools.partial(results.put, position))

    def _start(self, call: ToolCall, deliver: Callable[[ToolResult], None]) -> None:
        client = self._route.get(call.name)
        if client is not None:
            client.send(call, deliver)
            return
        self._stats.unknown_tool_calls += 1
        known = ", ".join(sorted(self._route)) or "none"
        deliver(ToolResult(call.name, f"Error: unknown tool {shown_name(call.name)!r}. Available tools: {known}.",
                           is_error=True, call_id=call.call_id))

    async def _dispatch(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        """``start_calls``, awaited."""
        future: asyncio.Future[list[ToolResult]] = asyncio.get_running_loop().create_future()
        self.start_calls(calls, functools.partial(set_if_pending, future))
        return await future

    @staticmethod
    def _closed_result(call: ToolCall) -> ToolResult:
        return ToolResult(call.name, "Error: the toolbox is closed.", is_error=True, call_id=call.call_id,
                          failure="closed")


class _Results:
    """The results of several calls, handed over together once the last one is in."""

    def __init__(self, count: int, deliver: Callable[[list[ToolResult]], None]):
        self._results: list[Any] = [None] * count
        self._waiting = count
        self._deliver = deliver

    def put(self, position: int, result: ToolResult) -> None:
        self._results[position] = result
        self._waiting -= 1
        if not self._waiting:
            self._deliver(self._results)


MAX_SHOWN_NAME_CHARS = 80


def shown_name(name: str) -> str:
    """A tool name as an error quotes it: a model may send any name, a hundred thousand characters long."""
    return name if len(name) <= MAX_SHOWN_NAME_CHARS else name[:MAX_SHOWN_NAME_CHARS] + "..."
