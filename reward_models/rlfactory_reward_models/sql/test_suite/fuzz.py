"""One variant database: the original's schema, new rows drawn from its column profiles, keys kept.

Sizes: a variant is small (1 to 6 rows a table, where ties, empty groups and boundaries are common) or resampled
(between half and twice the original's rows, at most ``max_rows`` a table), by a coin. Tables are filled parents
first (``schema.fill_order``): a foreign key's values are copied from a row of its parent as inserted, so every
join finds its partner; primary keys and unique constraints hold (a row that would break one is drawn again, or
left out). A table the original leaves empty stays small (0 to 3 rows). Rows that SQLite still refuses (a CHECK
constraint) are left out. The same profiles and seed give the same file.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

from rlfactory_reward_models.sql.test_suite.profile import ColumnProfile
from rlfactory_reward_models.sql.test_suite.schema import Schema, Table, fill_order, quote

__all__ = ["DEFAULT_MAX_ROWS", "write_variant"]

DEFAULT_MAX_ROWS = 1_000
_SMALL = 6
_REDRAWS = 8

Row = dict[str, Any]


def _size(original: int, small: bool, max_rows: int, rng: random.Random) -> int:
    if original == 0:
        return rng.randint(0, 3)
    if small:
        return rng.randint(1, min(_SMALL, max_rows))
    return rng.randint(max(1, min(original // 2, max_rows)), max(1, min(2 * original, max_rows)))


def _draw_row(table: Table, profiles: dict[str, ColumnProfile], taken: dict[str, set[Any]],
              rng: random.Random) -> Row:
    row: Row = {}
    single = {key[0] for key in table.unique if len(key) == 1}
    for column in table.columns:
        profile = profiles[column.name]
        if column.name in table.foreign_columns:
            row[column.name] = None  # filled from a parent row
        elif column.name in single:
            value = profile.fresh(rng, taken[column.name], integer=column.name == table.integer_key)
            taken[column.name].add(value)
            row[column.name] = value
        else:
            row[column.name] = profile.draw(rng)
    return row


def _link(row: Row, table: Table, inserted: dict[str, list[Row]], profiles: dict[str, ColumnProfile],
          rng: random.Random) -> None:
    """Copy each foreign key's columns from a random row of its parent (NULL at the column's own rate)."""
    for key in table.foreign_keys:
        parents = inserted.get(key.parent) or []
        first = profiles[key.columns[0]]
        nullable = not any(profiles[name].column.not_null for name in key.columns)
        if not parents or (nullable and rng.random() < first.null_rate):
            for name in key.columns:
                row[name] = None if nullable else profiles[name].draw(rng, allow_null=False)
            continue
        parent = rng.choice(parents)
        for name, parent_name in zip(key.columns, key.parent_columns):
            row[name] = parent.get(parent_name)


def _fits(row: Row, table: Table, seen: list[set[tuple]]) -> bool:
    keys = [tuple(row[name] for name in key) for key in table.unique]
    if any(None not in values and values in taken for values, taken in zip(keys, seen)):
        return False
    for values, taken in zip(keys, seen):
        if None not in values:
            taken.add(values)
    return True


def _fill(table: Table, size: int, profiles: dict[str, ColumnProfile], inserted: dict[str, list[Row]],
          rng: random.Random) -> list[Row]:
    taken: dict[str, set[Any]] = {column.name: set() for column in table.columns}
    seen: list[set[tuple]] = [set() for _ in table.unique]
    rows = [_draw_row(table, profiles, taken, rng) for _ in range(size)]
    if any(key.parent == table.name for key in table.foreign_keys):
        inserted[table.name] = rows  # a table that references itself links to its own rows
    kept = []
    for row in rows:
        for _ in range(_REDRAWS):
            _link(row, table, inserted, profiles, rng)
            if _fits(row, table, seen):
                kept.append(row)
                break
    return kept


def write_variant(schema: Schema, profiles: dict[str, dict[str, ColumnProfile]], sizes: dict[str, int],
                  path: Path, seed: int, max_rows: int = DEFAULT_MAX_ROWS) -> dict[str, int]:
    """Write a variant of the database described by ``schema`` (``profiles`` and original ``sizes`` per table) to
    ``path``; returns its rows per table."""
    rng = random.Random(seed)
    small = rng.random() < 0.5
    conn = sqlite3.connect(path, isolation_level=None)
    counts: dict[str, int] = {}
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("BEGIN")
        for table in schema.tables:
            conn.execute(table.ddl)
        inserted: dict[str, list[Row]] = {}
        for table in fill_order(schema):
            rows = _fill(table, _size(sizes[table.name], small, max_rows, rng), profiles[table.name], inserted, rng)
            names = [column.name for column in table.columns]
            statement = (f"INSERT INTO {quote(table.name)} ({', '.join(map(quote, names))}) "
                         f"VALUES ({', '.join('?' * len(names))})")
            stored = []
            for row in rows:
                try:
                    conn.execute(statement, [row[name] for name in names])
                except (sqlite3.IntegrityError, sqlite3.InterfaceError, OverflowError):
                    continue
                stored.append(row)
            inserted[table.name] = stored
            counts[table.name] = len(stored)
        for ddl in schema.extra_ddl:
            try:
                conn.execute(ddl)
            except sqlite3.Error:  # a unique index the new rows happen to break, a view of a missing table
                continue
        conn.execute("COMMIT")
    finally:
        conn.close()
    return counts
