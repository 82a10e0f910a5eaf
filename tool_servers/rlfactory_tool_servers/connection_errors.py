"""Why a connection failed, in a few words (``connection refused``, ``unknown host (...)``, ``timed out``): for every
client here that reaches another process over the network (the MCP toolbox, a model endpoint, a judge, a remote
retriever)."""

from __future__ import annotations

import os
import socket

import httpx2


def describe(exc: BaseException) -> str:
    """``exc`` in a few words: its message, or its type's name when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def connection_failure(exc: BaseException) -> str:
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
