"""SQL exploration tools over a directory of SQLite databases, as an MCP server.

Tools (each with a batched form ``NAME_batch`` that the toolbox uses to merge concurrent calls):

- ``list_tables(db_id)``: the tables, their row counts and column names;
- ``describe_table(db_id, table)``: columns with types and keys, foreign keys, a few sample rows;
- ``run_query(db_id, sql)``: one read-only query, its rows as a compact text table capped in rows and characters,
  with a note when cut.

Every query runs on a read-only connection (see ``engine``) in a worker thread, with a deadline: a cartesian join
stops in time and the event loop keeps answering other calls. Keep ``--timeout-s`` below the toolbox's
``timeout_s`` so a slow query fails alone. ``db_id`` selects the database; an env binds it to its task's database
(the model never chooses it).

Fairness (``sandbox.fair_pool``, see ``tools``): at most ``--per-session`` (2) queries at once per caller (the episode
the request's ``_meta`` names, else the connection), light callers first, and a query that outgrows a light slice of
CPU goes on as heavy: after every light query, on ``--heavy-threads`` threads of its own (light queries always
have all of ``--threads``: when heavy ones held three quarters of them, 64 honest queries beside 32 hostile
episodes queued for the 8 left), one heavy query on the CPU at a time, standing aside while light ones run. The
deadline counts from the call's arrival, so time spent waiting is part of it. A row is bounded in bytes before it
is built (``engine.MAX_ROW_BYTES``); a result in bytes as Python holds it.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from mcp.server.mcpserver import MCPServer

from rlfactory_tool_servers.sql.sandbox.catalog import DatabaseCatalog
from rlfactory_tool_servers.sql.tools import SqlLimits, SqlTools
from rlfactory_tool_servers.toolset import publish_toolsets

__all__ = ["SqlLimits", "SqlTools", "build_server", "create_server", "describe_data", "options_parser"]

PROG = "python -m rlfactory_tool_servers.sql"


def create_server(tools: SqlTools) -> MCPServer:
    """An MCP server named "sql" publishing the three tools and their batched forms for ``tools``."""
    return publish_toolsets("sql", [tools])


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
                        help="worker threads running queries (default 32), every one free for light queries, so an "
                             "honest query finds one whatever the heavy ones do (they have --heavy-threads more)")
    parser.add_argument("--heavy-threads", type=int,
                        help="threads, beyond --threads, that heavy queries (past a light slice of CPU) may hold "
                             "(default three quarters of --threads); light queries always have all of --threads")
    parser.add_argument("--per-session", type=int, default=2,
                        help="queries of one session running at once; more wait (default 2)")
    return parser


def parse_options(argv: Sequence[str], prog: str = PROG) -> argparse.Namespace:
    """Parse and check the options; a bad one exits with a usage error, like argparse does."""
    parser = options_parser(prog)
    options = parser.parse_args(list(argv))
    if not options.timeout_s > 0:
        parser.error("--timeout-s must be positive")
    for name in ("max_rows", "max_chars", "threads", "heavy_threads", "per_session"):
        if getattr(options, name) is not None and getattr(options, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if options.sample_rows < 0:
        parser.error("--sample-rows must not be negative")
    if not options.db_dir.is_dir():
        parser.error(f"--db-dir {options.db_dir}: no such directory")
    return options


def describe_data(options: argparse.Namespace) -> str:
    """The databases ``options`` name, for the start message."""
    return f"the SQLite databases under {options.db_dir}"


def heavy_threads(options: argparse.Namespace) -> int:
    """``--heavy-threads``, or its default: three quarters of ``--threads`` (at least one)."""
    return options.heavy_threads or max(1, options.threads * 3 // 4)


def build_server(argv: Sequence[str], prog: str = PROG) -> MCPServer:
    """Parse the options, find the databases and build the server."""
    options = parse_options(argv, prog)
    catalog = DatabaseCatalog(options.db_dir, threads=options.threads, heavy_threads=heavy_threads(options))
    if not catalog.ids:
        raise SystemExit(f"{prog}: no SQLite databases found under {options.db_dir} (looked for "
                         "<db-dir>/<db_id>/<db_id>.sqlite)")
    limits = SqlLimits(timeout_s=options.timeout_s, max_rows=options.max_rows, max_chars=options.max_chars,
                       sample_rows=options.sample_rows, per_session=options.per_session)
    return create_server(SqlTools(catalog, limits))
