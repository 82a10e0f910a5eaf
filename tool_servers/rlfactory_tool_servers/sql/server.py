"""SQL exploration tools over a directory of SQLite databases, as an MCP server.

Tools (each with a batched form ``NAME_batch`` that the toolbox uses to merge concurrent calls):

- ``list_tables(db_id)``: the tables, their row counts and column names;
- ``describe_table(db_id, table)``: columns with types and keys, foreign keys, a few sample rows;
- ``run_query(db_id, sql, session="")``: one read-only query, its rows as a compact text table capped in rows
  and characters, with a note when cut.

Every query runs on a read-only connection (see ``engine``) in a worker thread, with a deadline: a cartesian join
stops in time and the event loop keeps answering other calls. Keep ``--timeout-s`` below the toolbox's
``timeout_s`` so a slow query fails alone. ``db_id`` selects the database; an env binds it to its task's database
(the model never chooses it).

Fairness: queries wait for a worker thread in ``FairSlots``: at most ``--per-session`` (2) at once per
``session`` (an env binds it to its episode id with ``episode_argument="session"``; an empty session is one of its
own per query), the session running the fewest goes first, and the deadline counts from the call's arrival, so
time spent waiting is part of it. A query running longer than ``yield_after_s`` (0.2 s) sleeps 1 ms every
``engine.PROGRESS_OPCODES`` steps, leaving the CPU to short ones. A row is bounded in bytes before it is built
(``engine.MAX_ROW_BYTES``); a result in bytes as Python holds it.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from rlfactory_tool_servers.batched_tool import add_batched_tool
from rlfactory_tool_servers.sql.formatting import format_rows
from rlfactory_tool_servers.sql.schema import UnknownTable, describe_table, list_tables
from rlfactory_tool_servers.sql.sandbox.catalog import DatabaseCatalog, FairSlots, UnknownDatabase
from rlfactory_tool_servers.sql.sandbox.engine import SMALL_OBJECT_BYTES, QueryError, QueryLimits

__all__ = ["SqlLimits", "SqlService", "build_server", "create_server", "describe_data", "options_parser"]

PROG = "python -m rlfactory_tool_servers.sql"

LIST_TABLES_DESCRIPTION = """\
List the tables of the database: one line per table with its row count and its column names."""

DESCRIBE_TABLE_DESCRIPTION = """\
Describe one table of the database: its columns (type, primary key, not null), its foreign keys, its row count \
and up to {sample_rows} sample rows."""

RUN_QUERY_DESCRIPTION = """\
Run one read-only SQLite query (SELECT, or WITH ... SELECT) on the database and return its rows as a text table: \
a header line of column names, one line per row with cells separated by ` | `, NULL for missing values. At most \
{max_rows} rows and {max_chars} characters are shown, with a note when the result is cut. Writes, ATTACH, PRAGMA \
and several statements at once are refused; a query running longer than {timeout_s:g} s is stopped."""


@dataclass(frozen=True)
class SqlLimits:
    """Bounds on what one tool call may cost and return."""

    timeout_s: float = 5.0
    max_rows: int = 50
    max_chars: int = 4000
    sample_rows: int = 3
    per_session: int = 2
    yield_after_s: float = 0.2


class SqlService:
    """The tools' logic, with no MCP in it: each method runs its database work in a worker thread and raises
    ``ToolError`` with a message the model can act on."""

    def __init__(self, catalog: DatabaseCatalog, limits: SqlLimits = SqlLimits()):
        self.catalog = catalog
        self.limits = limits
        shown_bytes = max(limits.max_chars * 4, 4096) + limits.max_rows * 16 * SMALL_OBJECT_BYTES  # short values
        self._query_limits = QueryLimits(timeout_s=limits.timeout_s, max_rows=limits.max_rows, max_bytes=shown_bytes,
                                         yield_after_s=limits.yield_after_s)
        self._slots = FairSlots(catalog.threads, limits.per_session)
        self._schema_cache: dict[tuple[str, ...], str] = {}  # databases are read-only: schemas never change
        self._cache_lock = threading.Lock()

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

    async def list_tables(self, db_id: str) -> str:
        db = self._database(db_id)
        try:
            return await self.catalog.run(self._cached, ("tables", db_id), lambda: list_tables(db))
        except QueryError as exc:
            raise ToolError(f"could not read the schema: {exc}") from None

    async def describe_table(self, db_id: str, table: str) -> str:
        db = self._database(db_id)
        if not table.strip():
            raise ToolError("table must not be empty")
        try:
            return await self.catalog.run(self._cached, ("table", db_id, table.strip().lower()),
                                          lambda: describe_table(db, table, self.limits.sample_rows))
        except (UnknownTable, QueryError) as exc:
            raise ToolError(str(exc)) from None

    def _query_text(self, db_id: str, sql: str, not_after: float) -> str:
        result = self.catalog.get(db_id).execute(sql, self._query_limits, not_after=not_after)
        return format_rows(result.columns, result.rows, more=result.truncated, max_rows=self.limits.max_rows,
                           max_chars=self.limits.max_chars)

    async def run_query(self, db_id: str, sql: str, session: str = "") -> str:
        """The query's rows as a text table. Semicolons that only end the query (``SELECT 1;;``) are dropped, as
        the reward drops them from the final answer; a second statement is refused. The deadline runs from now,
        waiting for a worker included (see the module docstring for ``session``)."""
        not_after = time.monotonic() + self.limits.timeout_s
        self._database(db_id)
        if isinstance(sql, str):
            sql = sql.rstrip("; \t\r\n\f\v")
        try:
            async with self._slots.slot(str(session)[:200], not_after):
                return await self.catalog.run(self._query_text, db_id, sql, not_after)
        except QueryError as exc:
            raise ToolError(f"query {exc.kind}: {exc}") from None


def create_server(service: SqlService) -> MCPServer:
    """An MCP server named "sql" publishing the three tools and their batched forms for ``service``."""
    limits = service.limits

    async def list_tables(db_id: str) -> str:
        return await service.list_tables(db_id)

    async def describe_table(db_id: str, table: str) -> str:
        return await service.describe_table(db_id, table)

    async def run_query(db_id: str, sql: str, session: str = "") -> str:
        return await service.run_query(db_id, sql, session)

    list_tables.__doc__ = LIST_TABLES_DESCRIPTION
    describe_table.__doc__ = DESCRIBE_TABLE_DESCRIPTION.format(sample_rows=limits.sample_rows)
    run_query.__doc__ = RUN_QUERY_DESCRIPTION.format(max_rows=limits.max_rows, max_chars=limits.max_chars,
                                                     timeout_s=limits.timeout_s)
    server = MCPServer("sql", log_level="WARNING")
    for fn in (list_tables, describe_table, run_query):
        add_batched_tool(server, fn, name=fn.__name__, description=fn.__doc__)
    return server


def options_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The SQL server's own options (the transport options are ``rlfactory_tool_servers.launch``'s)."""
    parser = argparse.ArgumentParser(prog=prog, description="MCP server: explore and query SQLite databases, "
                                     "read-only.")
    parser.add_argument("--db-dir", required=True, type=Path,
                        help="databases as <db-dir>/<db_id>/<db_id>.sqlite (Spider database/, BIRD dev_databases/)")
    parser.add_argument("--timeout-s", type=float, default=5.0, help="deadline of one query, seconds (default 5)")
    parser.add_argument("--max-rows", type=int, default=50, help="rows shown per result (default 50)")
    parser.add_argument("--max-chars", type=int, default=4000, help="characters shown per result (default 4000)")
    parser.add_argument("--sample-rows", type=int, default=3, help="sample rows in describe_table (default 3)")
    parser.add_argument("--threads", type=int, default=32,
                        help="worker threads running queries (default 32: more than 8 sessions x --per-session "
                             "hostile ones, so an honest query finds a free one)")
    parser.add_argument("--per-session", type=int, default=2,
                        help="queries of one session running at once; more wait (default 2)")
    return parser


def parse_options(argv: Sequence[str], prog: str = PROG) -> argparse.Namespace:
    """Parse and check the options; a bad one exits with a usage error, like argparse does."""
    parser = options_parser(prog)
    options = parser.parse_args(list(argv))
    if not options.timeout_s > 0:
        parser.error("--timeout-s must be positive")
    for name in ("max_rows", "max_chars", "threads", "per_session"):
        if getattr(options, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if options.sample_rows < 0:
        parser.error("--sample-rows must not be negative")
    if not options.db_dir.is_dir():
        parser.error(f"--db-dir {options.db_dir}: no such directory")
    return options


def describe_data(options: argparse.Namespace) -> str:
    """The databases ``options`` name, for the start message."""
    return f"the SQLite databases under {options.db_dir}"


def build_server(argv: Sequence[str], prog: str = PROG) -> MCPServer:
    """Parse the options, find the databases and build the server."""
    options = parse_options(argv, prog)
    catalog = DatabaseCatalog(options.db_dir, threads=options.threads)
    if not catalog.ids:
        raise SystemExit(f"{prog}: no SQLite databases found under {options.db_dir} (looked for "
                         "<db-dir>/<db_id>/<db_id>.sqlite)")
    limits = SqlLimits(timeout_s=options.timeout_s, max_rows=options.max_rows, max_chars=options.max_chars,
                       sample_rows=options.sample_rows, per_session=options.per_session)
    return create_server(SqlService(catalog, limits))
