"""Query results as a compact text table for a model to read, capped in rows and characters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["format_rows", "format_value", "quote_identifier"]

MAX_CELL_CHARS = 120


def quote_identifier(name: str) -> str:
    """``name`` as an SQLite identifier: bare when it is a plain word, else in double quotes (quotes doubled)."""
    if name.isidentifier() and name.isascii():
        return name
    return '"' + name.replace('"', '""') + '"'


def format_value(value: Any, max_chars: int = MAX_CELL_CHARS) -> str:
    """One cell: ``NULL``, numbers as Python writes them, text on one line (cut with ``...``), blobs by size."""
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return f"<blob {len(value)} bytes>"
    text = str(value) if not isinstance(value, str) else value
    text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("|", "\\|")
    return text if len(text) <= max_chars else text[:max_chars] + "..."


def format_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], *, more: bool, max_rows: int,
                max_chars: int) -> str:
    """A header line of column names, one line per row (`` | `` between cells), then a line that says how many
    rows there are, or that the result was cut (rows beyond ``max_rows``, or beyond ``max_chars`` of text)."""
    lines = [" | ".join(format_value(c) for c in columns)]
    used = len(lines[0]) + 1
    shown = 0
    for row in rows[:max_rows]:
        line = " | ".join(format_value(v) for v in row)
        if used + len(line) + 1 > max_chars:
            break
        lines.append(line)
        used += len(line) + 1
        shown += 1
    if shown == len(rows) and not more:
        lines.append(f"({shown} row{'s' if shown != 1 else ''})")
    else:
        total = f"{len(rows)}+" if more else str(len(rows))
        lines.append(f"(result cut: showing the first {shown} of {total} rows; add a WHERE clause, an aggregate or "
                     f"a LIMIT to see less)")
    return "\n".join(lines)
