"""Who may talk to a tool server over HTTP: a bearer token, the Host/Origin check, and a loud word when neither
protects a server listening beyond loopback.

- ``--auth-token TOKEN`` (or the ``RLF_MCP_AUTH_TOKEN`` environment variable): every request must carry
  ``Authorization: Bearer TOKEN`` (the scheme in any letter case, as RFC 9110 reads it; the token compared in
  constant time), else ``401`` with ``WWW-Authenticate: Bearer``. ``rlf serve reward`` uses the same guard.
  The toolbox sends it from the ``headers`` of the server's ``mcpServers`` entry.
- The MCP SDK's DNS-rebinding protection (a foreign ``Host`` or ``Origin`` is refused) is on for a loopback bind;
  ``--allowed-hosts`` turns it on for another bind, with the names clients use to reach the server.
- A server bound beyond loopback without a token says so at start, on stderr: anyone who reaches the port can
  call its tools.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
from collections.abc import Sequence

from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN_VARIABLE = "RLF_MCP_AUTH_TOKEN"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    """Whether binding to ``host`` listens on this machine only."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def auth_token(given: str | None, variable: str = TOKEN_VARIABLE) -> str | None:
    """The token the server requires: ``--auth-token``, else the environment ``variable``, else none."""
    token = given if given is not None else os.environ.get(variable)
    return token or None


def transport_security(host: str, allowed_hosts: Sequence[str]) -> TransportSecuritySettings | None:
    """The Host/Origin check for a server bound to ``host``: the SDK's loopback default when ``allowed_hosts`` is
    empty (``None``), else those names (an IPv6 address in brackets), with any port, and their ``http``/``https``
    origins."""
    if not allowed_hosts:
        return None
    patterns = [pattern for name in allowed_hosts for pattern in (name, f"{name}:*")]
    origins = [f"{scheme}://{pattern}" for pattern in patterns for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=patterns,
                                     allowed_origins=origins)


def exposure_warning(prog: str, host: str, token: str | None, allowed_hosts: Sequence[str]) -> str | None:
    """The start-up warning for a server anyone on the network can call, or ``None``."""
    if token or is_loopback(host):
        return None
    check = "" if allowed_hosts else " and no --allowed-hosts (a foreign Host header is not refused)"
    return (f"{prog}: WARNING: listening on {host} with no --auth-token{check}: anyone who can reach this port can "
            f"call every tool. Set --auth-token (or {TOKEN_VARIABLE}) and send it from the client's mcpServers entry "
            "as \"headers\": {\"Authorization\": \"Bearer <token>\"}, or bind to 127.0.0.1.")


def bearer_token(header: bytes) -> bytes | None:
    """The credentials of an ``Authorization`` header of the Bearer scheme (its name in any letter case), else
    ``None``."""
    scheme, _, credentials = header.strip().partition(b" ")
    return credentials.strip() if scheme.lower() == b"bearer" else None


class BearerTokenGuard:
    """ASGI middleware: an HTTP request without ``Authorization: Bearer <token>`` gets ``401``."""

    def __init__(self, app: ASGIApp, token: str):
        self.app = app
        self.expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = bearer_token(dict(scope.get("headers") or ()).get(b"authorization", b""))
        if given is not None and hmac.compare_digest(given, self.expected):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"error": "unauthorized: send Authorization: Bearer <token> (the server's --auth-token)"})
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
        await send({"type": "http.response.body", "body": body.encode()})
