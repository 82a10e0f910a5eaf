"""The command line every tool server shares: pick a transport, bind to loopback unless told otherwise."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from mcp.server.mcpserver import MCPServer


def transport_parser() -> argparse.ArgumentParser:
    """Options common to all servers; a server's own options are parsed by its ``build_server``."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                        help="stdio (default) or streamable HTTP")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1, loopback only)")
    parser.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    parser.add_argument("--path", default="/mcp", help="HTTP endpoint path (default /mcp)")
    return parser


def serve(build_server: Callable[[Sequence[str]], MCPServer], argv: Sequence[str] | None = None) -> None:
    """Parse the transport options out of ``argv``, build the server from the rest, and run it until stopped."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "-h" in argv or "--help" in argv:
        transport_parser().print_help()
        print()
    transport, rest = transport_parser().parse_known_args(argv)
    server = build_server(rest)
    if transport.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=transport.host, port=transport.port,
                   streamable_http_path=transport.path, json_response=True)
