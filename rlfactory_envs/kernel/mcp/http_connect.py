"""Connecting to an HTTP server (streamable HTTP, or the older HTTP+SSE transport when the entry's ``type`` is
``"sse"``), with a failure named by its cause: the HTTP status the server answered with, or why no connection was
made (refused, unreachable, unknown host, timed out). A reply whose body breaks off fails its own request, not the
session (see ``breaks_fail_the_reply``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from http import HTTPStatus

import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from rlfactory_envs.kernel.mcp.config import HttpServerEntry
from rlfactory_envs.kernel.mcp.errors import TransportError, connection_failure, root_cause


TRANSPORT_MISMATCH_STATUSES = ("HTTP 400", "HTTP 404", "HTTP 405", "HTTP 406")
"""How a server refuses the first request of a transport it does not speak (or a wrong path)."""


@asynccontextmanager
async def http_client_session(name: str, entry: HttpServerEntry) -> AsyncIterator[Client]:
    """A connected ``Client`` to the HTTP server ``name``, closed on exit with its HTTP client. ``TransportError``
    naming the URL and the cause when the server cannot be reached or refuses the handshake."""
    refusal: str | None = None

    async def note_refusal(response: httpx2.Response) -> None:
        nonlocal refusal
        if response.is_error:
            refusal = _status(response)

    def http_client(headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None,
                    auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
        client = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
        client.event_hooks["response"] += [note_refusal, breaks_fail_the_reply]
        return client

    async with AsyncExitStack() as stack:
        if entry.type == "sse":
            transport = sse_client(entry.url, headers=entry.headers or None, httpx_client_factory=http_client)
        else:
            http = await stack.enter_async_context(http_client(headers=entry.headers or None))
            transport = streamable_http_client(entry.url, http_client=http)
        try:
            client = await stack.enter_async_context(Client(transport, cache=None, raise_exceptions=False))
        except Exception as exc:
            cause = refusal or connection_failure(root_cause(exc))
            hint = _transport_hint(entry) if refusal and refusal.startswith(TRANSPORT_MISMATCH_STATUSES) else ""
            if refusal and refusal.startswith(("HTTP 401", "HTTP 403")):
                hint = (" (the server wants a token: set \"headers\": {\"Authorization\": \"Bearer <token>\"} in "
                        "its mcpServers entry, the server's --auth-token)")
            elif refusal and refusal.startswith("HTTP 421"):
                hint = " (the server refused the Host header: start it with --allowed-hosts naming this URL's host)"
            raise TransportError(f"server {name!r}: cannot connect to {entry.url}: {cause}{hint}") from exc
        yield client


class BrokenBody(httpx2.StreamError):
    """A response body that broke off (the connection closed or failed before its end)."""


async def breaks_fail_the_reply(response: httpx2.Response) -> None:
    """Response hook: a body that breaks off raises ``BrokenBody``, for which the SDK fails the request that reply
    answers with a ``PARSE_ERROR``, where the ``RemoteProtocolError`` httpx2 raises would end the SDK's whole
    transport, and every request in flight on it. A request that got no response at all fails as before (the
    server is gone, or never answered)."""
    response.stream = _BreakableBody(response.stream)


class _BreakableBody(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream) -> None:
        self._inner = inner
        self._received = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                self._received += len(chunk)
                yield chunk
        except httpx2.TransportError as exc:
            raise BrokenBody(f"the reply broke off after {self._received} bytes of its body: {exc}") from exc

    async def aclose(self) -> None:
        await self._inner.aclose()


def _transport_hint(entry: HttpServerEntry) -> str:
    """What to try when the server did not take the requests of ``entry``'s transport at its URL."""
    other = "streamable-http" if entry.type == "sse" else "sse"
    return (f" (connected as {entry.type}; if the server speaks {other}, set \"type\": \"{other}\" in its "
            "mcpServers entry, and check the URL's path)")


def _status(response: httpx2.Response) -> str:
    """``HTTP 401 Unauthorized``: the status and the reason the server gave (or the standard one)."""
    reason = response.reason_phrase
    if not reason:
        try:
            reason = HTTPStatus(response.status_code).phrase
        except ValueError:
            reason = "(no reason given)"
    return f"HTTP {response.status_code} {reason}"
