"""The text table the benchmarks print: a header, a rule of dashes, then a line per row, in aligned columns."""

from __future__ import annotations

from collections.abc import Sequence


def aligned(lines: Sequence[Sequence[str]]) -> str:
    """``lines`` (the header first) as left-aligned columns two spaces apart, a rule under the header."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    text = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines]
    text.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(text)
