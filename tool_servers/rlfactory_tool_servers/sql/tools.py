"""The SQL tools, written once: ``list_tables``, ``describe_table`` and ``run_query`` over a catalog of read-only
SQLite databases (the ``sandbox``). Each runs its database work in a worker thread, with a deadline, and raises
``ToolError`` with a message the model can act on.

Fairness: queries run in the catalog's ``FairPool``, one client per caller (the episode the request's ``_meta``
names, else the connection: leaving the episode out gives no more room), at most ``per_session`` (2) queries at
once each. A caller's query that uses more than a light slice of CPU makes it heavy: its queries then run after
every light one, on at most the pool's heavy threads, and stand aside on the CPU while light ones run. The deadline
counts from the call's arrival, so time spent waiting is part of it; a query text longer than ``LIGHT_SQL_CHARS``
starts heavy (its parse alone may take a second, and nothing can cut a compiled parse short), so it is read holding
the CPU baton, once per call however often its turn is pre-empted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from rlfactory_tool_servers.sql.formatting import format_rows
from rlfactory_tool_servers.sql.sandbox.catalog import DatabaseCatalog, UnknownDatabase
from rlfactory_tool_servers.sql.sandbox.engine import SMALL_OBJECT_BYTES, QueryError, QueryLimits, check_statement
from rlfactory_tool_servers.sql.sandbox.fair_pool import Turn
from rlfactory_tool_servers.sql.schema import UnknownTable, describe_table, list_tables
from rlfactory_tool_servers.toolset import READ_ONLY, Caller, Toolset, tool

LIGHT_SQL_CHARS = 4096
"""A query text longer than this starts heavy (see the module docstring); Spider's and BIRD's longest gold queries
are under 1,500 characters."""


@dataclass(frozen=True)
class SqlLimits:
    """Bounds on what one tool call may cost and return."""

    timeout_s: float = 5.0
    max_rows: int = 50
    max_chars: int = 4000
    sample_rows: int = 3
    per_session: int = 2


class SqlTools(Toolset):
    """The three tools over ``catalog``; ``db_id`` selects the database (an env binds it to its task's)."""

    annotations = READ_ONLY  # run_query takes read-only statements only

    def __init__(self, catalog: DatabaseCatalog, limits: SqlLimits = SqlLimits()):
        self.catalog = catalog
        self.limits = limits
        shown_bytes = max(limits.max_chars * 4, 4096) + limits.max_rows * 16 * SMALL_OBJECT_BYTES  # short values
        self._query_limits = QueryLimits(timeout_s=limits.timeout_s, max_rows=limits.max_rows, max_bytes=shown_bytes)
        self._schema_cache: dict[tuple[str, ...], str] = {}  # databases are read-only: schemas never change
        self._cache_lock = threading.Lock()

    def description_values(self) -> Mapping[str, Any]:
        return asdict(self.limits)

    @tool
    async def list_tables(self, db_id: str) -> str:
        """List the tables of the database: one line per table with its row count and its column names."""
        db = self._database(db_id)
        try:
            return await self.catalog.run(self._cached, ("tables", db_id), lambda: list_tables(db))
        except QueryError as exc:
            raise ToolError(f"could not read the schema: {exc}") from None

    @tool
    async def describe_table(self, db_id: str, table: str) -> str:
        """Describe one table of the database: its columns (type, primary key, not null), its foreign keys, its row
        count and up to {sample_rows} sample rows."""
        db = self._database(db_id)
        if not table.strip():
            raise ToolError("table must not be empty")
        try:
            return await self.catalog.run(self._cached, ("table", db_id, table.strip().lower()),
                                          lambda: describe_table(db, table, self.limits.sample_rows))
        except (UnknownTable, QueryError) as exc:
            raise ToolError(str(exc)) from None

    @tool
    async def run_query(self, db_id: str, sql: str, caller: Caller = Caller("local")) -> str:
        """Run one read-only SQLite query (SELECT, or WITH ... SELECT) on the database and return its rows as a text
        table: a header line of column names, one line per row with cells separated by ` | `, NULL for missing
        values. At most {max_rows} rows and {max_chars} characters are shown, with a note when the result is cut.
        Writes, ATTACH, PRAGMA and several statements at once are refused; a query running longer than
        {timeout_s:g} s is stopped."""
        not_after = time.monotonic() + self.limits.timeout_s  # waiting for a worker counts against the deadline
        self._database(db_id)
        if isinstance(sql, str):  # ``SELECT 1;;``: trailing semicolons dropped, as the reward drops them
            sql = sql.rstrip("; \t\r\n\f\v")
        pool = self.catalog.pool
        client = pool.client(caller, self.limits.per_session)
        checked: list[bool] = []  # the text passed its statement check in an earlier turn: not parsed again
        try:
            return await pool.run(client, lambda turn: self._query_text(db_id, sql, not_after, turn, checked),
                                  not_after, heavy=isinstance(sql, str) and len(sql) > LIGHT_SQL_CHARS)
        except QueryError as exc:
            raise ToolError(f"query {exc.kind}: {exc}") from None

    def _database(self, db_id: str):
        try:
            return self.catalog.get(db_id)
        except UnknownDatabase as exc:
            raise ToolError(str(exc)) from None

    def _cached(self, key: tuple[str, ...], make) -> str:
        text = self._schema_cache.get(key)
        if text is None:
            text = make()
            with self._cache_lock:
                if len(self._schema_cache) > 4096:
                    self._schema_cache.clear()
                self._schema_cache[key] = text
        return text

    def _query_text(self, db_id: str, sql: str, not_after: float, turn: Turn, checked: list[bool]) -> str:
        if not checked:
            check_statement(sql, turn, not_after)
            checked.append(True)
        result = self.catalog.get(db_id).execute(sql, self._query_limits, not_after=not_after, turn=turn,
                                                 checked=True)
        return format_rows(result.columns, result.rows, more=result.truncated, max_rows=self.limits.max_rows,
                           max_chars=self.limits.max_chars)
