"""Each column's values as the original database holds them, and how to draw new ones from them.

A variant's value for a column is, by chance: one of the column's own values (drawn by frequency, so the
distribution stays), a near copy of one (an integer one or two apart, a real a little off, a text with one
character changed, cut or given a trailing space), or a boundary: the column's minimum and maximum and their
neighbours, and the literals the gold queries compare the column with (``WHERE name = 'Ann'`` only tells queries
apart on a database where some name is ``'Ann'``; ``age > 30`` where some age is 30 or 31). NULLs come at the
column's own rate. A column the original leaves empty gets values of its declared type.
"""

from __future__ import annotations

import random
import sqlite3
import string
from dataclasses import dataclass, field
from typing import Any

from rlfactory_reward_models.sql.test_suite.schema import Column, Table, quote

__all__ = ["ColumnProfile", "SAMPLE_ROWS", "profile_table"]

SAMPLE_ROWS = 5_000
"""Rows read per table to learn its columns (the first ones: a 10-million-row BIRD table is not scanned)."""
_OWN, _NEAR = 0.65, 0.85  # cumulative odds: own value, near copy, else a boundary or a literal
_ALPHABET = string.ascii_letters + string.digits


@dataclass
class ColumnProfile:
    column: Column
    values: list[Any]
    """The column's non-NULL values in the sample, repeats kept (drawing from it follows their frequency)."""
    null_rate: float
    literals: list[Any] = field(default_factory=list)

    def boundaries(self) -> list[Any]:
        numbers = [value for value in self.values if isinstance(value, (int, float)) and not isinstance(value, bool)]
        found = list(self.literals)
        if numbers:
            low, high = min(numbers), max(numbers)
            found += [low, high, low - 1, high + 1]
        return found

    def draw(self, rng: random.Random, *, allow_null: bool = True) -> Any:
        if allow_null and not self.column.not_null and rng.random() < self.null_rate:
            return None
        chance = rng.random()
        if self.values and chance < _OWN:
            return rng.choice(self.values)
        if self.values and chance < _NEAR:
            return near_copy(rng.choice(self.values), rng)
        edges = self.boundaries()
        if edges:
            return rng.choice(edges)
        return rng.choice(self.values) if self.values else invented(self.column, rng)

    def fresh(self, rng: random.Random, taken: set[Any], integer: bool = False) -> Any:
        """A value not in ``taken``, for a unique column (``integer``: the rowid, which takes integers only)."""
        for _ in range(24):
            value = self.draw(rng, allow_null=False)
            if integer and not (isinstance(value, int) and not isinstance(value, bool)):
                continue
            if value not in taken:
                return value
        numbers = [value for value in taken if isinstance(value, (int, float)) and not isinstance(value, bool)]
        if integer or self.column.affinity in ("integer", "real", "numeric") or not self.values:
            return int(max(numbers, default=0)) + 1
        base = str(rng.choice(self.values))
        while base in taken:
            base += rng.choice(_ALPHABET)
        return base


def near_copy(value: Any, rng: random.Random) -> Any:
    """A value close to ``value`` of the same type."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value + rng.choice((-2, -1, 1, 2))
    if isinstance(value, float):
        return round(value + rng.choice((-1, 1)) * rng.choice((0.5, 1.0, abs(value) * 0.1)), 4)
    if isinstance(value, str) and value:
        way = rng.randrange(3)
        if way == 0:
            position = rng.randrange(len(value))
            pool = string.digits if value[position].isdigit() else _ALPHABET
            return value[:position] + rng.choice(pool) + value[position + 1:]
        if way == 1 and len(value) > 1:
            return value[: rng.randrange(1, len(value))]
        return value + " "
    return value


def invented(column: Column, rng: random.Random) -> Any:
    """A value of ``column``'s declared type, for a column with no values to learn from."""
    if column.affinity == "integer":
        return rng.randint(0, 100)
    if column.affinity in ("real", "numeric"):
        return round(rng.uniform(0, 100), 2)
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 8)))


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="ignore")


def profile_table(conn: sqlite3.Connection, table: Table, literals: dict[str, list[Any]]) -> tuple[
        int, dict[str, ColumnProfile]]:
    """``(rows in the table, {column: profile})``; ``literals`` maps a lower-case column name to the values the
    gold queries compare a column of that name with."""
    conn.text_factory = _decode
    total = conn.execute(f"SELECT count(*) FROM {quote(table.name)}").fetchone()[0]
    names = ", ".join(quote(column.name) for column in table.columns)
    sample = conn.execute(f"SELECT {names} FROM {quote(table.name)} LIMIT {SAMPLE_ROWS}").fetchall()
    profiles = {}
    for position, column in enumerate(table.columns):
        values = [row[position] for row in sample if row[position] is not None]
        null_rate = 1 - len(values) / len(sample) if sample else 0.0
        profiles[column.name] = ColumnProfile(column, values, null_rate, list(literals.get(column.name.lower(), ())))
    return total, profiles
