"""A tool's batched form, ``NAME_batch``: many calls in one MCP request, answered as ``wire.BatchReply``.

The per-request cost of MCP (JSON-RPC framing, validation, a round trip) dominates cheap tools at RL scale, so the
toolbox merges the concurrent calls to a tool into one request of its batched form. ``calls`` holds each call's
arguments, ``_meta`` each call's episode (``wire.EPISODES``). Each element is checked against the tool's own
arguments on its own (unknown keys refused): one bad element gets an error entry, the others run. They run
concurrently through the tool (``batch_runs``); a tool that is faster on a whole list at once gives ``batch_fn``,
which gets the valid elements' arguments and answers one value per element, in order.

An element still running after ``deadline_s`` is abandoned and its entry says so (``failure: "deadline"``). With
``reply_after_s`` the request answers early and ``collect=ticket`` gets the rest (see ``wire`` and ``batch_runs``).
The forms are for a client that merges calls, not for a model or a person: ``tools/list`` leaves them out unless
the request's ``_meta`` asks (``hide_batch_forms``, installed once per server); a hidden tool is still called by its
name. The listed schema describes each element of ``calls`` with the tool's own arguments.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any

import mcp_types
import pydantic
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from rlfactory_tool_servers import wire
from rlfactory_tool_servers.batch_runs import ElementDeadline, Run, Runs, ThreadedRun
from rlfactory_tool_servers.tool_signature import (
    LIGHT_CONTEXT, ToolSignature, connection_of, episode_of, result_text)

MAX_BATCH_CALLS = 16384
MAX_PROBLEMS_SHOWN = 5
MAX_LOCATION_CHARS = 80

BatchFn = Callable[[list[dict[str, Any]]], Awaitable[Sequence[Any]] | Sequence[Any]]
"""A whole list's answer: the valid elements' arguments in, one value (or exception) per element out, in order."""


class SchemaOf:
    """Annotates the batched form's ``calls`` elements: taken as they come (each is checked later, on its
    own), listed with the tool's own arguments schema (its ``$defs`` move to the top, where references point)."""

    def __init__(self, model: type[pydantic.BaseModel]):
        self.model = model

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        return handler(self.model.__pydantic_core_schema__)


async def hide_batch_forms(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: a ``tools/list`` answer leaves out the tools whose ``_meta`` has ``wire.BATCH_OF``, unless
    the request's ``_meta`` sets ``wire.SHOW_BATCH_FORMS`` to ``true``."""
    result = await call_next(ctx)
    if ctx.method != "tools/list" or (ctx.meta or {}).get(wire.SHOW_BATCH_FORMS) is True:
        return result
    if not isinstance(result, dict):  # the SDK's handler answers with the wire dict; anything else is not ours
        return result
    shown = [tool for tool in result.get("tools", []) if wire.BATCH_OF not in (tool.get("_meta") or {})]
    return {**result, "tools": shown}


def invalid_arguments(tool_name: str, exc: pydantic.ValidationError) -> str:
    """The first few problems, each location cut short: a call with thousands of bad keys gets a short answer."""
    errors = exc.errors()
    problems = "; ".join(f"{_location(e['loc'])}: {e['msg']}" for e in errors[:MAX_PROBLEMS_SHOWN])
    more = f" (and {len(errors) - MAX_PROBLEMS_SHOWN:,} more)" if len(errors) > MAX_PROBLEMS_SHOWN else ""
    return f"Error: invalid arguments for {tool_name}: {problems}{more}"


def _location(loc: tuple[Any, ...]) -> str:
    text = ".".join(map(str, loc)) or "arguments"
    return text if len(text) <= MAX_LOCATION_CHARS else text[:MAX_LOCATION_CHARS] + "..."


def episodes_of(meta: Any, count: int, default: Any) -> list[Any]:
    """Each element's episode from a batched request's ``_meta`` (``default`` where none is given); ``ToolError``
    for a list that does not align with ``calls`` or holds a bad episode."""
    given = (meta or {}).get(wire.EPISODES)
    if given is None:
        return [default] * count
    if not isinstance(given, list) or len(given) != count:
        raise ToolError(f"the request's _meta {wire.EPISODES!r} must be a list with one episode per call")
    return [episode_of(episode, default) for episode in given]


class BatchedTool:
    """The batched form of one tool: checks the elements, runs them, and answers each as ``wire.BatchEntry``."""

    def __init__(self, name: str, fn: Callable[..., Any], signature: ToolSignature, batch_fn: BatchFn | None,
                 blocking: bool = False):
        """``fn``: the tool's function; ``blocking``: a sync ``fn`` blocks, and runs in worker threads."""
        self.name = name
        self.fn = fn
        self.threaded = blocking and not inspect.iscoroutinefunction(fn)
        self.signature = signature
        self.batch_fn = batch_fn
        self.runs = Runs()

    def entry(self, value: Any) -> wire.BatchEntry:
        if isinstance(value, ElementDeadline):
            return wire.entry(f"Error: the tool {self.name!r} gave {value}", True, wire.DEADLINE)
        if isinstance(value, Exception):
            return wire.entry(f"Error executing tool {self.name}: {value}", True)
        return wire.entry(result_text(value))

    def check(self, calls: list[Any], episodes: list[Any], connection: str
              ) -> tuple[list[wire.BatchEntry | None], dict[int, dict]]:
        """An error entry for each element that is not valid arguments, and the valid ones' arguments by position
        (the episode each names, ``None`` where none, and the caller set where the tool takes them)."""
        entries: list[wire.BatchEntry | None] = [None] * len(calls)
        objects = [position for position, arguments in enumerate(calls) if isinstance(arguments, dict)]
        for position in set(range(len(calls))).difference(objects):
            entries[position] = wire.entry(f"Error: arguments of {self.name} must be a JSON object", True)
        valid: dict[int, dict[str, Any]] = {}
        for position, checked in zip(objects, self.signature.validate_all([calls[p] for p in objects])):
            if isinstance(checked, pydantic.ValidationError):
                entries[position] = wire.entry(invalid_arguments(self.name, checked), True)
                continue
            valid[position] = self.signature.bind(checked, episodes[position], connection)
        return entries, valid

    async def answer(self, ctx: Context, calls: list[Any], deadline_s: float | None, reply_after_s: float | None,
                     collect: str | None) -> mcp_types.CallToolResult:
        if collect is not None:
            return reply(await self.collected(collect, reply_after_s))
        if len(calls) > MAX_BATCH_CALLS:
            raise ToolError(f"a batch holds at most {MAX_BATCH_CALLS} calls, got {len(calls)}")
        episodes = episodes_of(ctx.request_context.meta, len(calls), None)
        entries, valid = self.check(calls, episodes, connection_of(ctx))
        if deadline_s is not None and deadline_s <= 0:
            deadline_s = None
        if self.batch_fn is not None:
            for position, value in zip(valid, await self.whole_list(list(valid.values()), deadline_s)):
                entries[position] = self.entry(value)
            return reply({"results": entries, "ticket": None})
        # Without a deadline nothing would bound elements left running after the reply: wait for all of them.
        early = reply_after_s if deadline_s is not None and self.runs.has_room() else None
        calls_of = {position: functools.partial(self.fn, **arguments) for position, arguments in valid.items()}
        run = ThreadedRun(calls_of, deadline_s) if self.threaded else Run.of(calls_of, deadline_s)
        for position, value in (await run.next_reply(early)).items():
            entries[position] = self.entry(value)
        ticket = None if run.finished else self.runs.add(run)
        return reply({"results": entries, "ticket": ticket})

    async def collected(self, ticket: str, reply_after_s: float | None) -> wire.CollectedReply:
        run = self.runs.get(ticket)
        if run is None:
            raise ToolError(f"no batch {ticket[:40]!r} is running here (it ended, or the server restarted)")
        try:
            done = await run.next_reply(reply_after_s)
        finally:
            if run.finished:
                self.runs.drop(ticket)
        return {"results": {str(position): self.entry(value) for position, value in done.items()},
                "ticket": None if run.finished else ticket}

    async def whole_list(self, valid: list[dict[str, Any]], deadline_s: float | None) -> list[Any]:
        """``batch_fn``'s values for the valid elements; its failure (or its deadline) is every element's."""
        try:
            values = self.batch_fn(valid)  # type: ignore[misc]
            if inspect.isawaitable(values):
                values = await asyncio.wait_for(values, deadline_s)
            values = list(values)
        except asyncio.TimeoutError:
            return [ElementDeadline(f"no answer within {deadline_s:g} s (deadline)")] * len(valid)
        except Exception as exc:  # the whole list failed: every element reports it
            return [exc] * len(valid)
        if len(values) != len(valid):
            return [RuntimeError(f"batched {self.name} returned {len(values)} results for {len(valid)} calls")] * \
                len(valid)
        return values


def reply(structured: Any) -> mcp_types.CallToolResult:
    """A batched form's answer: structured content only (see ``wire``)."""
    return mcp_types.CallToolResult(content=[], structured_content=structured)


def publish_batch_form(server: MCPServer, name: str, fn: Callable[..., Any], signature: ToolSignature,
                       batch_fn: BatchFn | None, blocking: bool = False) -> None:
    """Register ``name + "_batch"`` on ``server``, hidden from ``tools/list`` unless asked for (``blocking``: a sync
    ``fn`` runs in worker threads)."""
    batched = BatchedTool(name, fn, signature, batch_fn, blocking)
    element = Annotated[Any, SchemaOf(signature.arguments)]

    async def batch(ctx: Context, calls: list[Any], deadline_s: float | None = None, reply_after_s: float | None = None,
                    collect: str | None = None) -> mcp_types.CallToolResult:
        return await batched.answer(ctx, calls, deadline_s, reply_after_s, collect)

    # Real objects, not this module's string annotations: the element type is made here, per tool. The length is
    # listed (maxItems) but checked by ``answer``, which says so in words.
    batch.__annotations__ = {"ctx": Context, "calls": Annotated[list[element], pydantic.Field(
        json_schema_extra={"maxItems": MAX_BATCH_CALLS})], "deadline_s": float | None, "reply_after_s": float | None,
        "collect": str | None, "return": mcp_types.CallToolResult}
    setattr(batch, LIGHT_CONTEXT, True)

    server.add_tool(batch, name=f"{name}_batch", meta={wire.BATCH_OF: name}, structured_output=False,
                    description=f"Batched form of `{name}`: runs every element of `calls` (each an arguments object of "
                    f"`{name}`) in one request and answers their results in order as structured content. An element "
                    "still running after `deadline_s` seconds is abandoned; with `reply_after_s` the finished ones "
                    "are answered early and the others are collected with `collect`.")
    if hide_batch_forms not in server.middleware:
        server.middleware.append(hide_batch_forms)
