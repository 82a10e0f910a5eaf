"""The command line every tool server shares: one parser for the server's own options and the shared ones (transport,
where to listen, how much to log), a start message, request logging, and the server run until stopped.

``serve(package)`` is a server package's ``__main__``; ``rlf serve NAME`` calls it with its own ``prog`` and the
options that point the server at its family's embedded sample. Everything said here goes to stderr: stdout carries
the protocol of the stdio transport. Over HTTP, ``http_guard`` says who may call: a bearer token, the Host/Origin
check, a warning for a server open to the network; ``http_sessions`` bounds the MCP sessions per client.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import gc
import importlib.util
import logging
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

from rlfactory_tool_servers import wire
from rlfactory_tool_servers.fast_lane import FastLane, lines_past
from rlfactory_tool_servers.http_guard import (
    TOKEN_VARIABLE, BearerTokenGuard, auth_token, exposure_warning, transport_security)
from rlfactory_tool_servers.http_sessions import (
    DEFAULT_IDLE_S, DEFAULT_MAX_SESSIONS, DEFAULT_PER_CLIENT, SessionGuard)
from rlfactory_tool_servers.request_log import log_requests
from rlfactory_tool_servers.stdio_pipes import stdio_pipes

LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class ServerPackage(Protocol):
    """What a tool server package (``rlfactory_tool_servers.NAME``) exports, for ``serve``."""

    __name__: str

    def options_parser(self, prog: str = ...) -> argparse.ArgumentParser:
        """The server's own options, in a parser named ``prog``."""

    def build_server(self, argv: Sequence[str], prog: str = ...) -> MCPServer:
        """The server its own options ``argv`` ask for; a usage error (``SystemExit``) is named ``prog``."""

    def describe_data(self, options: argparse.Namespace) -> str:
        """What the server its parsed ``options`` ask for answers from, in a few words."""


def transport_parser() -> argparse.ArgumentParser:
    """The options every server shares, as a parent parser (it has no ``-h``)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    shared = parser.add_argument_group("transport and logging (every server)")
    shared.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                        help="stdio (default) or streamable HTTP")
    shared.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1, loopback only)")
    shared.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000; 0 picks a free one)")
    shared.add_argument("--path", default="/mcp", help="HTTP endpoint path (default /mcp)")
    shared.add_argument("--auth-token", default=None,
                        help=f"HTTP: require Authorization: Bearer TOKEN on every request (default: ${TOKEN_VARIABLE} "
                             "if set; clients send it from the headers of their mcpServers entry)")
    shared.add_argument("--allowed-hosts", default="",
                        help="HTTP beyond loopback: comma-separated host names clients use to reach this server; a "
                             "request with another Host or Origin header is refused (DNS-rebinding protection, on by "
                             "default for a loopback bind)")
    shared.add_argument("--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS,
                        help=f"HTTP: MCP sessions open at once (default {DEFAULT_MAX_SESSIONS}); at the limit the least "
                             "recently used idle one ends, or a new one is refused (503) when all are busy")
    shared.add_argument("--max-sessions-per-client", type=int, default=DEFAULT_PER_CLIENT,
                        help=f"HTTP: MCP sessions one client address may hold (default {DEFAULT_PER_CLIENT}); at the "
                             "limit its own least recently used idle one ends")
    shared.add_argument("--session-idle-s", type=float, default=DEFAULT_IDLE_S,
                        help=f"HTTP: an MCP session idle this long ends (default {DEFAULT_IDLE_S:g} s; the SDK's is "
                             "30 minutes)")
    shared.add_argument("--no-fast-lane", action="store_true",
                        help="stdio: answer every request through the MCP SDK's own request path (by default a "
                             "tools/call of a toolset tool skips the SDK's per-request machinery and is answered as "
                             "the SDK answers it: see rlfactory_tool_servers.fast_lane)")
    shared.add_argument("--log-level", choices=LOG_LEVELS, default="warning",
                        help="warning (default): the start message and problems; info: also one line per MCP request "
                             "(method, tool, duration, is_error) and the HTTP access log; debug: also each request's "
                             "parameters and the MCP SDK's own debug log; error: errors only, no start message")
    return parser


def command_parser(package: ServerPackage, prog: str,
                   samples: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    """One parser, named ``prog``, for ``package``'s own options and the shared ones; its help says which embedded
    ``samples`` options stand in when none of them is given."""
    own = package.options_parser(prog)
    epilog = own.epilog
    if samples:
        given = " ".join(f"{option} {value}" for option, value in samples.items())
        note = (f"Without {' or '.join(samples)}, it serves the embedded sample ({given}), a small one for trying "
                "things out.")
        epilog = f"{epilog}\n\n{note}" if epilog else note
    return argparse.ArgumentParser(prog=prog, description=own.description, epilog=epilog,
                                   parents=[own, transport_parser()], add_help=False, allow_abbrev=False)


def serve(package: ServerPackage, argv: Sequence[str] | None = None, *, prog: str | None = None,
          samples: Mapping[str, str] | None = None) -> None:
    """Run ``package``'s server as ``argv`` (default: this process's arguments) asks, until it is stopped.

    ``samples``: options (``{"--corpus": path}``) that point the server at an embedded sample, added when ``argv``
    gives none of them (nor any of the package's ``OTHER_DATA_OPTIONS``, if it has some); the start message then says so, and how to serve other data.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = prog or f"python -m {package.__name__}"
    samples = dict(samples or {})
    parser = command_parser(package, prog, samples)
    # The package's other data options (search's --retriever-url) stand in for the sample as its own options do.
    given = [*samples, *getattr(package, "OTHER_DATA_OPTIONS", ())]
    filled = {} if any(_gives(argv, option) for option in given) else samples
    argv += [part for option, value in filled.items() for part in (option, value)]
    options = parser.parse_args(argv)
    _, server_argv = transport_parser().parse_known_args(argv)
    # Before the server is built: the SDK configures the root logger only when nobody has.
    logging.basicConfig(level=options.log_level.upper(), format=LOG_FORMAT, stream=sys.stderr, force=True)
    server = package.build_server(server_argv, prog=prog)
    server.middleware.append(log_requests)
    tools = [tool.name for tool in asyncio.run(server.list_tools()) if wire.BATCH_OF not in (tool.meta or {})]

    def announce(where: str) -> None:
        if options.log_level != "error":
            lines = start_lines(prog, server.name, tools, where, package.describe_data(options), filled)
            print("\n".join(lines), file=sys.stderr, flush=True)

    # What is built by now (the server, its data, every module) lives as long as the process: out of the collector's
    # sight, full collections cost what the requests allocate, not the whole heap (tens of ms at thousands of calls).
    gc.collect()
    gc.freeze()
    if options.transport == "stdio":
        announce("over stdio")
        anyio.run(run_stdio, server, not options.no_fast_lane, backend_options={"use_uvloop": has_uvloop()})
    else:
        run_http(server, options, prog, lambda port: announce(
            f"over streamable HTTP at {http_url(options.host, port, options.path)}"))


async def run_stdio(server: MCPServer, fast_lane: bool = True) -> None:
    """``server.run_stdio_async()``, with the loop's own pipes as its stdin and stdout when they are pipes (see
    ``stdio_pipes``) and the server has no stdio transport of its own; ``fast_lane``: the ``tools/call`` requests
    it can take skip the SDK's request path (``fast_lane``)."""
    if type(server).run_stdio_async is not MCPServer.run_stdio_async:
        await server.run_stdio_async()
        return
    async with stdio_pipes() as pipes:
        if pipes is None:
            await server.run_stdio_async()
            return
        lowlevel = server._lowlevel_server  # what run_stdio_async runs, given our streams (mcp 2.3)
        lines, writer = pipes
        lane = FastLane(server, writer) if fast_lane else None
        try:
            async with stdio_server(lines if lane is None else lines_past(lane, lines),  # type: ignore[arg-type]
                                    writer) as (read_stream, write_stream):  # type: ignore[arg-type]
                await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        finally:
            if lane is not None:
                lane.close()


def has_uvloop() -> bool:
    """Whether uvloop is installed (a dependency but on Windows): the stdio server runs on its loop, whose callbacks,
    timers and pipes cost a fraction of asyncio's (a server of thousands of calls a step pays them per call); uvicorn
    picks it by itself."""
    return importlib.util.find_spec("uvloop") is not None


def start_lines(prog: str, name: str, tools: Sequence[str], where: str, data: str,
                samples: Mapping[str, str]) -> list[str]:
    """What a server says when it starts: what it serves, where, from which data; and when the data is the
    embedded sample (the ``samples`` options were added), that it is, and how to serve other data."""
    lines = [f'{prog}: serving "{name}" (tools: {", ".join(tools) or "none"}) {where}; data: {data}']
    if samples:
        lines.append(f"{prog}: no {' or '.join(samples)} given, so the data is the embedded sample, a small one for "
                     f"trying things out; serve your own with {' and '.join(samples)} (see {prog} --help)")
    return lines


def http_url(host: str, port: int, path: str) -> str:
    """The URL a client reaches the server at (an IPv6 address in brackets)."""
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{path}"


class AnnouncingServer(uvicorn.Server):
    """A uvicorn server that calls ``on_listening(port)`` once it listens, not before: a client may connect as soon
    as it reads the start message."""

    def __init__(self, config: uvicorn.Config, on_listening: Callable[[int], None]) -> None:
        super().__init__(config)
        self._on_listening = on_listening

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            ports = [sock.getsockname()[1] for listener in self.servers for sock in listener.sockets]
            self._on_listening(ports[0] if ports else self.config.port)


def run_http(server: MCPServer, options: argparse.Namespace, prog: str, on_listening: Callable[[int], None]) -> None:
    """Serve ``server`` over streamable HTTP where ``options`` say; uvicorn logs (its access log included) through
    the root logger, at ``options.log_level``."""
    allowed = [name.strip() for name in options.allowed_hosts.split(",") if name.strip()]
    if min(options.max_sessions, options.max_sessions_per_client) < 1 or not options.session_idle_s > 0:
        raise SystemExit(f"{prog}: --max-sessions and --max-sessions-per-client must be at least 1, "
                         "--session-idle-s positive")
    app: Any = server.streamable_http_app(streamable_http_path=options.path, json_response=True, host=options.host,
                                          transport_security=transport_security(options.host, allowed),
                                          session_idle_timeout=options.session_idle_s, max_sessions=None)
    app = SessionGuard(app, options.path, max_sessions=options.max_sessions,
                       per_client=options.max_sessions_per_client, idle_s=options.session_idle_s)
    token = auth_token(options.auth_token)
    if token is not None:
        app = BearerTokenGuard(app, token)
    warning = exposure_warning(prog, options.host, token, allowed)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    problem = port_problem(options.host, options.port)
    if problem is not None:
        print(f"{prog}: error: {problem}", file=sys.stderr, flush=True)
        raise SystemExit(2)
    config = uvicorn.Config(app, host=options.host, port=options.port, log_level=options.log_level, log_config=None)
    AnnouncingServer(config, on_listening).run()


def port_problem(host: str, port: int) -> str | None:
    """Why the server cannot listen on ``host:port`` (in use, or a privileged port), with the fix; ``None`` when
    it can, or when only uvicorn can tell (an unknown host)."""
    if port == 0:
        return None
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError):
        return None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a port in TIME_WAIT is free
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return (f"port {port} on {host} is in use (another server listens there); pick another with "
                        "--port PORT, or --port 0 for a free one (the start message says which)")
            if exc.errno == errno.EACCES:
                return f"port {port} needs privileges to listen on; pick one above 1023, or --port 0 for a free one"
    return None


def _gives(argv: Sequence[str], option: str) -> bool:
    return any(arg == option or arg.startswith(f"{option}=") for arg in argv)
