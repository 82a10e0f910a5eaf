"""The errors of the MCP transport layer (a session that cannot carry requests, a reply that cannot be read), and
how to find the cause of a failure that the SDK's task groups wrap (``connection_failure`` and ``describe`` say it in
a few words)."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Iterator

import mcp_types
from mcp import MCPError

from rlfactory_tool_servers.connection_errors import connection_failure, describe

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup


class TransportError(Exception):
    """A session that cannot carry requests: it could not be opened (the message names the server and the cause),
    or the server exited or the connection dropped."""


class MalformedReply(MCPError):
    """A reply the client could not read as the MCP reply to its request (not JSON, not JSON-RPC, the wrong shape,
    cut short). The request fails with it; the session stays usable."""

    def __init__(self, server: str, problem: str):
        super().__init__(mcp_types.PARSE_ERROR, f"server {server!r} sent a malformed reply: {reply_problem(problem)}")


UNREADABLE_REPLY = "Failed to parse JSON response: "
"""How the SDK's HTTP transport begins the ``PARSE_ERROR`` it fails a request with when the reply cannot be read;
our stdio reader words its own the same way (``stdio_connect``)."""

MAX_PROBLEM_CHARS = 300
_PYDANTIC_PROBLEM = re.compile(r"^(\S[^\n]*)\n {2}(\S[^\n]*?)(?: \[type=[^\n]*)?$", re.MULTILINE)


def reply_problem(text: str) -> str:
    """What is wrong with a reply, in one short line, from the text of its failure (pydantic's, as the SDK passes it
    on): ``not JSON (...)``, ``not a JSON-RPC message`` (with the fault in a response's ``result``/``error`` when
    that is where it lies), ``the result has the wrong shape (field: problem)``, or the text's first line."""
    text = text.removeprefix(UNREADABLE_REPLY).strip()
    headline = text.splitlines()[0] if text else ""
    problems: list[tuple[str, str]] = _PYDANTIC_PROBLEM.findall(text)
    if "Invalid JSON: " in text:
        detail = text.split("Invalid JSON: ", 1)[1].split(" [type=", 1)[0].splitlines()[0]
        return _short(f"not JSON ({detail})")
    if "union[JSONRPCRequest" in headline:
        inside = [(where.split(".", 1)[1], what) for where, what in problems
                  if where.startswith(("JSONRPCResponse.result", "JSONRPCError.error"))
                  and not (where in ("JSONRPCResponse.result", "JSONRPCError.error") and what == "Field required")]
        return _short("not a JSON-RPC message" + (f" ({_joined(inside)})" if inside else ""))
    if problems and "validation error" in headline:
        where, what = problems[0]
        return _short(f"the result has the wrong shape ({_joined([(where.split('.', 1)[-1], what)])})")
    return _short(headline or "unreadable")


def _joined(problems: list[tuple[str, str]]) -> str:
    return "; ".join(f"{where}: {what}" for where, what in problems)


def _short(text: str) -> str:
    return text if len(text) <= MAX_PROBLEM_CHARS else text[:MAX_PROBLEM_CHARS] + "..."


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


__all__ = ["MalformedReply", "TransportError", "connection_failure", "describe", "reply_problem", "root_cause"]
