"""What a SQLite file declares: its tables with their columns, keys and unique constraints, and the statements
that recreate them, read from ``sqlite_master`` and the schema pragmas (never by parsing DDL ourselves)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

__all__ = ["Column", "ForeignKey", "Schema", "Table", "fill_order", "read_schema", "quote"]


def quote(name: str) -> str:
    """``name`` as a quoted SQLite identifier."""
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class Column:
    name: str
    declared_type: str
    not_null: bool

    @property
    def affinity(self) -> str:
        """SQLite's type affinity of the declared type (section 3.1 of its datatype documentation)."""
        declared = self.declared_type.upper()
        if "INT" in declared:
            return "integer"
        if any(word in declared for word in ("CHAR", "CLOB", "TEXT")):
            return "text"
        if not declared or "BLOB" in declared:
            return "blob"
        if any(word in declared for word in ("REAL", "FLOA", "DOUB")):
            return "real"
        return "numeric"


@dataclass(frozen=True)
class ForeignKey:
    """``columns`` of the child table hold values of ``parent_columns`` of table ``parent``."""

    columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...]


@dataclass
class Table:
    name: str
    ddl: str
    columns: list[Column]
    unique: list[tuple[str, ...]] = field(default_factory=list)
    """The primary key and every full UNIQUE constraint or unique index, as column tuples."""
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    integer_key: str | None = None
    """The ``INTEGER PRIMARY KEY`` column (the rowid): it accepts integers only."""

    @property
    def foreign_columns(self) -> set[str]:
        return {name for key in self.foreign_keys for name in key.columns}


@dataclass
class Schema:
    tables: list[Table]
    extra_ddl: list[str]
    """Indexes and views, created after the tables (triggers are left out: they would fire on the inserts)."""

    def table(self, name: str) -> Table | None:
        lowered = name.lower()
        return next((table for table in self.tables if table.name.lower() == lowered), None)


def _columns_by_name(table: Table) -> dict[str, str]:
    return {column.name.lower(): column.name for column in table.columns}


def read_schema(conn: sqlite3.Connection) -> Schema:
    """The schema of the database behind ``conn``. Foreign keys naming a table or a column that does not exist
    (Spider declares a few) are left out, so every key kept can be honoured."""
    entries = conn.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                           "AND name NOT LIKE 'sqlite_%' ORDER BY rowid").fetchall()
    tables: list[Table] = []
    extra: list[str] = []
    for kind, name, ddl in entries:
        if kind == "table":
            tables.append(_read_table(conn, name, ddl))
        elif kind in ("index", "view"):
            extra.append(ddl)
    schema = Schema(tables, extra)
    for table in tables:
        table.foreign_keys = _foreign_keys(conn, table, schema)
    return schema


def _read_table(conn: sqlite3.Connection, name: str, ddl: str) -> Table:
    info = conn.execute(f"PRAGMA table_info({quote(name)})").fetchall()  # cid, name, type, notnull, default, pk
    columns = [Column(row[1], row[2] or "", bool(row[3])) for row in info]
    key = tuple(row[1] for row in sorted((row for row in info if row[5]), key=lambda row: row[5]))
    table = Table(name, ddl, columns)
    if key:
        table.unique.append(key)
        declared = next(row[2] for row in info if row[1] == key[0])
        if len(key) == 1 and (declared or "").strip().upper() == "INTEGER" and "WITHOUT ROWID" not in ddl.upper():
            table.integer_key = key[0]
    for _, index, unique, _origin, partial in conn.execute(f"PRAGMA index_list({quote(name)})").fetchall():
        if not unique or partial:
            continue
        names = tuple(row[2] for row in conn.execute(f"PRAGMA index_info({quote(index)})").fetchall())
        if names and None not in names and names not in table.unique:
            table.unique.append(names)
    return table


def _foreign_keys(conn: sqlite3.Connection, table: Table, schema: Schema) -> list[ForeignKey]:
    rows = conn.execute(f"PRAGMA foreign_key_list({quote(table.name)})").fetchall()
    grouped: dict[int, list[tuple]] = {}
    for row in rows:  # id, seq, table, from, to, on_update, on_delete, match
        grouped.setdefault(row[0], []).append(row)
    keys = []
    own = _columns_by_name(table)
    for parts in grouped.values():
        parts.sort(key=lambda row: row[1])
        parent = schema.table(parts[0][2])
        if parent is None:
            continue
        parent_names = _columns_by_name(parent)
        children = tuple(own.get(str(row[3]).lower()) for row in parts)
        if any(row[4] is None for row in parts):  # REFERENCES parent without columns: its primary key
            targets = tuple(parent.unique[0]) if parent.unique and len(parent.unique[0]) == len(parts) else ()
        else:
            targets = tuple(parent_names.get(str(row[4]).lower()) for row in parts)
        if not targets or None in children or None in targets:
            continue
        keys.append(ForeignKey(children, parent.name, targets))  # type: ignore[arg-type]
    return keys


def fill_order(schema: Schema) -> list[Table]:
    """The tables, every parent before its children where the keys allow (Kahn's order; the tables of a cycle
    follow in their declared order). A table referencing itself is its own parent and does not count."""
    remaining = {table.name: {key.parent for key in table.foreign_keys if key.parent != table.name}
                 for table in schema.tables}
    order: list[Table] = []
    while remaining:
        ready = [table for table in schema.tables if table.name in remaining and not remaining[table.name]]
        if not ready:
            ready = [next(table for table in schema.tables if table.name in remaining)]
        for table in ready:
            del remaining[table.name]
            for parents in remaining.values():
                parents.discard(table.name)
            order.append(table)
    return order
