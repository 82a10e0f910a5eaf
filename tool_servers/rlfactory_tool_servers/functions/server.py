"""Any typed Python function as an MCP tool, in the MCP SDK's own style: the signature is the schema, the docstring
the description.

``build_server(["package.module:function", ...])`` serves each function under its own name, with a batched form
(``NAME_batch``, see ``toolset``) that the toolbox merges concurrent calls into. A function may be sync or async; a
sync one runs in a worker thread, so a slow tool never stalls the server's other calls (a batch's calls share one
worker thread, and another joins whenever one call holds it: ``batch_runs.ThreadedRun``). A function that raises
answers with an error result naming the tool, the exception's type and its message (``Error executing tool convert:
ValueError: cannot convert mass to length``), which the model reads, and the server logs nothing for it: the
function is the user's, and its reasons are meant for the model (an ``MCPServer`` of one's own shows the model only
``Error executing tool convert`` unless the tool raises the SDK's ``ToolError``). A parameter annotated
``toolset.Episode`` receives the episode the call belongs to (from the request's ``_meta``), so a function can keep
state per episode.

Functions that cannot be imported by name (a lambda, a closure, one defined in a notebook) are served in-process
only: ``local_ref(fn)`` registers ``fn`` in this process and returns the ``"local:..."`` reference to pass instead.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import itertools
import threading
from collections.abc import Callable, Sequence
from typing import Any

from mcp import MCPError
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from rlfactory_tool_servers.functions.callable_ref import resolve_callable
from rlfactory_tool_servers.toolset import publish_tool

PROG = "python -m rlfactory_tool_servers.functions"
LOCAL_PREFIX = "local:"
_LOCAL: dict[str, Callable[..., Any]] = {}
_LOCAL_LOCK = threading.Lock()
_LOCAL_NUMBERS = itertools.count()


def local_ref(fn: Callable[..., Any]) -> str:
    """A reference that ``build_server`` resolves to ``fn`` in this process (the same one for the same ``fn``)."""
    with _LOCAL_LOCK:
        for ref, known in _LOCAL.items():
            if known is fn:
                return ref
        ref = f"{LOCAL_PREFIX}{getattr(fn, '__qualname__', 'tool')}#{next(_LOCAL_NUMBERS)}"
        _LOCAL[ref] = fn
        return ref


def resolve_function(ref: str) -> Callable[..., Any]:
    """The function ``ref`` names (``package.module:function``, a dotted attribute path allowed after the colon,
    or a ``local_ref``); ``ValueError`` saying what is wrong."""
    if ref.startswith(LOCAL_PREFIX):
        with _LOCAL_LOCK:
            fn = _LOCAL.get(ref)
        if fn is None:
            raise ValueError(f"{ref!r} was registered in another process; in-process functions cannot be served "
                             "over stdio or HTTP (give an importable 'package.module:function')")
        return fn
    return resolve_callable(ref)


def options_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The server's own options (the transport options are ``rlfactory_tool_servers.launch``'s)."""
    parser = argparse.ArgumentParser(prog=prog, description="MCP server: typed Python functions as tools.")
    parser.add_argument("functions", nargs="+", metavar="package.module:function",
                        help="the functions to serve; each tool is named after its function")
    return parser


def describe_data(options: argparse.Namespace) -> str:
    """The functions ``options`` name, for the start message."""
    return f"the Python functions {', '.join(options.functions)}"


def build_server(argv: Sequence[str], prog: str = PROG) -> MCPServer:
    """Serve the functions named in ``argv``; two with one name, or a bad reference, is a usage error."""
    parser = options_parser(prog)
    options = parser.parse_args(list(argv))
    server = MCPServer("functions", log_level="WARNING")
    seen: dict[str, str] = {}
    for ref in options.functions:
        try:
            fn = resolve_function(ref)
        except ValueError as exc:
            parser.error(str(exc))
        name = getattr(fn, "__name__", "")
        if not name.isidentifier():
            parser.error(f"{ref!r}: a tool needs a function with a name (a lambda has none: define it with def)")
        if name in seen:
            parser.error(f"{ref!r} and {seen[name]!r} are both named {name!r}: tool names must be unique")
        seen[name] = ref
        publish_tool(server, reasons_for_the_model(fn), name=name, description=inspect.getdoc(fn), blocking=True)
    return server


def reasons_for_the_model(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (same signature, sync or async) with any exception it raises turned into a ``ToolError`` that says
    ``Type: message``: the SDK shows a ``ToolError``'s message to the model and logs it without a traceback."""
    def reason(exc: Exception) -> ToolError:
        return ToolError(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def call_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except (ToolError, MCPError):
                raise
            except Exception as exc:  # noqa: BLE001 - the user's function: its reason is the model's to read
                raise reason(exc) from exc

        return _typed_as(call_async, fn)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (ToolError, MCPError):
            raise
        except Exception as exc:  # noqa: BLE001 - see call_async
            raise reason(exc) from exc

    return _typed_as(call, fn)


def _typed_as(wrapper: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    """``wrapper`` with exactly ``fn``'s annotations (none for a builtin, whose signature is its text signature)."""
    wrapper.__annotations__ = dict(getattr(fn, "__annotations__", None) or {})
    return wrapper
