"""Register a tool together with a batched form that takes many calls in one MCP request.

The per-request cost of MCP (JSON-RPC framing, validation, a round trip) dominates cheap tools at RL scale.
A tool registered here is published twice:

- ``NAME(**arguments)``: the ordinary tool the model sees;
- ``NAME_batch(calls=[arguments, ...], deadline_s=None)``: every element run in one request, returning one JSON
  text ``[{"text": str, "is_error": bool}, ...]`` aligned with ``calls``; an element still running after
  ``deadline_s`` is abandoned and reported as an error, so one hanging call does not fail those merged with it.
  Its tool ``meta`` carries ``{"rlfactory/batch_of": "NAME"}`` so a client can find it and hide it from the model;
  its schema describes each element of ``calls`` with ``NAME``'s own input schema.

Slow elements need not hold the fast ones back. With ``reply_after_s`` (and a ``deadline_s``), the request answers
once every element is done or ``reply_after_s`` after the first one is, whichever comes first. Elements still
running then keep running (until ``deadline_s``), and the answer is ``{"results": [entry or null, ...], "ticket":
T}``, ``null`` where an element is still running. ``NAME_batch(calls=[], collect=T, reply_after_s=...)`` then
waits for more of them by the same rule and answers ``{"results": {"position": entry, ...}, "ticket": T or
null}``: the elements done since the last answer, and ``null`` once none is left. A batch that answered early stays
collectable until ``RUN_KEPT_S`` after its deadline; a tool holds at most ``MAX_RUNS`` of them (past that, a batch
answers once all its elements are done).

The batched forms are for a client that merges calls (our toolbox), not for a model or a person: a ``tools/list``
answer leaves them out unless the request's ``_meta`` carries ``{"rlfactory/batch_forms": true}`` (the middleware
``hide_batch_forms``, installed once per server). A hidden tool is still called by its name.

Each element is validated against ``NAME``'s signature on its own: one bad element gives an ``is_error`` entry,
the others still run. By default the valid elements run concurrently through ``fn``; a tool that is faster on
a whole list at once (retrieval, say) passes ``batch_fn``, which gets the validated argument dicts and returns
one result per element, in order.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pydantic
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool

BATCH_OF_META_KEY = "rlfactory/batch_of"
"""Tool ``meta`` key that marks ``NAME_batch`` as the batched form of ``NAME``."""

BATCH_FORMS_META_KEY = "rlfactory/batch_forms"
"""Request ``_meta`` key: a ``tools/list`` request that sets it to ``true`` is shown the batched forms too."""

MAX_BATCH_CALLS = 16384

BatchFn = Callable[[list[dict[str, Any]]], Awaitable[Sequence[Any]] | Sequence[Any]]


class ElementDeadline(Exception):
    """One element of a batch outlived the batch's ``deadline_s``."""


def result_text(value: Any) -> str:
    """The text a tool result is shown as: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def arguments_model(fn: Callable[..., Any], tool_name: str) -> type[pydantic.BaseModel]:
    """A pydantic model of ``fn``'s parameters (unknown keys rejected), to validate one call's arguments."""
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn, eval_str=True).parameters.values():  # string annotations resolved
        annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    return pydantic.create_model(f"{tool_name}_arguments", __config__=pydantic.ConfigDict(extra="forbid"), **fields)


def batch_input_schema(batch_schema: dict[str, Any], item_schema: dict[str, Any]) -> dict[str, Any]:
    """``batch_schema`` (the schema of the batched form's signature) with each element of ``calls`` described by
    ``item_schema`` (the tool's own input schema); the tool's ``$defs`` move to the top, where its references
    point."""
    schema = copy.deepcopy(batch_schema)
    schema["properties"]["calls"].update(items={k: v for k, v in item_schema.items() if k != "$defs"},
                                         maxItems=MAX_BATCH_CALLS)
    if "$defs" in item_schema:
        schema["$defs"] = copy.deepcopy(item_schema["$defs"])
    return schema


async def hide_batch_forms(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: a ``tools/list`` answer leaves out the tools whose ``meta`` has ``BATCH_OF_META_KEY``,
    unless the request's ``_meta`` sets ``BATCH_FORMS_META_KEY`` to ``true``."""
    result = await call_next(ctx)
    if ctx.method != "tools/list" or (ctx.meta or {}).get(BATCH_FORMS_META_KEY) is True:
        return result
    if not isinstance(result, dict):  # the SDK's handler answers with the wire dict; anything else is not ours
        return result
    shown = [tool for tool in result.get("tools", []) if BATCH_OF_META_KEY not in (tool.get("_meta") or {})]
    return {**result, "tools": shown}


def _registered(server: MCPServer, name: str) -> Tool:
    # MCPServer has no public accessor for a registered tool, whose ``parameters`` is the schema it lists.
    tool = server._tool_manager.get_tool(name)
    if tool is None:
        raise KeyError(f"no tool {name!r} is registered")
    return tool


MAX_PROBLEMS_SHOWN = 5
MAX_LOCATION_CHARS = 80


def _validation_message(tool_name: str, exc: pydantic.ValidationError) -> str:
    """The first few problems, each location cut short: a call with thousands of bad keys gets a short answer."""
    errors = exc.errors()
    problems = "; ".join(f"{_location(e['loc'])}: {e['msg']}" for e in errors[:MAX_PROBLEMS_SHOWN])
    more = f" (and {len(errors) - MAX_PROBLEMS_SHOWN:,} more)" if len(errors) > MAX_PROBLEMS_SHOWN else ""
    return f"Error: invalid arguments for {tool_name}: {problems}{more}"


def _location(loc: tuple[Any, ...]) -> str:
    text = ".".join(map(str, loc)) or "arguments"
    return text if len(text) <= MAX_LOCATION_CHARS else text[:MAX_LOCATION_CHARS] + "..."


RUN_KEPT_S = 60.0
"""How long past its deadline a batch that answered early stays collectable."""

MAX_RUNS = 4096
"""Batches that answered early and still run, per tool at most; past that a batch waits for all its elements."""


async def _call(fn: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    try:
        value = fn(**arguments)
        return await value if inspect.isawaitable(value) else value
    except Exception as exc:  # one element's failure is its own result
        return exc


class _Run:
    """The elements of one batch, running concurrently; each reply hands out those done since the last one.

    An element still running at the deadline is cancelled and reported as ``ElementDeadline``. One timer serves the
    whole batch, and no ``gather(return_exceptions=True)``: that gather can finish normally after the client gave up
    on the request, and a handler that answers a cancelled request takes the SDK's server session down (mcp 2.3).
    """

    def __init__(self, fn: Callable[..., Any], valid: list[dict[str, Any]], positions: list[int],
                 deadline_s: float | None):
        self._deadline_s = deadline_s
        self._unreported = {position: asyncio.ensure_future(_call(fn, arguments))
                            for position, arguments in zip(positions, valid)}
        self._timer = (asyncio.get_running_loop().call_later(deadline_s, self.cancel)
                       if deadline_s is not None and self._unreported else None)

    @property
    def finished(self) -> bool:
        """Every element has been reported."""
        return not self._unreported

    async def next_reply(self, reply_after_s: float | None) -> dict[int, Any]:
        """The values of the elements done since the last reply, by position. Waits until all are done, or, with
        ``reply_after_s``, until one is and then ``reply_after_s`` more (or all are)."""
        try:
            pending = set(self._unreported.values())
            if pending and reply_after_s is None:
                await asyncio.wait(pending)
            elif pending:
                _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                if pending:
                    await asyncio.wait(pending, timeout=reply_after_s)
        except asyncio.CancelledError:  # the client gave up on the request
            self.cancel()
            raise
        done = {position: task for position, task in self._unreported.items() if task.done()}
        for position in done:
            del self._unreported[position]
        if self.finished and self._timer is not None:
            self._timer.cancel()
        return {position: self._late() if task.cancelled() else task.result() for position, task in done.items()}

    def _late(self) -> ElementDeadline:
        return ElementDeadline(f"no answer within {self._deadline_s:g} s (deadline); the call was abandoned")

    def cancel(self) -> None:
        for task in self._unreported.values():
            task.cancel()

    @property
    def kept_s(self) -> float:
        return (self._deadline_s or 0.0) + RUN_KEPT_S


class _Runs:
    """The batches of one tool that answered early, by ticket, each kept until collected whole or ``kept_s``."""

    def __init__(self) -> None:
        self._runs: dict[str, _Run] = {}

    def has_room(self) -> bool:
        return len(self._runs) < MAX_RUNS

    def add(self, run: _Run) -> str:
        ticket = uuid.uuid4().hex
        self._runs[ticket] = run

        def forget() -> None:
            if self._runs.pop(ticket, None) is not None:
                run.cancel()

        asyncio.get_running_loop().call_later(run.kept_s, forget)
        return ticket

    def get(self, ticket: str) -> _Run | None:
        return self._runs.get(ticket)

    def drop(self, ticket: str) -> None:
        self._runs.pop(ticket, None)


def add_batched_tool(server: MCPServer, fn: Callable[..., Any], *, name: str | None = None,
                     description: str | None = None, batch_fn: BatchFn | None = None) -> None:
    """Register ``fn`` as tool ``name`` and its batched form ``name + "_batch"`` on ``server`` (hidden from
    ``tools/list`` unless asked for, see the module's docstring)."""
    tool_name = name or fn.__name__
    server.add_tool(fn, name=tool_name, description=description, structured_output=False)
    model = arguments_model(fn, tool_name)

    async def run_batch_fn(valid: list[dict[str, Any]], deadline_s: float | None) -> list[Any]:
        try:
            values = batch_fn(valid)
            if inspect.isawaitable(values):
                values = await asyncio.wait_for(values, deadline_s)
            values = list(values)
        except asyncio.TimeoutError:
            return [ElementDeadline(f"no answer within {deadline_s:g} s (deadline)")] * len(valid)
        except Exception as exc:  # the whole list failed: every element reports it
            return [exc] * len(valid)
        if len(values) != len(valid):
            return [RuntimeError(f"batched {tool_name} returned {len(values)} results for {len(valid)} calls")] * len(valid)
        return values

    def entry(value: Any) -> dict[str, Any]:
        if isinstance(value, ElementDeadline):
            return {"text": f"Error: the tool {tool_name!r} gave {value}", "is_error": True}
        if isinstance(value, Exception):
            return {"text": f"Error executing tool {tool_name}: {value}", "is_error": True}
        return {"text": result_text(value), "is_error": False}

    runs = _Runs()

    async def batch(calls: list[Any], deadline_s: float | None = None, reply_after_s: float | None = None,
                    collect: str | None = None) -> str:
        if collect is not None:
            run = runs.get(collect)
            if run is None:
                raise ToolError(f"no batch {collect[:40]!r} is running here (it ended, or the server restarted)")
            try:
                reply = await run.next_reply(reply_after_s)
            finally:
                if run.finished:
                    runs.drop(collect)
            return json.dumps({"results": {str(position): entry(value) for position, value in reply.items()},
                               "ticket": None if run.finished else collect}, ensure_ascii=False)
        if len(calls) > MAX_BATCH_CALLS:
            raise ToolError(f"a batch holds at most {MAX_BATCH_CALLS} calls, got {len(calls)}")
        entries: list[dict[str, Any] | None] = [None] * len(calls)
        valid_positions: list[int] = []
        valid: list[dict[str, Any]] = []
        for position, arguments in enumerate(calls):
            if not isinstance(arguments, dict):
                entries[position] = {"text": f"Error: arguments of {tool_name} must be a JSON object", "is_error": True}
                continue
            try:
                valid.append(dict(model.model_validate(arguments)))  # values as validated, as the tool itself gets them
                valid_positions.append(position)
            except pydantic.ValidationError as exc:
                entries[position] = {"text": _validation_message(tool_name, exc), "is_error": True}
        if deadline_s is not None and deadline_s <= 0:
            deadline_s = None
        if batch_fn is not None:
            values = await run_batch_fn(valid, deadline_s)
            for position, value in zip(valid_positions, values):
                entries[position] = entry(value)
            return json.dumps(entries, ensure_ascii=False)
        # Without a deadline nothing would bound elements left running after the reply: wait for all of them.
        early = reply_after_s if deadline_s is not None and runs.has_room() else None
        run = _Run(fn, valid, valid_positions, deadline_s)
        reply = await run.next_reply(early)
        for position, value in reply.items():
            entries[position] = entry(value)
        if run.finished:
            return json.dumps(entries, ensure_ascii=False)
        return json.dumps({"results": entries, "ticket": runs.add(run)}, ensure_ascii=False)

    batch_name = f"{tool_name}_batch"
    server.add_tool(
        batch,
        name=batch_name,
        description=f"Batched form of `{tool_name}`: runs every element of `calls` (each an arguments object of "
        f"`{tool_name}`) and returns a JSON list of {{text, is_error}} in the same order. An element still running "
        "after `deadline_s` seconds is abandoned and reported as an error; the others keep their results. With "
        "`reply_after_s`, it answers the finished elements early and the others are collected with `collect`.",
        meta={BATCH_OF_META_KEY: tool_name},
        structured_output=False,
    )
    # A call is validated with ``batch``'s own signature (``calls: list[Any]``: each element is checked above, on
    # its own), never with the listed schema; so the listed schema can say what an element is.
    batched = _registered(server, batch_name)
    batched.parameters = batch_input_schema(batched.parameters, _registered(server, tool_name).parameters)
    if hide_batch_forms not in server.middleware:
        server.middleware.append(hide_batch_forms)
