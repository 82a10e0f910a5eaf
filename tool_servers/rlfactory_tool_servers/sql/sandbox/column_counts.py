"""The column count of a query, learnt once per schema and query text.

``ReadOnlyDatabase`` bounds the bytes of a row before SQLite builds it, from the query's column count
(``engine.value_limit``), which SQLite tells only once the query is prepared: running it would compute its first
row already, so the count is learnt by preparing it under ``LIMIT 0`` (no row is computed). That second prepare
cost about a third of an answer's check on a test suite. A result's column count is fixed when the query is
prepared, from the schema alone, so ``ColumnCounts`` keeps it per (schema digest, query text): the files of a test
suite (one schema) and a text seen again skip that prepare. It holds at most ``CACHE_BYTES``, query texts included.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import sys
import threading
from typing import Any

import cachetools

__all__ = ["CACHE_BYTES", "ColumnCounts", "schema_digest"]

CACHE_BYTES = 16 * 2**20
ENTRY_BYTES = 256  # an entry's key tuple, digest, count and the cache's own slot, about


def schema_digest(conn: sqlite3.Connection) -> bytes:
    """A digest of the schema of ``conn``'s main database: every ``sqlite_master`` row, in order."""
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid").fetchall()
    return hashlib.blake2b(repr(rows).encode("utf-8", "backslashreplace"), digest_size=16).digest()


def _bare(sql: str) -> str:
    """``sql`` without the semicolons and white space that end it: ``SELECT 1;`` runs, but not inside a
    subquery."""
    return sql.rstrip("; \t\r\n\f\v")


class ColumnCounts:
    """Column counts of query texts by schema digest, LRU, at most ``max_bytes`` (thread-safe)."""

    def __init__(self, max_bytes: int = CACHE_BYTES) -> None:
        self._counts: cachetools.LRUCache[tuple[bytes, str], tuple[int, int]] = cachetools.LRUCache(
            max_bytes, getsizeof=lambda entry: entry[1])
        self._lock = threading.Lock()

    def count(self, conn: sqlite3.Connection, schema: bytes, sql: str, params: tuple[Any, ...] = ()) -> int | None:
        """The column count of ``sql`` on ``conn`` (whose schema digest is ``schema``), or ``None`` when SQLite
        cannot prepare it under ``LIMIT 0`` (not kept: the next call tries again)."""
        key = (schema, sql)
        with self._lock:
            hit = self._counts.get(key)
        if hit is not None:
            return hit[0]
        try:
            columns = len(conn.execute(f"SELECT * FROM (\n{_bare(sql)}\n) LIMIT 0", params).description or ())
        except sqlite3.Error:
            return None
        with self._lock, contextlib.suppress(ValueError):  # an entry over max_bytes is not kept
            self._counts[key] = (columns, ENTRY_BYTES + sys.getsizeof(sql))
        return columns

    def __len__(self) -> int:
        return len(self._counts)
