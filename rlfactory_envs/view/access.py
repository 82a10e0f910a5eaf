"""Who may read ``rlf view``'s pages: anyone on this machine when it listens on loopback, only holders of the token
otherwise.

- Bound to loopback, a request must name a loopback host (``Host: 127.0.0.1:PORT``, ``localhost``, ``[::1]``): a
  web page elsewhere cannot read the trajectories through DNS rebinding.
- With a token (``--auth-token``, required beyond loopback), a request must carry it: ``Authorization: Bearer
  TOKEN`` (the scheme in any case), or the cookie the server sets when the page is opened as ``/?token=TOKEN`` (the
  address ``rlf view`` prints). Anything else gets ``401``. Tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

COOKIE = "rlf_view_token"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")


class ViewerAccess:
    """ASGI middleware enforcing the rules of the module docstring."""

    def __init__(self, app: ASGIApp, *, token: str | None, loopback: bool):
        self.app = app
        self.token = token
        self.loopback = loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name.lower(): value for name, value in scope.get("headers") or ()}
        if self.loopback and not is_loopback_host(headers.get(b"host", b"").decode("latin-1")):
            await _refuse(send, 403, "rlf view answers only requests for a loopback host (127.0.0.1, localhost)")
            return
        given = query_token(scope)
        if self.token is not None and given is not None and self._matches(given):
            cookie = f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
            await send({"type": "http.response.start", "status": 303,
                        "headers": [(b"location", b"/"), (b"set-cookie", cookie.encode("latin-1"))]})
            await send({"type": "http.response.body", "body": b""})
            return
        if self.token is None or self._matches(bearer(headers) or cookie_token(headers) or ""):
            await self.app(scope, receive, send)
            return
        await _refuse(send, 401, "unauthorized: open the address rlf view printed (it carries ?token=), or send "
                                 "Authorization: Bearer <token>")

    def _matches(self, given: str) -> bool:
        return hmac.compare_digest(given.encode("utf-8", "replace"), str(self.token).encode())


def is_loopback_host(host: str) -> bool:
    """Whether a ``Host`` header names this machine (any port)."""
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 or host.startswith("[") else host
    return name.lower() in LOOPBACK_HOSTS


def query_token(scope: Scope) -> str | None:
    """The ``token`` of the request's query string, when there is one."""
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
    return values[0] if values else None


def bearer(headers: dict[bytes, bytes]) -> str | None:
    """The token of an ``Authorization: Bearer`` header (the scheme in any case)."""
    scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def cookie_token(headers: dict[bytes, bytes]) -> str | None:
    """The token cookie ``ViewerAccess`` set, when the request carries it."""
    for part in headers.get(b"cookie", b"").decode("latin-1").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE:
            return value
    return None


async def _refuse(send: Send, status: int, message: str) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"www-authenticate", b"Bearer")]})
    await send({"type": "http.response.body", "body": message.encode()})
