"""Everything the toolbox does for one MCP server: pooled sessions, a concurrency limit, a deadline per request,
retry with backoff and reconnect after a transport failure, and merging of concurrent calls to a tool that has a
batched form into one request. What the client and our servers say to each other beyond MCP itself (the ``_meta``
keys, a batched form's structured reply) is ``rlfactory_tool_servers.wire``.

All methods run on the toolbox's own loop. ``call`` never raises: every failure becomes an error ``ToolResult``.
What happened is counted in the server's ``ServerStats`` (see ``stats``).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import random
import sys
import time
from collections.abc import Callable, Coroutine
from typing import Any, NamedTuple, TypeVar

import mcp_types
from mcp import MCPError

from rlfactory_envs.kernel.mcp.config import InProcessServerEntry, ServerEntry
from rlfactory_envs.kernel.mcp.errors import MalformedReply
from rlfactory_envs.kernel.mcp.session import McpSession, TransportError, build_inprocess_server
from rlfactory_envs.kernel.mcp.stats import CallCounters, ServerStats
from rlfactory_envs.kernel.tool_call import ToolCall, ToolResult
from rlfactory_tool_servers import wire

ELEMENT_DEADLINE_FRACTION = 0.9  # of timeout_s, for each element of a merged request

TIMEOUT = "timeout"
UNAVAILABLE = "unavailable"
T = TypeVar("T")


class Outcome(NamedTuple):
    """What one call came to: its text, whether it is an error, and why when the cause was not the tool's own
    (``TIMEOUT``: a deadline passed; ``UNAVAILABLE``: the server stayed unreachable); ``structured``: the
    reply's structured content, if any."""

    text: str
    is_error: bool
    failure: str | None = None
    structured: Any = None


def element_outcome(entry: wire.BatchEntry) -> Outcome:
    """One element of a batched reply; an element the server abandoned at the batch's deadline is a timeout."""
    return Outcome(entry["text"], entry["is_error"], TIMEOUT if entry.get("failure") == wire.DEADLINE else None)


def episodes_meta(episodes: list[str | None]) -> dict[str, Any] | None:
    """A batched request's ``_meta``: each element's episode, when any element has one."""
    return {wire.EPISODES: episodes} if any(episode is not None for episode in episodes) else None


def call_meta(call: ToolCall) -> dict[str, Any] | None:
    """A call's request ``_meta``: its episode, when it has one."""
    return {wire.EPISODE: call.episode} if call.episode is not None else None


def call_result_text(result: mcp_types.CallToolResult, structured_as_text: bool = True) -> str:
    """The text of a tool result: its text blocks joined; other blocks named, not inlined; a result with structured
    content alone shows it as JSON (unless ``structured_as_text`` is false: a batched reply is read, not shown)."""
    parts = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        else:
            parts.append(f"[{getattr(block, 'type', 'non-text')} content omitted]")
    if not parts and result.structured_content is not None and structured_as_text:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return "\n".join(parts)


Sink = Callable[[Outcome], None]
"""Who waits for a call: called once with its outcome, on the toolbox's loop."""

CLOSED = Outcome("Error: the toolbox is closed.", True, "closed")


class _Callers:
    """The callers of one merged request, by position: each is answered once."""

    def __init__(self, sinks: list[Sink]):
        self._sinks: list[Sink | None] = list(sinks)
        self.waiting = len(sinks)

    def answer(self, position: int, outcome: Outcome) -> None:
        if not 0 <= position < len(self._sinks):
            raise IndexError(f"element {position} is not in the batch")
        sink = self._sinks[position]
        if sink is not None:
            self._sinks[position] = None
            self.waiting -= 1
            sink(outcome)

    def answer_entries(self, entries: list[wire.BatchEntry | None]) -> None:
        """Answer each caller whose element of a batched reply (aligned with the callers) is in, in one loop."""
        sinks = self._sinks
        for position, entry in enumerate(entries):
            sink = sinks[position]
            if entry is not None and sink is not None:
                sinks[position] = None
                self.waiting -= 1
                sink(element_outcome(entry))

    def settle(self, outcome: Outcome) -> None:
        """Answer with ``outcome`` every caller still waiting."""
        for position in range(len(self._sinks)):
            self.answer(position, outcome)


class _Batcher:
    """Collects the calls to one tool made in the same loop iteration and sends them as one batched request.

    A lone call goes through the batched form too, so that its result (errors included) reads the same whether
    or not other calls happened to be merged with it.
    """

    def __init__(self, client: ServerClient, tool: str, batch_tool: str, max_batch_size: int):
        self._client = client
        self._tool = tool
        self._batch_tool = batch_tool
        self._max = max_batch_size
        self._pending: list[tuple[ToolCall, Sink]] = []
        self._scheduled = False
        self._in_flight: set[asyncio.Task[None]] = set()  # the loop keeps only weak references to tasks

    def submit(self, call: ToolCall, sink: Sink) -> None:
        """Send ``call`` with the others of this loop iteration; ``sink`` gets its outcome."""
        self._pending.append((call, sink))
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        pending, self._pending = self._pending, []
        for start in range(0, len(pending), self._max):
            task = asyncio.ensure_future(self._send(pending[start:start + self._max]))
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)

    async def _send(self, chunk: list[tuple[ToolCall, Sink]]) -> None:
        callers = _Callers([sink for _, sink in chunk])
        try:
            await self._answer([call for call, _ in chunk], callers)
        except asyncio.CancelledError:  # the toolbox is stopping
            callers.settle(CLOSED)
            raise
        except Exception as exc:  # noqa: BLE001 - every waiting caller must get an answer
            callers.settle(Outcome(f"Error: calling {self._tool!r} failed unexpectedly: {exc!r}", True))
        callers.settle(Outcome(f"Error: the batched {self._tool} left this call without a result", True))

    async def _answer(self, calls: list[ToolCall], callers: _Callers) -> None:
        """Send the calls as one request, and answer each caller as soon as its element's result comes back.

        Elements still running shortly before the request's deadline are abandoned by the server, so one hanging
        call fails alone instead of taking the calls merged with it down; with ``batch_reply_after_s`` the server
        answers the finished elements early and the rest are collected from the same session (``wire``)."""
        entry = self._client.entry
        given_up_at = time.monotonic() + entry.timeout_s
        slot = self._client.next_slot()
        arguments: dict[str, Any] = {"calls": [call.arguments for call in calls],
                                     "deadline_s": entry.timeout_s * ELEMENT_DEADLINE_FRACTION}
        if entry.batch_reply_after_s is not None:
            arguments["reply_after_s"] = entry.batch_reply_after_s
        outcome = await self._client.request(self._batch_tool, arguments, shown_as=self._tool, calls=len(calls),
                                             slot=slot, meta=episodes_meta([call.episode for call in calls]),
                                             batched=True)
        if outcome.is_error:
            callers.settle(outcome)
            return
        try:
            reply = wire.read_batch_reply(outcome.structured)
            if len(reply["results"]) != len(calls):
                raise ValueError("misaligned batch result")
            callers.answer_entries(reply["results"])
            ticket = reply["ticket"]
            while ticket is not None and callers.waiting:
                if time.monotonic() >= given_up_at:
                    callers.settle(Outcome(f"Error: the tool {self._tool!r} did not answer within "
                                           f"{entry.timeout_s:g} s (deadline); the call was abandoned.", True,
                                           TIMEOUT))
                    return
                outcome = await self._client.request(
                    self._batch_tool, {"calls": [], "collect": ticket, "reply_after_s": entry.batch_reply_after_s},
                    shown_as=self._tool, slot=slot, batched=True)
                if outcome.is_error:
                    callers.settle(outcome)
                    return
                collected = wire.read_collected_reply(outcome.structured)
                ticket = collected["ticket"]
                for position, result in collected["results"].items():
                    callers.answer(int(position), element_outcome(result))
        except (ValueError, KeyError, IndexError) as exc:
            callers.settle(Outcome(f"Error: the batched {self._tool} returned an unreadable result "
                                   f"({' '.join(str(exc).split())[:200]})", True))


def set_if_pending(future: asyncio.Future[Any], value: Any) -> None:
    """``future.set_result(value)`` unless it is done already (its caller was cancelled)."""
    if not future.done():
        future.set_result(value)


def result_sink(stats: ServerStats, server: str, call: ToolCall, deliver: Callable[[ToolResult], None]) -> Sink:
    """A sink that counts ``call``'s outcome in ``stats`` and hands ``deliver`` its result (timed from now)."""
    return functools.partial(_deliver_result, stats, server, call, time.perf_counter(), deliver)


def _deliver_result(stats: ServerStats, server: str, call: ToolCall, started: float,
                    deliver: Callable[[ToolResult], None], outcome: Outcome) -> None:
    count_outcome(stats, call.name, outcome)
    deliver(ToolResult(call.name, outcome.text, outcome.is_error, time.perf_counter() - started, server,
                       call.call_id, outcome.failure))


_RUNNING: set[asyncio.Task[Any]] = set()  # the loop keeps only weak references to tasks


def deliver_when_done(task: asyncio.Task[Outcome], sink: Sink) -> None:
    """Hand ``task``'s outcome to ``sink`` when it finishes (``CLOSED`` if it is cancelled: the loop is stopping);
    the task is held until then."""
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    task.add_done_callback(lambda done: sink(CLOSED if done.cancelled() else done.result()))


class ServerClient:
    """The pooled, limited, retried connection to one server, and its tool list."""

    def __init__(self, name: str, entry: ServerEntry, stats: ServerStats | None = None):
        self.name = name
        self.entry = entry
        self.stats = stats if stats is not None else ServerStats()
        self._started = False  # after start, opening a session is a reconnect
        self.tools: list[mcp_types.Tool] = []
        self._sessions: list[McpSession | None] = [None] * entry.sessions
        self._connecting: list[asyncio.Task[McpSession] | None] = [None] * entry.sessions
        self._next_slot = itertools.cycle(range(entry.sessions))
        self._limit = asyncio.Semaphore(entry.max_concurrency)
        self._batchers: dict[str, _Batcher] = {}
        self._inprocess_server: Any = None
        self._listed: list[mcp_types.Tool] = []  # as the last session opened listed them, batched forms included

    async def start(self) -> list[mcp_types.Tool]:
        """Open every pooled session and read the tool list. Raises ``TransportError`` if the server is unreachable."""
        if isinstance(self.entry, InProcessServerEntry):
            self._inprocess_server = build_inprocess_server(self.name, self.entry)
        await asyncio.gather(*(self._session_at(slot) for slot in range(self.entry.sessions)))
        self.tools = []
        for tool in self._listed:
            batch_of = (tool.meta or {}).get(wire.BATCH_OF)
            if isinstance(batch_of, str):
                if self.entry.batching:
                    self._batchers[batch_of] = _Batcher(self, batch_of, tool.name, self.entry.max_batch_size)
            else:
                self.tools.append(tool)
        visible = {tool.name for tool in self.tools}
        self._batchers = {name: b for name, b in self._batchers.items() if name in visible}
        self._started = True
        return self.tools

    async def _session_at(self, slot: int, counters: CallCounters | None = None) -> McpSession:
        """The live session of ``slot``, reconnecting first if it died (a reconnect is counted in ``counters``).

        A reconnect runs as a task of its own, bounded by ``connect_timeout_s``: a caller whose deadline passes
        stops waiting for it, but does not abort it (a slow-starting server would otherwise never come back),
        and concurrent callers share it.
        """
        session = self._sessions[slot]
        if session is not None and session.alive:
            return session
        task = self._connecting[slot]
        if task is None or task.done():
            task = asyncio.ensure_future(self._connect(slot))
            task.add_done_callback(_retrieve_exception)
            self._connecting[slot] = task
            if self._started and counters is not None:
                counters.reconnects += 1
        return await asyncio.shield(task)

    async def _connect(self, slot: int) -> McpSession:
        old, self._sessions[slot] = self._sessions[slot], None
        if old is not None:
            await old.close()
        session = McpSession(self.name, self.entry, server=self._inprocess_server)
        await session.open()
        # Every session lists the tools, the batched forms it may call included: the SDK's client checks a result
        # against the tool as its own session listed it, and lists again, on every call, for a tool it has not seen.
        meta = {wire.SHOW_BATCH_FORMS: True} if self.entry.batching else None
        try:
            self._listed = await asyncio.wait_for(session.list_tools(meta=meta), self.entry.connect_timeout_s)
        except asyncio.TimeoutError:
            await session.close()
            raise TransportError(f"server {self.name!r} did not list its tools within {self.entry.connect_timeout_s:g} "
                                 f"s (mcpServers.{self.name}.connect_timeout_s)") from None
        except BaseException:
            await session.close()
            raise
        self._sessions[slot] = session
        return session

    def send(self, call: ToolCall, deliver: Callable[[ToolResult], None]) -> None:
        """Start ``call`` (merged with the calls of this loop iteration when its tool has a batched form);
        ``deliver`` gets its counted result, once, on this loop. ``call.affinity`` is ignored (a single server
        holds every session)."""
        sink = result_sink(self.stats, self.name, call, deliver)
        batcher = self._batchers.get(call.name)
        if batcher is not None:
            batcher.submit(call, sink)
        else:
            deliver_when_done(asyncio.ensure_future(self.request(call.name, call.arguments, meta=call_meta(call))),
                              sink)

    async def call(self, call: ToolCall) -> ToolResult:
        """``send``, awaited: the result of ``call``."""
        future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
        self.send(call, functools.partial(set_if_pending, future))
        return await future

    async def outcome(self, call: ToolCall) -> Outcome:
        """What ``call`` comes to, as ``call`` runs it, without counting it in ``calls``/``errors``/``timeouts``/
        ``unavailable`` (its retries and reconnects are counted): for a caller that counts the call itself."""
        batcher = self._batchers.get(call.name)
        if batcher is None:
            return await self.request(call.name, call.arguments, meta=call_meta(call))
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        batcher.submit(call, functools.partial(set_if_pending, future))
        return await future

    async def probe(self) -> None:
        """Ask the server for its tool list through the first pooled session, reopened first if it died (and once
        more if it was open but the server no longer knows it). ``TransportError`` when the server does not
        answer within ``connect_timeout_s``."""
        for attempt in range(2):
            session = await self._session_at(0)
            try:
                await asyncio.wait_for(session.list_tools(), self.entry.connect_timeout_s)
                return
            except (TransportError, asyncio.TimeoutError) as exc:
                await session.close()
                if attempt:
                    raise TransportError(f"server {self.name!r} did not answer a probe: {exc!r}") from exc

    def next_slot(self) -> int:
        """The pooled session the next request goes to, round robin."""
        return next(self._next_slot)

    async def request(self, tool: str, arguments: dict[str, Any], shown_as: str | None = None,
                      calls: int = 1, slot: int | None = None, meta: dict[str, Any] | None = None,
                      batched: bool = False) -> Outcome:
        """One MCP request (``meta``: its ``_meta``) with the concurrency limit, retries and a deadline over all of
        it (queueing, reconnecting and backoff included); never raises. Errors name ``shown_as``, whose counters
        count the retries (``calls`` each: the calls the request carries) and the reconnects it needs. ``slot``:
        the pooled session to use (default: the next, round robin). A ``batched`` request's reply is read from its
        structured content, never shown as text."""
        name = shown_as or tool
        try:
            request = self._limited_request(tool, arguments, self.stats.tool(name), calls, slot, meta)
            result = await within(request, self.entry.timeout_s)
            text = call_result_text(result, structured_as_text=not batched)
            return Outcome(text, bool(result.is_error), structured=result.structured_content)
        except asyncio.TimeoutError:
            return Outcome(f"Error: the tool {name!r} did not answer within {self.entry.timeout_s:g} s (deadline); "
                           "the call was abandoned.", True, TIMEOUT)
        except TransportError as exc:
            return Outcome(f"Error: the tool server {self.name!r} is unavailable after {self.entry.retries + 1} "
                           f"attempts: {exc}", True, UNAVAILABLE)
        except MalformedReply as exc:
            return Outcome(f"Error: {exc} (calling {name!r})", True)
        except MCPError as exc:
            return Outcome(f"Error: the tool server {self.name!r} rejected the call to {name!r}: {exc}", True)
        except Exception as exc:  # noqa: BLE001 - a tool call must never take an episode down
            return Outcome(f"Error: calling {name!r} failed unexpectedly: {exc!r}", True)

    async def _limited_request(self, tool: str, arguments: dict[str, Any], counters: CallCounters,
                               calls: int, slot: int | None, meta: dict[str, Any] | None) -> mcp_types.CallToolResult:
        """The request under the concurrency limit, sent again after a transport failure (``retries`` times, each
        after a backoff and a reconnect)."""
        async with self._limit:
            for attempt in range(self.entry.retries + 1):
                if attempt:
                    counters.retries += calls
                    await asyncio.sleep(retry_backoff_s(attempt))
                session = await self._session_at(self.next_slot() if slot is None else slot, counters)
                try:
                    return await session.call_tool(tool, arguments, meta)
                except TransportError:
                    await session.close()
                    if attempt == self.entry.retries:
                        raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def close(self) -> None:
        for task in self._connecting:
            if task is not None and not task.done():
                task.cancel()
        sessions = [s for s in self._sessions if s is not None]
        self._sessions = [None] * self.entry.sessions
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)


def count_outcome(stats: ServerStats, tool: str, outcome: Outcome) -> None:
    """Count one finished call to ``tool`` in ``stats``."""
    counters = stats.tool(tool)
    counters.calls += 1
    counters.errors += outcome.is_error
    counters.timeouts += outcome.failure == TIMEOUT
    counters.unavailable += outcome.failure == UNAVAILABLE


def retry_backoff_s(retry: int) -> float:
    """How long to wait before the ``retry``-th re-send (1, 2, ...): exponential from 50 ms, jittered by up to a
    second, at most 2 s."""
    return min(0.05 * 2 ** (retry - 1) + random.uniform(0, 1), 2.0)


async def within(request: Coroutine[Any, Any, T], seconds: float) -> T:
    """``request``'s result, or ``TimeoutError`` after ``seconds`` (one timer, no task of its own where the
    Python has ``asyncio.timeout``)."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await request
    return await asyncio.wait_for(request, seconds)  # pragma: no cover - Python 3.10


def _retrieve_exception(task: asyncio.Task[Any]) -> None:
    """Mark a background task's failure as seen: the callers that awaited it got it already, or gave up."""
    if not task.cancelled():
        task.exception()
