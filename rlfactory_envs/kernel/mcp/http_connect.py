"""Connecting to a streamable-HTTP server, with a failure named by its cause: the HTTP status the server answered
with, or why no connection was made (refused, unreachable, unknown host, timed out)."""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from http import HTTPStatus

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from rlfactory_envs.kernel.mcp.config import HttpServerEntry
from rlfactory_envs.kernel.mcp.errors import TransportError, describe, root_cause


@asynccontextmanager
async def http_client_session(name: str, entry: HttpServerEntry) -> AsyncIterator[Client]:
    """A connected ``Client`` to the HTTP server ``name``, closed on exit with its HTTP client. ``TransportError``
    naming the URL and the cause when the server cannot be reached or refuses the handshake."""
    refusal: str | None = None

    async def note_refusal(response: httpx2.Response) -> None:
        nonlocal refusal
        if response.is_error:
            refusal = _status(response)

    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(create_mcp_http_client(headers=entry.headers or None))
        http.event_hooks["response"].append(note_refusal)
        try:
            client = await stack.enter_async_context(
                Client(streamable_http_client(entry.url, http_client=http), cache=None, raise_exceptions=False))
        except Exception as exc:
            cause = refusal or _connect_failure(root_cause(exc))
            raise TransportError(f"server {name!r}: cannot connect to {entry.url}: {cause}") from exc
        yield client


def _status(response: httpx2.Response) -> str:
    """``HTTP 401 Unauthorized``: the status and the reason the server gave (or the standard one)."""
    reason = response.reason_phrase
    if not reason:
        try:
            reason = HTTPStatus(response.status_code).phrase
        except ValueError:
            reason = "(no reason given)"
    return f"HTTP {response.status_code} {reason}"


def _connect_failure(exc: BaseException) -> str:
    """Why no connection was made, from the first operating-system error in ``exc``'s chain of causes."""
    if isinstance(exc, httpx2.TimeoutException):
        return "timed out"
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, socket.gaierror):
            return f"unknown host ({link.strerror})"
        if isinstance(link, OSError) and isinstance(link.errno, int) and link.errno > 0:
            return os.strerror(link.errno).lower()
        link = link.__cause__ or link.__context__
    return describe(exc)
