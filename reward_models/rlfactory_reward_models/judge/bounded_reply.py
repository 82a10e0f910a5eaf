"""Judge replies bounded in bytes: the HTTP clients of the judge read at most ``max_reply_bytes`` of a reply body,
and refuse it past that, before the OpenAI client builds it into text (event hooks on the client, so its own
transports, proxies and TLS settings stay as they are).

A judge is a server the reward does not control (a shared vLLM, a hosted API, a proxy), and a reply of 200 MB would
otherwise be read whole and parsed (several times its size in memory). So the client asks for an uncompressed
body (``Accept-Encoding: identity``: a compressed one could inflate past any bound), refuses a body that declares a
``Content-Length`` over the bound or comes compressed all the same, and stops reading one that grows past it. The
refusal is an ``openai.OpenAIError``, which the OpenAI client raises as it is, without retrying.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from types import ModuleType
from typing import Any

import openai

__all__ = ["JudgeReplyRefused", "ask_identity", "http_library", "reply_bound"]


class JudgeReplyRefused(openai.OpenAIError):
    """A judge reply the transport would not read: over the size bound, or compressed."""


def http_library() -> ModuleType:
    """The HTTP library the OpenAI client is built on (``httpx``, or ``httpx2`` in newer releases)."""
    base = next(cls for cls in openai.DefaultAsyncHttpxClient.__mro__ if cls.__name__ == "AsyncClient")
    return sys.modules[base.__module__.split(".")[0]]


_http = http_library()


class _BoundedBody(_http.AsyncByteStream):  # type: ignore[name-defined,misc]
    """A reply body that raises ``JudgeReplyRefused`` once more than ``max_bytes`` of it have been read."""

    def __init__(self, body: Any, max_bytes: int, url: str) -> None:
        self.body, self.max_bytes, self.url = body, max_bytes, url

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        async for chunk in self.body:
            read += len(chunk)
            if read > self.max_bytes:
                raise JudgeReplyRefused(f"judge reply over {self.max_bytes:,} bytes (max_reply_bytes) at {self.url}")
            yield chunk

    async def aclose(self) -> None:
        await self.body.aclose()


async def ask_identity(request: Any) -> None:
    """Request hook: ask for an uncompressed reply (a compressed one could inflate past any bound)."""
    request.headers["Accept-Encoding"] = "identity"


def reply_bound(max_bytes: int) -> Callable[[Any], Awaitable[None]]:
    """A response hook (called before the body is read) that refuses a reply declared or sent compressed or over
    ``max_bytes``, and bounds the body's reading to ``max_bytes``."""
    async def bound(response: Any) -> None:
        problem = _refusal(response.headers, max_bytes)
        if problem is not None:
            await response.aclose()
            raise JudgeReplyRefused(f"{problem} at {response.request.url}")
        response.stream = _BoundedBody(response.stream, max_bytes, str(response.request.url))
    return bound


def _refusal(headers: Any, max_bytes: int) -> str | None:
    """Why a reply with these headers is refused before its body is read, or ``None``."""
    encoding = headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        return f"judge reply compressed ({encoding[:20]}) although an uncompressed one was asked for"
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        return f"judge reply of {int(declared):,} bytes, over {max_bytes:,} (max_reply_bytes)"
    return None
