"""Render retrieved passages the way Search-R1 shows them to the model (``_passages2string``)."""

from __future__ import annotations

from collections.abc import Iterable


def format_passages(passages: Iterable[str]) -> str:
    """One line per passage, numbered from 1: ``Doc {i}(Title: {title}) {text}\\n``.

    ``title`` is the first line of the passage's ``contents`` (quotes kept, as in wiki-18), ``text`` the rest.
    """
    lines = []
    for number, contents in enumerate(passages, start=1):
        title, _, text = contents.partition("\n")
        lines.append(f"Doc {number}(Title: {title}) {text}\n")
    return "".join(lines)
