"""What a model learns about a database before it queries it: its tables, and one table in detail.

Everything is read from the SQLite file itself (``sqlite_master`` and the schema pragmas), through the same
read-only connections and deadlines as queries; table names from a model are matched against the real ones,
never pasted into SQL.
"""

from __future__ import annotations

from rlfactory_tool_servers.sql.formatting import format_rows, quote_identifier
from rlfactory_tool_servers.sql.sandbox.engine import QueryError, QueryLimits, ReadOnlyDatabase

__all__ = ["UnknownTable", "describe_table", "list_tables", "resolve_table", "table_names"]

SCHEMA_LIMITS = QueryLimits(timeout_s=10.0, max_rows=10_000, max_bytes=16_000_000)
_TABLES_SQL = ("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' "
               "ORDER BY name")


class UnknownTable(LookupError):
    """No table of that name in the database."""


def table_names(db: ReadOnlyDatabase) -> list[str]:
    return [row[0] for row in db.run_trusted(_TABLES_SQL, (), SCHEMA_LIMITS).rows]


def resolve_table(db: ReadOnlyDatabase, name: str) -> str:
    """The real name of table ``name`` (case-insensitive, surrounding quotes ignored); ``UnknownTable`` otherwise."""
    wanted = name.strip().strip('"`[]').lower()
    names = table_names(db)
    for real in names:
        if real.lower() == wanted:
            return real
    raise UnknownTable(f"no table {name[:100]!r} in database {db.db_id!r}; its tables are: "
                       f"{', '.join(quote_identifier(n) for n in names)}")


def _columns(db: ReadOnlyDatabase, table: str) -> list[tuple]:
    # (cid, name, type, notnull, default, pk)
    return db.run_trusted(f"PRAGMA table_info({quote_identifier(table)})", (), SCHEMA_LIMITS).rows


def _row_count(db: ReadOnlyDatabase, table: str) -> str:
    try:
        return str(db.run_trusted(f"SELECT count(*) FROM {quote_identifier(table)}", (), SCHEMA_LIMITS).rows[0][0])
    except QueryError:
        return "?"


def list_tables(db: ReadOnlyDatabase) -> str:
    """One line per table: ``name (N rows): column, column, ...``."""
    names = table_names(db)
    lines = [f"Database {db.db_id} has {len(names)} table{'s' if len(names) != 1 else ''}:"]
    for name in names:
        columns = ", ".join(quote_identifier(c[1]) for c in _columns(db, name))
        lines.append(f"{quote_identifier(name)} ({_row_count(db, name)} rows): {columns}")
    return "\n".join(lines)


def describe_table(db: ReadOnlyDatabase, table: str, sample_rows: int = 3) -> str:
    """The table's columns (type, primary key, NOT NULL), foreign keys, row count and a few sample rows."""
    real = resolve_table(db, table)
    quoted = quote_identifier(real)
    lines = [f"Table {quoted} ({_row_count(db, real)} rows)", "Columns:"]
    for _, name, type_, notnull, _default, pk in _columns(db, real):
        flags = [flag for flag, on in (("primary key", pk), ("not null", notnull)) if on]
        lines.append(f"  {quote_identifier(name)} {type_ or 'ANY'}" + (f" ({', '.join(flags)})" if flags else ""))
    foreign = db.run_trusted(f"PRAGMA foreign_key_list({quoted})", (), SCHEMA_LIMITS).rows
    if foreign:
        lines.append("Foreign keys:")
        for row in foreign:  # (id, seq, table, from, to, on_update, on_delete, match)
            target = f"{quote_identifier(row[2])}.{quote_identifier(row[4])}" if row[4] else quote_identifier(row[2])
            lines.append(f"  {quote_identifier(row[3])} -> {target}")
    if sample_rows > 0:
        sample = db.run_trusted(f"SELECT * FROM {quoted} LIMIT {int(sample_rows)}", (), SCHEMA_LIMITS)
        lines.append(f"Sample rows (up to {sample_rows}):")
        lines.append(format_rows(sample.columns, sample.rows, more=False, max_rows=sample_rows, max_chars=4000)
                     .rsplit("\n", 1)[0])
    return "\n".join(lines)

