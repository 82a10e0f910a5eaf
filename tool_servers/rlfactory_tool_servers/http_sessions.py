"""MCP sessions over streamable HTTP, bounded per client: a flood of sessions from one client cannot lock others out.

The MCP SDK keeps a stateful session (the 2025 protocol's) until its client deletes it or it is idle for 30 minutes,
and refuses a new one with ``503`` once 10,000 are open: about 10,000 idle sessions (a leaking client, or a
hostile one) left every new client of that protocol refused for half an hour. ``SessionGuard`` sits in front of the
SDK's app and, for each request that would open a session:

- ends the sessions idle longer than ``idle_s`` (300 s by default; the SDK is told the same, so it also ends them
  while nobody asks);
- when the client (the peer's address) holds ``per_client`` sessions already, ends its least recently used idle one
  (a client that leaks sessions pays with its own), or answers ``503`` when all of them are busy;
- when ``max_sessions`` are open in all, ends the least recently used idle session of the client holding the most,
  or answers ``503`` when every session is busy.

A session is ended as its client would end it, with a ``DELETE`` through the SDK's own app; its id answers ``404``
from then on and the client opens another (the toolbox reconnects). Requests of the 2026 protocol open no session
and pass as they are. The guard learns of a session from the ``mcp-session-id`` header of the answer that opened
it, and forgets one its client deletes or the SDK no longer knows (``404``).
"""

from __future__ import annotations

import json
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["DEFAULT_IDLE_S", "DEFAULT_MAX_SESSIONS", "DEFAULT_PER_CLIENT", "SessionGuard"]

DEFAULT_MAX_SESSIONS = 4096
DEFAULT_PER_CLIENT = 256
DEFAULT_IDLE_S = 300.0
SESSION_HEADER = b"mcp-session-id"


@dataclass
class _Session:
    client: str
    host: bytes | None
    """The ``Host`` header it was opened with (the SDK checks it on the ``DELETE`` that ends it)."""
    last_used: float
    in_flight: int = 0


class SessionGuard:
    """ASGI middleware bounding the MCP sessions of the app's ``path`` (see the module docstring)."""

    def __init__(self, app: ASGIApp, path: str, *, max_sessions: int = DEFAULT_MAX_SESSIONS,
                 per_client: int = DEFAULT_PER_CLIENT, idle_s: float = DEFAULT_IDLE_S):
        if max_sessions < 1 or per_client < 1 or not idle_s > 0:
            raise ValueError("max_sessions and per_client must be at least 1, idle_s positive")
        self.app, self.path = app, path
        self.max_sessions, self.per_client, self.idle_s = max_sessions, per_client, idle_s
        self.sessions: OrderedDict[str, _Session] = OrderedDict()  # least recently used first
        self.held: Counter[str] = Counter()  # sessions (and openings under way) per client
        self.ended = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != self.path.rstrip("/"):
            await self.app(scope, receive, send)
            return
        given = _header(scope, SESSION_HEADER)
        if given is not None:
            await self._in_session(given.decode("latin-1"), scope, receive, send)
        elif scope["method"] == "POST":
            await self._opening(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _in_session(self, session_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        session = self.sessions.get(session_id)
        if session is None:  # not one of ours (the SDK answers 404)
            await self.app(scope, receive, send)
            return
        session.in_flight += 1
        self.sessions.move_to_end(session_id)
        status: list[int] = []
        try:
            await self.app(scope, receive, _watching(send, status, []))
        finally:
            session.in_flight -= 1
            session.last_used = time.monotonic()
        if status and (status[0] == 404 or (scope["method"] == "DELETE" and status[0] < 300)):
            self._forget(session_id)

    async def _opening(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = (scope.get("client") or ("local",))[0]
        refusal = await self._make_room(client)
        if refusal is not None:
            await _refuse(send, refusal)
            return
        self.held[client] += 1  # counted while it opens, so concurrent openings cannot overshoot
        status: list[int] = []
        opened: list[str] = []
        try:
            await self.app(scope, receive, _watching(send, status, opened))
        finally:
            self.held[client] -= 1
        if opened and status and status[0] < 300:
            self.held[client] += 1
            self.sessions[opened[0]] = _Session(client, _header(scope, b"host"), time.monotonic())
        if not self.held[client]:
            del self.held[client]

    async def _make_room(self, client: str) -> str | None:
        """End what must end for ``client`` to open a session; why it cannot, else ``None``."""
        now = time.monotonic()
        for session_id, session in list(self.sessions.items()):
            if now - session.last_used <= self.idle_s:
                break  # least recently used first: the rest are fresher
            if not session.in_flight:
                await self._end(session_id)
        if self.held[client] >= self.per_client:
            idle = self._idle(lambda session: session.client == client)
            if idle is None:
                return (f"this client has {self.held[client]} MCP sessions open and busy, the most one client may "
                        "hold; end those it no longer uses (DELETE) or wait for one to finish")
            await self._end(idle)
        if sum(self.held.values()) >= self.max_sessions:
            biggest = max(self.held, key=lambda name: self.held[name], default=None)
            idle = self._idle(lambda session: session.client == biggest) or self._idle(lambda session: True)
            if idle is None:
                return f"{len(self.sessions)} MCP sessions are open and busy, the server's most; try again"
            await self._end(idle)
        return None

    def _idle(self, chooses) -> str | None:
        """The least recently used session that ``chooses`` and that has no request in flight."""
        return next((session_id for session_id, session in self.sessions.items()
                     if not session.in_flight and chooses(session)), None)

    async def _end(self, session_id: str) -> None:
        """End a session as its client would: a ``DELETE`` through the SDK's app (answered to no one)."""
        session = self._forget(session_id)
        headers = [(SESSION_HEADER, session_id.encode("latin-1"))]
        if session is not None and session.host is not None:
            headers.append((b"host", session.host))
        scope: Scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "DELETE",
                        "scheme": "http", "path": self.path, "raw_path": self.path.encode(), "query_string": b"",
                        "root_path": "", "headers": headers, "client": ("127.0.0.1", 0), "server": None}

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: Message) -> None:
            return None

        self.ended += 1
        await self.app(scope, receive, discard)

    def _forget(self, session_id: str) -> _Session | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            self.held[session.client] -= 1
            if self.held[session.client] <= 0:
                del self.held[session.client]
        return session


def _header(scope: Scope, name: bytes) -> bytes | None:
    return next((value for key, value in scope.get("headers") or () if key == name), None)


def _watching(send: Send, status: list[int], opened: list[str]) -> Send:
    """``send``, noting the answer's status and the session id it gives, if any."""
    async def watched(message: Message) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
            given = _header(message, SESSION_HEADER)
            if given is not None:
                opened.append(given.decode("latin-1"))
        await send(message)

    return watched


async def _refuse(send: Send, why: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": why}}).encode()
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"), (b"retry-after", b"1")]})
    await send({"type": "http.response.body", "body": body})
