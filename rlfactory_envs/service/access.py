"""Who may call a served env: a token, checked on every HTTP request and every WebSocket handshake.

``--auth-token TOKEN`` (or ``RLF_ENV_AUTH_TOKEN``) is accepted in whichever form a protocol's own client can send:
``Authorization: Bearer TOKEN`` (the scheme in any case), ``X-API-Key: TOKEN`` (what the ``openreward`` client
sends its API key as), or HTTP basic credentials whose password is the token (what a client whose only setting is a
URL sends from ``http://rlf:TOKEN@host:port``: openenv-core's ``EnvClient`` and ``openenv validate`` do). Anything
else is a 401 with ``WWW-Authenticate: Bearer``; a refused WebSocket handshake gets the same 401, never a session.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import os
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN_VARIABLE = "RLF_ENV_AUTH_TOKEN"
UNAUTHORIZED = ("unauthorized: send the server's --auth-token as Authorization: Bearer TOKEN, X-API-Key: TOKEN, or "
                "in the URL as http://rlf:TOKEN@HOST:PORT")


def auth_token(given: str | None) -> str | None:
    """The token the server requires: ``--auth-token``, else ``RLF_ENV_AUTH_TOKEN``, else none."""
    token = given if given is not None else os.environ.get(TOKEN_VARIABLE)
    return token or None


def presented_tokens(headers: Iterable[tuple[bytes, bytes]]) -> list[bytes]:
    """The tokens a request's headers present: a bearer token, an API key, a basic password."""
    found = []
    for name, value in headers:
        if name == b"x-api-key":
            found.append(value.strip())
        elif name == b"authorization":
            scheme, _, credentials = value.strip().partition(b" ")
            if scheme.lower() == b"bearer":
                found.append(credentials.strip())
            elif scheme.lower() == b"basic":
                found.append(_basic_password(credentials.strip()))
    return found


def _basic_password(credentials: bytes) -> bytes:
    try:
        return base64.b64decode(credentials, validate=True).partition(b":")[2]
    except (binascii.Error, ValueError):
        return b""


class TokenGuard:
    """ASGI middleware: an HTTP request or WebSocket handshake that presents no valid token gets a 401."""

    def __init__(self, app: ASGIApp, token: str):
        self.app = app
        self.token = token.encode()

    def allows(self, scope: Scope) -> bool:
        return any(hmac.compare_digest(given, self.token) for given in presented_tokens(scope.get("headers") or ()))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.allows(scope):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"error": UNAUTHORIZED}).encode()
        headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                   (b"content-length", str(len(body)).encode())]
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": body})
        elif "websocket.http.response" in (scope.get("extensions") or {}):
            await send({"type": "websocket.http.response.start", "status": 401, "headers": headers})
            await send({"type": "websocket.http.response.body", "body": body})
        else:  # a server without the denial-response extension: refuse the handshake (403)
            await send({"type": "websocket.close", "code": 1008})
