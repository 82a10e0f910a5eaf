"""Sandbox rows as compact text tables for a model to read: a header line of column names, then one line per row,
cells separated by `` | ``, numbers as the data holds them (``131.0``, ``4.8``, ``474``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["SEPARATOR", "format_cell", "format_table"]

SEPARATOR = " | "
MISSING = "NaN"
"""A missing value, as pandas shows it (the sandbox's tables drop such rows, so it is rare)."""


def format_cell(value: Any) -> str:
    """One cell on one line: numbers as Python writes them, line breaks as spaces, and a text holding ``|`` (some
    names do: ``Sonder | 21 Chelsea``) or starting with ``"`` in double quotes, its quotes doubled, so the cells
    of a line stay apart."""
    if value is None:
        return MISSING
    text = value if isinstance(value, str) else str(value)
    text = " ".join(text.splitlines())
    if "|" in text or text.startswith('"'):
        text = '"' + text.replace('"', '""') + '"'
    return text


def format_table(columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    """``columns`` as a header line, then each row's cells in that order, one line per row."""
    lines = [SEPARATOR.join(format_cell(column) for column in columns)]
    lines.extend(SEPARATOR.join(format_cell(row.get(column)) for column in columns) for row in rows)
    return "\n".join(lines)
