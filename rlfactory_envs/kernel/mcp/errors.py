"""The error of the MCP transport layer, and how to find the cause of a failure that the SDK's task groups wrap."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Iterator

import httpx2

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup


class TransportError(Exception):
    """A session that cannot carry requests: it could not be opened (the message names the server and the cause),
    or the server exited or the connection dropped."""


def root_cause(exc: BaseException) -> BaseException:
    """The first failure inside ``exc``'s nested exception groups that is not a cancellation; ``exc`` itself when
    it is no group, or when the groups hold nothing else."""
    return next((leaf for leaf in _leaves(exc) if not isinstance(leaf, asyncio.CancelledError)), exc)


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


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
