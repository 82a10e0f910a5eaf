"""One OpenEnv session over its WebSocket (``/ws``), as openenv-core's ``EnvClient`` speaks it, without importing
it: JSON frames ``{"type": "reset"|"step"|"state"|"close", "data": ...}``, replies ``observation``, ``state`` or
``error``. A token rides in the URL (``http://user:TOKEN@host``: basic credentials, as with ``EnvClient``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from websockets.asyncio.client import ClientConnection, connect


class ServerRefused(Exception):
    """The server answered a frame with an error (its ``message`` and ``code``)."""

    def __init__(self, message: str, code: str):
        super().__init__(f"{message} (code: {code})")
        self.code = code


def ws_url(base_url: str) -> str:
    """The session URL of an OpenEnv server's base URL (``http`` -> ``ws``, ``https`` -> ``wss``, ``/ws``)."""
    url = base_url.rstrip("/")
    for plain, secure in (("http://", "ws://"), ("https://", "wss://")):
        if url.startswith(plain):
            url = secure + url[len(plain):]
    return url if url.startswith(("ws://", "wss://")) else f"ws://{url}"


class OpenEnvSession:
    """A WebSocket session, connected on first use; every call on one event loop."""

    def __init__(self, base_url: str, connect_timeout_s: float = 10.0, message_timeout_s: float = 60.0,
                 max_message_bytes: int = 64 * 1024 * 1024):
        self.url = ws_url(base_url) + "/ws"
        self.connect_timeout_s, self.message_timeout_s = connect_timeout_s, message_timeout_s
        self.max_message_bytes = max_message_bytes
        self._socket: ClientConnection | None = None

    async def request(self, kind: str, data: Any = None) -> dict[str, Any]:
        """The reply's ``data`` to one frame; ``ServerRefused`` for an error reply, ``ConnectionError`` when the
        server cannot be reached or answers nothing in time (the connection is dropped: the next call reconnects,
        a new session)."""
        try:
            if self._socket is None:
                self._socket = await connect(self.url, open_timeout=self.connect_timeout_s,
                                             max_size=self.max_message_bytes)
            frame = {"type": kind} if data is None else {"type": kind, "data": data}
            await self._socket.send(json.dumps(frame))
            reply = json.loads(await asyncio.wait_for(self._socket.recv(), self.message_timeout_s))
        except Exception as exc:  # noqa: BLE001 - refused, reset, timed out, unreadable: the server failed
            await self.close()
            raise ConnectionError(f"the OpenEnv server at {self.url} failed: {type(exc).__name__}: {exc}") from None
        if reply.get("type") == "error":
            error = reply.get("data") or {}
            raise ServerRefused(str(error.get("message", "unknown error")), str(error.get("code", "UNKNOWN")))
        return reply.get("data") or {}

    async def close(self) -> None:
        socket, self._socket = self._socket, None
        if socket is not None:
            try:
                await socket.send(json.dumps({"type": "close"}))
                await socket.close()
            except Exception:  # noqa: BLE001 - closing a connection that is already gone
                pass
