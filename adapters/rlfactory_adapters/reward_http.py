"""The HTTP side of ``rlf serve reward``: a refusal as a status and a JSON error, the request body read within its
limit and decoded, and one log line per request."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["RequestError", "RequestLog", "decode", "error_response", "read_body"]

logger = logging.getLogger("rlfactory_adapters.reward_server")


class RequestError(Exception):
    """A request the server refuses: the status and what is wrong, for ``{"error": ...}``."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.headers = dict(headers or {})


class RequestLog:
    """One ``INFO`` line per request when it is answered: method, path, status, time, and what the handler noted
    (the items and mean reward, or the error)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not logger.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), [0]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            detail = scope.get("state", {}).get("log_detail")
            logger.info("%s %s %s %.1f ms%s", scope["method"], scope["path"], status[0] or "-",
                        (time.perf_counter() - started) * 1000, f": {detail}" if detail else "")


def error_response(exc: RequestError, request: Request) -> JSONResponse:
    request.state.log_detail = str(exc)
    return JSONResponse({"error": str(exc)}, status_code=exc.status, headers=exc.headers)


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, read up to ``limit`` bytes; ``RequestError`` (413) past it."""
    too_big = f"the body is over the limit of {limit} bytes (--max-request-bytes)"
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise RequestError(400, f"Content-Length is not a number: {declared[:40]!r}")
        if int(declared) > limit:
            raise RequestError(413, too_big)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(413, too_big)
        chunks.append(chunk)
    return b"".join(chunks)


def decode(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON (ValueError both), or nested too deep
        raise RequestError(400, f"the body is not JSON ({' '.join(str(exc).split())[:200]})") from None
