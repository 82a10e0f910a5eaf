"""Why a query gave no result: the errors every part of the SQL sandbox raises (``engine``, ``fair_pool``)."""

from __future__ import annotations

__all__ = ["QueryError", "QueryFailed", "QueryRefused", "QueryTimeout", "ResultOverLimits", "ResultTooLarge"]


class QueryError(Exception):
    """A query did not produce a result. ``kind`` names why: refused, timeout, error, too_large."""

    kind = "error"


class QueryRefused(QueryError):
    """Not a single read-only query, or the database refused an operation (a write, ATTACH, a pragma)."""

    kind = "refused"


class QueryTimeout(QueryError):
    """The query ran past its deadline and was stopped."""

    kind = "timeout"


class QueryFailed(QueryError):
    """SQLite reported an error (a syntax error, an unknown column, ...)."""

    kind = "error"


class ResultTooLarge(QueryError):
    """The result has more rows or bytes than allowed, and the caller asked for all of it."""

    kind = "too_large"


class ResultOverLimits(ResultTooLarge):
    """More rows, or more bytes in all, than the caller's ``QueryLimits`` allow (each row within bounds)."""
