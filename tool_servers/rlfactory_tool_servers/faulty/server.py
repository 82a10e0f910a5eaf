"""A fault-injection server: each tool misbehaves in one known way, on purpose, so a client's handling of it can be
tested against a real process.

- ``hang()``: never answers (waits forever, without blocking the server's other requests).
- ``slow_sometimes(p_slow, slow_ms)``: slow on a fraction ``p_slow`` of its calls, fast on the others. Which
  calls are slow is decided by a counter, not a random draw: call ``n`` (from 1, counted per process) is slow when
  ``floor(n * p_slow)`` grows, so exactly ``floor(N * p_slow)`` of the first ``N`` calls with the same ``p_slow``
  are slow (every 10th one for 0.1).
- ``crash(code, after_ms)``: ends the process with exit status ``code`` (``os._exit``: no cleanup, no answer),
  at once or ``after_ms`` milliseconds later, so that calls in flight meanwhile die with it.
- ``leak(mb)``: allocates ``mb`` MiB (every page written, so it is resident) and keeps it until the process ends.
- ``echo(text)``, ``pid()``: healthy answers, and the process id (so a test can kill the process from outside or
  read its memory).
- ``malformed(kind)``: the reply to this call is replaced by a malformed one, written on the wire itself (bypassing
  the SDK's serialization), so a client meets it as it would from a buggy server. Over stdio a server middleware
  writes one line on the protocol's stdout and then waits until the client cancels the request, so that line is
  the only reply the request gets; over streamable HTTP an ASGI middleware answers the POST itself (the tool does
  not run). ``kind``:

  - ``not_json``: a line (HTTP: a body, labelled ``application/json``) that is not JSON;
  - ``not_jsonrpc``: a JSON object that is no JSON-RPC message (``{"hello": "world"}``: no ``jsonrpc``, no ``id``);
  - ``unknown_id``: a well-formed result for the request id ``"no-such-request"``, which nobody sent;
  - ``bad_result``: a response to this request whose ``result`` has the wrong shape (``{"content": 5}``);
  - ``bad_error``: an error response to this request whose ``error`` has the wrong shape (``{"code": "oops"}``);
  - ``huge_line``: 10 MiB of ``x`` on one line (HTTP: one body), not JSON;
  - ``truncated``: the first half of a well-formed reply to this request (stdio: then a newline; HTTP: sent with
    the ``Content-Length`` of the whole, then the connection is closed);
  - stdio only: ``noise``: a line that is not JSON, then the usual reply, whose text is ``"noise, then this
    answer"``;
  - HTTP only: ``status_500``: status 500 with a plain-text body; ``content_type``: status 200 with a well-formed
    reply labelled ``text/html``.

  A batched request (``malformed_batch``) gets the malformed reply of its first element's kind, once, for the whole
  request. A kind the transport does not have is a tool error, and so is every kind in process (no wire).

``--refuse-start`` (or the ``RLF_FAULTY_REFUSE_START`` environment variable set to anything but "" or "0") makes
the server say so on stderr and exit with status 3 before it serves anything: over stdio the client sees a process
that exits during start, over HTTP nothing ever listens.

Every tool has a batched form (``NAME_batch``) like the other bundled servers, so a merging client meets the same
faults inside merged requests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server

from rlfactory_tool_servers.toolset import publish_tool

PROG = "python -m rlfactory_tool_servers.faulty"
REFUSE_VARIABLE = "RLF_FAULTY_REFUSE_START"
REFUSE_EXIT_STATUS = 3
MAX_SLOW_MS = 600_000
MAX_LEAK_MB = 4096  # per call: a typo should not take the machine down

MALFORMED_KINDS = ("not_json", "not_jsonrpc", "unknown_id", "bad_result", "bad_error", "huge_line", "truncated")
STDIO_ONLY_KINDS = ("noise",)
HTTP_ONLY_KINDS = ("status_500", "content_type")
ALL_KINDS = (*MALFORMED_KINDS, *STDIO_ONLY_KINDS, *HTTP_ONLY_KINDS)
HUGE_LINE_BYTES = 10 << 20
UNKNOWN_REQUEST_ID = "no-such-request"
NOISE_ANSWER = "noise, then this answer"
MAX_SHOWN_KIND_CHARS = 40  # of an unknown kind, quoted in the error

_held: list[bytearray] = []  # what leak() allocated; freed only when the process ends
_slow_counts: dict[float, int] = {}  # calls of slow_sometimes so far, per p_slow


async def hang() -> str:
    """Never answer: wait forever (for testing a client's deadline)."""
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


async def slow_sometimes(p_slow: float = 0.1, slow_ms: int = 1000) -> str:
    """Answer after `slow_ms` milliseconds on a fraction `p_slow` (0 to 1) of calls, at once on the others
    (deterministic: every 1/p_slow-th call with this p_slow is slow)."""
    if not 0 <= p_slow <= 1:
        raise ToolError(f"p_slow must be between 0 and 1, got {p_slow}")
    if not 0 <= slow_ms <= MAX_SLOW_MS:
        raise ToolError(f"slow_ms must be between 0 and {MAX_SLOW_MS}, got {slow_ms}")
    count = _slow_counts[p_slow] = _slow_counts.get(p_slow, 0) + 1
    if math.floor(count * p_slow) > math.floor((count - 1) * p_slow):
        await asyncio.sleep(slow_ms / 1000)
        return f"slow: {slow_ms} ms"
    return "fast"


async def crash(code: int = 1, after_ms: int = 0) -> str:
    """End this server process with exit status `code`, `after_ms` milliseconds from now (simulates a crash: no
    answer, no cleanup)."""
    if after_ms > 0:
        await asyncio.sleep(min(after_ms, MAX_SLOW_MS) / 1000)
    os._exit(code)


def leak(mb: int = 10) -> str:
    """Allocate `mb` MiB (1 to 4096) and hold it until the process ends; returns the MiB held in all."""
    if not 1 <= mb <= MAX_LEAK_MB:
        raise ToolError(f"mb must be between 1 and {MAX_LEAK_MB}, got {mb}")
    _held.append(bytearray(b"\x01") * (mb << 20))  # written, so resident, not merely reserved
    return f"holding {sum(len(block) for block in _held) >> 20} MiB"


def echo(text: str = "ok") -> str:
    """Return `text` unchanged (a healthy call)."""
    return text


def pid() -> int:
    """The operating-system process id of this server."""
    return os.getpid()


def malformed(kind: str = "not_json") -> str:
    """Answer this call with a malformed MCP reply of the given `kind` (see the server's documentation), written on
    the wire instead of the real reply."""
    if kind not in ALL_KINDS:
        shown = kind if len(kind) <= MAX_SHOWN_KIND_CHARS else kind[:MAX_SHOWN_KIND_CHARS] + "..."
        raise ToolError(f"kind must be one of {', '.join(ALL_KINDS)}; got {shown!r}")
    if kind == "noise" and _wire is not None:
        return NOISE_ANSWER
    # Any other kind over its transport was answered before the tool ran (see reply_malformed, MalformedHttpReplies).
    raise ToolError(f"kind {kind!r} cannot be sent here: {', '.join(STDIO_ONLY_KINDS)} only over stdio, "
                    f"{', '.join(HTTP_ONLY_KINDS)} only over HTTP, none in process")


def requested_kind(params: Any) -> str | None:
    """The kind a ``tools/call`` with these ``params`` asks ``malformed`` (or ``malformed_batch``, from its first
    element) for; ``None`` for a call to another tool or one that cannot be read."""
    if not isinstance(params, dict) or params.get("name") not in ("malformed", "malformed_batch"):
        return None
    arguments = params.get("arguments") or {}
    if not isinstance(arguments, dict):
        return None
    if params["name"] == "malformed_batch":
        calls = arguments.get("calls")
        if not (isinstance(calls, list) and calls and isinstance(calls[0], dict)):
            return None  # no element to take the kind from (a request that collects results, say)
        arguments = calls[0]
    kind = arguments.get("kind", "not_json")
    return kind if isinstance(kind, str) else None


async def reply_malformed(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware, over stdio: a call to ``malformed`` gets its malformed line on the wire (see the module's
    docstring) instead of the reply; any other request goes on unchanged."""
    kind = requested_kind(ctx.params) if _wire is not None and ctx.method == "tools/call" else None
    if _wire is None or kind not in (*MALFORMED_KINDS, *STDIO_ONLY_KINDS):
        return await call_next(ctx)
    if kind == "noise":
        await _wire.write("this line is not JSON: a server printing to its stdout\n")
        return await call_next(ctx)
    await _wire.write(malformed_reply(kind, ctx.request_id) + "\n")
    await asyncio.Event().wait()  # the line above is the only reply this request gets
    raise AssertionError("unreachable")


def well_formed_reply(request_id: Any) -> str:
    """A reply to a ``tools/call`` with id ``request_id``, as it should be."""
    result = {"content": [{"type": "text", "text": "a well-formed reply"}], "isError": False}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result})


def malformed_reply(kind: str, request_id: Any) -> str:
    """What a server of a kind of ``MALFORMED_KINDS`` sends instead of its reply to request ``request_id`` (the line
    without its newline, or the HTTP body)."""
    if kind == "not_json":
        return "this is not JSON {"
    if kind == "not_jsonrpc":
        return json.dumps({"hello": "world"})
    if kind == "unknown_id":
        return json.dumps({"jsonrpc": "2.0", "id": UNKNOWN_REQUEST_ID, "result": {"content": []}})
    if kind == "bad_result":
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": 5}})
    if kind == "bad_error":
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": "oops"}})
    if kind == "huge_line":
        return "x" * HUGE_LINE_BYTES
    if kind == "truncated":
        whole = well_formed_reply(request_id)
        return whole[:len(whole) // 2]
    raise ValueError(f"not a kind of MALFORMED_KINDS: {kind!r}")


class StdioWire:
    """The stdio transport's stdout, shared by the SDK's writer and ``malformed``: each ``write`` reaches the pipe
    whole and alone, so a 10 MiB line never interleaves with a reply."""

    def __init__(self, fd: int):
        self._file = anyio.wrap_file(open(fd, "w", encoding="utf-8", closefd=False))
        self._lock = anyio.Lock()

    async def write(self, text: str) -> None:
        async with self._lock:
            await self._file.write(text)
            await self._file.flush()

    async def flush(self) -> None:
        """Nothing to do: every ``write`` flushed already."""


_wire: StdioWire | None = None  # set while the server runs over stdio


class MalformedHttpReplies:
    """ASGI middleware: a POST that calls ``malformed`` (or its batched form) with a kind of ``MALFORMED_KINDS`` or
    ``HTTP_ONLY_KINDS`` is answered here, malformed as the kind says; every other request goes to ``app``
    unchanged."""

    def __init__(self, app: Callable[..., Awaitable[None]]):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Awaitable[Any]],
                       send: Callable[..., Awaitable[None]]) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            event = await receive()
            if event["type"] != "http.request":
                return  # the client went away
            chunks.append(event.get("body", b""))
            if not event.get("more_body", False):
                break
        body = b"".join(chunks)
        call = _malformed_call(body)
        if call is not None and call[1] in (*MALFORMED_KINDS, *HTTP_ONLY_KINDS):
            await _send_malformed(send, *call)
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def _malformed_call(body: bytes) -> tuple[Any, str] | None:
    """``(request id, kind)`` when ``body`` is a JSON-RPC request calling ``malformed`` (or its batched form)."""
    try:
        request = json.loads(body)
    except ValueError:
        return None
    if not isinstance(request, dict) or request.get("method") != "tools/call" or "id" not in request:
        return None
    kind = requested_kind(request.get("params"))
    return None if kind is None else (request["id"], kind)


async def _send_malformed(send: Callable[..., Awaitable[None]], request_id: Any, kind: str) -> None:
    if kind == "status_500":
        status, content_type, body = 500, "text/plain", b"Internal Server Error"
    else:
        status = 200
        content_type = "text/html" if kind == "content_type" else "application/json"
        whole = kind in ("content_type", "truncated")  # truncated: cut below, in the sending
        body = (well_formed_reply(request_id) if whole else malformed_reply(kind, request_id)).encode()
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    if kind == "truncated":  # half the body, and no end: the server closes the connection
        await send({"type": "http.response.body", "body": body[:len(body) // 2], "more_body": True})
        return
    await send({"type": "http.response.body", "body": body})


class FaultyServer(MCPServer):
    """``MCPServer`` whose transports let ``malformed`` put malformed replies on the wire."""

    async def run_stdio_async(self) -> None:
        """Serve over stdio through a ``StdioWire`` on the real stdout; fd 1 then points at stderr, as with the SDK's
        own stdout (stray output misses the wire)."""
        global _wire
        _wire = StdioWire(os.dup(1))
        os.dup2(2, 1)
        async with stdio_server(stdout=_wire) as (read_stream, write_stream):  # type: ignore[arg-type]
            # MCPServer has no public way to serve given streams; this is its own run_stdio_async with our stdout.
            lowlevel = self._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    def streamable_http_app(self, **options: Any) -> Any:
        return MalformedHttpReplies(super().streamable_http_app(**options))


def options_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The faulty server's own option: ``--refuse-start``."""
    parser = argparse.ArgumentParser(prog=prog, description="MCP server: fault injection (hang, slow calls, crash, "
                                     "memory leak, malformed replies, refused start) for reliability tests of MCP "
                                     "clients.")
    parser.add_argument("--refuse-start", action="store_true",
                        help=f"exit with status {REFUSE_EXIT_STATUS} at start instead of serving (also: "
                             f"{REFUSE_VARIABLE}=1)")
    return parser


def describe_data(options: argparse.Namespace) -> str:
    """There is none: the tools misbehave on purpose."""
    return "none (the tools hang, are slow, crash, leak memory or reply malformed on purpose)"


def refuses_start(options: argparse.Namespace) -> bool:
    return options.refuse_start or os.environ.get(REFUSE_VARIABLE, "") not in ("", "0")


def build_server(argv: Sequence[str] = (), prog: str = PROG) -> MCPServer:
    """Build the faulty server; ``SystemExit(3)`` when told to refuse to start."""
    options = options_parser(prog).parse_args(list(argv))
    if refuses_start(options):
        print(f"{prog}: refusing to start (--refuse-start or {REFUSE_VARIABLE}), as asked", file=sys.stderr,
              flush=True)
        raise SystemExit(REFUSE_EXIT_STATUS)
    server = FaultyServer("faulty", log_level="WARNING")
    for tool in (hang, slow_sometimes, crash, leak, echo, pid, malformed):
        publish_tool(server, tool)
    server.middleware.append(reply_malformed)
    return server
