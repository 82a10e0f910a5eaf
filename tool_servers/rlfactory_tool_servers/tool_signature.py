"""A tool function as a server sees it: the arguments a call gives, the episode the request's ``_meta`` gives (and the
caller: that episode, or the connection when it names none), and how the function is run and its value shown.
Shared by a tool's own form and its batched form."""

from __future__ import annotations

import functools
import inspect
import json
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NewType

import anyio.to_thread
import pydantic
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER

from rlfactory_tool_servers import wire

Episode = NewType("Episode", str)
"""The type of a tool parameter that receives the call's episode id from the request's ``_meta``."""

DEFAULT_EPISODE = "default"
"""The episode of a call whose request names none (an outside client's): one shared state."""

Caller = NewType("Caller", str)
"""The type of a tool parameter that receives whom a call counts against: the episode the request's ``_meta``
names, else its connection (``connection_of``), so a limit per caller is not escaped by leaving the episode out."""


@dataclass(frozen=True)
class ToolSignature:
    """A tool function as the server sees it: its arguments (a model that refuses unknown keys, for the batched
    form's elements), and the parameter that takes the episode, if any, with that parameter's default."""

    parameters: list[inspect.Parameter]
    arguments: type[pydantic.BaseModel]
    episode: str | None
    episode_default: Any
    caller: str | None = None

    @classmethod
    def of(cls, fn: Callable[..., Any], name: str, defaults: Mapping[str, Any]) -> ToolSignature:
        hints = typing.get_type_hints(fn)
        parameters, episode, episode_default, caller = [], None, None, None
        for param in inspect.signature(fn).parameters.values():
            annotation = hints.get(param.name, Any)
            if annotation is Episode or Episode in typing.get_args(annotation):
                episode, episode_default = param.name, param.default
                continue
            if annotation is Caller:
                caller = param.name
                continue
            default = defaults.get(param.name, param.default)
            parameters.append(param.replace(annotation=annotation, default=default,
                                            kind=inspect.Parameter.POSITIONAL_OR_KEYWORD))
        fields = {p.name: (p.annotation, ... if p.default is inspect.Parameter.empty else p.default)
                  for p in parameters}
        model = pydantic.create_model(f"{name}_arguments", __config__=pydantic.ConfigDict(extra="forbid"), **fields)
        default = None if episode_default is inspect.Parameter.empty else episode_default
        return cls(parameters, model, episode, default, caller)

    def bind(self, arguments: dict[str, Any], named: str | None, connection: str) -> dict[str, Any]:
        """``arguments`` with the episode the request names (``named``; else the tool's default) and the caller
        (that episode, else ``connection``) set where the tool takes them."""
        if self.episode is not None:
            arguments[self.episode] = named if named is not None else self.episode_default
        if self.caller is not None:
            arguments[self.caller] = f"episode:{named}" if named is not None else connection
        return arguments

    @functools.cached_property
    def _list_of_arguments(self) -> pydantic.TypeAdapter[list[pydantic.BaseModel]]:
        return pydantic.TypeAdapter(list[self.arguments])  # type: ignore[name-defined]

    def validate_all(self, calls: list[dict[str, Any]]) -> list[dict[str, Any] | pydantic.ValidationError]:
        """Each call's arguments as validated (a fresh dict, as the tool gets them), or its own validation error:
        valid lists in one pass, and only the elements the pass names again, one by one, for their errors."""
        try:
            return [model.__dict__ for model in self._list_of_arguments.validate_python(calls)]
        except pydantic.ValidationError as exc:
            failed = {error["loc"][0] for error in exc.errors(include_url=False, include_context=False,
                                                             include_input=False) if error["loc"]}
        if not failed:
            failed = set(range(len(calls)))
        checked: list[dict[str, Any] | pydantic.ValidationError] = []
        for position, arguments in enumerate(calls):
            if position not in failed:
                checked.append(arguments)
                continue
            try:
                checked.append(self.arguments.model_validate(arguments).__dict__)
            except pydantic.ValidationError as exc:
                checked.append(exc)
        passed = [position for position in range(len(calls)) if position not in failed]
        for position, arguments in zip(passed, self.validate_all([calls[p] for p in passed]) if passed else []):
            checked[position] = arguments
        return checked

    def with_context(self) -> inspect.Signature:
        """The signature the SDK reads: the arguments, and a ``Context`` it fills in (no schema property)."""
        context = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
        return inspect.Signature([*self.parameters, context])


def episode_of(value: Any, default: Any) -> Any:
    """The episode a request's ``_meta`` gives (``default`` when none); ``ToolError`` for one that is not a short,
    non-empty string."""
    if value is None:
        return default
    if not isinstance(value, str) or not value or len(value) > wire.MAX_EPISODE_CHARS:
        raise ToolError(f"the request's _meta {wire.EPISODE!r} must be a non-empty string of at most "
                        f"{wire.MAX_EPISODE_CHARS} characters")
    return value


LIGHT_CONTEXT = "__rlf_light_context__"
"""Set to ``True`` on a tool function whose context parameter it reads only through ``episode_of`` its
``request_context.meta`` and ``connection_of``: such a tool can be called with a context that has no session
(``fast_lane``)."""


def connection_of(ctx: Context) -> str:
    """The connection a request came over, as a caller: the MCP session its HTTP request names, else the HTTP
    peer's address (stateless requests), else ``"local"`` (stdio, or a server in this process: one client)."""
    request = getattr(ctx.request_context, "request", None)
    headers = getattr(request, "headers", None)
    if headers is None:
        return "local"
    session = headers.get(MCP_SESSION_ID_HEADER)
    if session:
        return f"session:{session[:128]}"
    peer = getattr(request, "client", None)
    return f"peer:{getattr(peer, 'host', None) or 'unknown'}"


def result_text(value: Any) -> str:
    """The text a tool result is shown as: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def invoker(fn: Callable[..., Any], blocking: bool) -> Callable[..., Any]:
    """``fn`` as a coroutine function: awaited when async, run in a worker thread when it blocks, else inline."""
    if inspect.iscoroutinefunction(fn):
        return fn
    if blocking:
        async def in_thread(**arguments: Any) -> Any:
            return await anyio.to_thread.run_sync(lambda: fn(**arguments))

        return in_thread

    async def inline(**arguments: Any) -> Any:
        return fn(**arguments)

    return inline
