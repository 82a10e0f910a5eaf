"""Tools written once: a typed method (or function) is an MCP tool, and its batched form comes from it.

    class Notes(Toolset):
        def __init__(self) -> None:
            self.notes: dict[str, list[str]] = {}

        @tool
        def write(self, text: str, episode: Episode = DEFAULT_EPISODE) -> str:
            \"\"\"Write a note; answers how many the episode has.\"\"\"
            self.notes.setdefault(episode, []).append(text)
            return f"{len(self.notes[episode])} notes"

    server = MCPServer("notes")
    Notes().publish(server)

As in the MCP SDK, a tool's signature is its input schema and its docstring its description (its wrapped lines
joined into paragraphs; a toolset may fill ``{placeholders}`` of its docstrings from ``description_values``, and
give parameters other defaults with ``parameter_defaults``). A parameter annotated ``Episode`` is no argument: it
receives the episode the request's ``_meta`` names (``wire.EPISODE``), or its default when there is none, and the
tool says in its own ``_meta`` that it keeps state per episode (``wire.EPISODE_STATE``). One annotated ``Caller``
receives whom the call counts against, for a limit per caller: that episode, else the request's connection
(``tool_signature.connection_of``); the tool says ``EPISODE_STATE`` too (a fair share is the episode's state). A tool
answers its value as text: a string as it is, anything else as compact JSON.

A toolset states what its tools do to the world in MCP's tool annotations (``annotations``, for every tool; a
``@tool(annotations=...)`` for one): ``readOnlyHint``, ``destructiveHint``, ``openWorldHint``. Clients read them
(``rlfactory_envs.testing`` calls only the tools they mark safe).

Every tool is published with its batched form ``NAME_batch`` (``batch_form``), which the toolbox merges concurrent
calls into; ``@tool(batch="method")`` names a method that answers a whole list of calls at once (retrieval, say).
Sync methods run on the server's loop (a toolset's lookups are in memory and quick; a batch's elements one after the
other, with no task each); a toolset whose methods block (a real phone over adb, a user's functions) sets
``blocking`` and they run in worker threads, one hop per batch (``batch_runs``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

from rlfactory_tool_servers import wire
from rlfactory_tool_servers.batch_form import BatchFn, publish_batch_form
from rlfactory_tool_servers.tool_signature import (DEFAULT_EPISODE, LIGHT_CONTEXT, Caller, Episode, ToolSignature,
                                                  connection_of, episode_of, invoker, result_text)

__all__ = ["DEFAULT_EPISODE", "READ_ONLY", "Caller", "Episode", "Toolset", "publish_tool", "publish_toolsets",
           "result_text", "tool"]


def paragraphs(doc: str) -> str:
    """A docstring as a description: each paragraph's wrapped lines joined into one, paragraphs apart."""
    return "\n\n".join(" ".join(block.split("\n")) for block in doc.split("\n\n"))


READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
"""A tool that only reads the server's own data: it changes nothing."""


@dataclass(frozen=True)
class ToolOptions:
    name: str | None = None
    batch: str | None = None
    annotations: ToolAnnotations | None = None


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None, batch: str | None = None,
         annotations: ToolAnnotations | None = None) -> Any:
    """Mark a ``Toolset`` method as a tool (``name``: another name than the method's; ``batch``: the name of the
    method that answers a whole list of its calls at once; ``annotations``: this tool's, in place of the
    toolset's)."""
    def mark(method: Callable[..., Any]) -> Callable[..., Any]:
        method.__rlf_tool__ = ToolOptions(name, batch, annotations)  # type: ignore[attr-defined]
        return method

    return mark(fn) if fn is not None else mark


class Toolset:
    """A class whose ``@tool`` methods are MCP tools; ``publish`` puts them (and their batched forms) on a server."""

    blocking: bool = False
    """Whether sync tool methods block (run them in worker threads) rather than answer at once (run them inline)."""
    annotations: ClassVar[ToolAnnotations | None] = None
    """What the tools do to the world (MCP's tool annotations), unless a tool says otherwise; ``None``: unsaid."""

    def description_values(self) -> Mapping[str, Any]:
        """Values for the ``{placeholders}`` of the tools' docstrings (limits, say); none by default."""
        return {}

    def parameter_defaults(self) -> Mapping[str, Mapping[str, Any]]:
        """Per tool, defaults that replace those of its signature (``{"search": {"topk": 5}}``); none by default."""
        return {}

    def tool_methods(self) -> list[tuple[str, Callable[..., Any], ToolOptions]]:
        """The tools, in the order the classes define them (a base class's first; a subclass's method of the same
        name replaces it): each one's name, bound method and options."""
        members = {attribute: member for cls in reversed(type(self).__mro__) for attribute, member in vars(cls).items()}
        return [(options.name or attribute, getattr(self, attribute), options) for attribute, member in members.items()
                if isinstance(options := getattr(member, "__rlf_tool__", None), ToolOptions)]

    def publish(self, server: MCPServer) -> None:
        """Register every tool and its batched form on ``server``."""
        values, defaults = self.description_values(), self.parameter_defaults()
        for name, method, options in self.tool_methods():
            doc = paragraphs(inspect.getdoc(method) or "")
            publish_tool(server, method, name=name, description=doc.format(**values) if values else doc,
                         batch_fn=getattr(self, options.batch) if options.batch else None, blocking=self.blocking,
                         defaults=defaults.get(name, {}), annotations=options.annotations or self.annotations)


def single_form(name: str, fn: Callable[..., Any], signature: ToolSignature, blocking: bool) -> Callable[..., Any]:
    """The handler the SDK registers for the tool itself: its arguments, the episode from ``_meta``."""
    run = invoker(fn, blocking)

    async def call(ctx: Context, **arguments: Any) -> str:
        if signature.episode is not None or signature.caller is not None:
            named = episode_of((ctx.request_context.meta or {}).get(wire.EPISODE), None)
            signature.bind(arguments, named, connection_of(ctx))
        return result_text(await run(**arguments))

    call.__name__ = call.__qualname__ = name  # the SDK names the arguments' schema after it
    call.__signature__ = signature.with_context()  # type: ignore[attr-defined]
    call.__annotations__ = {**{p.name: p.annotation for p in signature.parameters}, "ctx": Context, "return": str}
    setattr(call, LIGHT_CONTEXT, True)
    return call


def publish_tool(server: MCPServer, fn: Callable[..., Any], *, name: str | None = None,
                 description: str | None = None, batch_fn: BatchFn | None = None, blocking: bool = False,
                 defaults: Mapping[str, Any] | None = None, annotations: ToolAnnotations | None = None) -> None:
    """Register ``fn`` as tool ``name`` (default: its own name), with its batched form."""
    tool_name = name or fn.__name__
    signature = ToolSignature.of(fn, tool_name, defaults or {})
    meta = {wire.EPISODE_STATE: True} if signature.episode is not None or signature.caller is not None else None
    server.add_tool(single_form(tool_name, fn, signature, blocking), name=tool_name,
                    description=description if description is not None else inspect.getdoc(fn), meta=meta,
                    structured_output=False, annotations=annotations)
    publish_batch_form(server, tool_name, fn, signature, batch_fn, blocking)


def publish_toolsets(name: str, toolsets: Sequence[Toolset]) -> MCPServer:
    """An MCP server named ``name`` with every tool of ``toolsets``."""
    server = MCPServer(name, log_level="WARNING")
    for toolset in toolsets:
        toolset.publish(server)
    return server
