"""Load a passage corpus in Search-R1's wiki-18 jsonl format.

Each non-blank line is one JSON object, either

- ``{"id": str, "contents": "\\"Title\\"\\ntext"}`` (Search-R1's ``wiki-18.jsonl``: the title, in double quotes,
  on the first line of ``contents``), or
- ``{"id": str, "title": str, "text": str}``, stored as ``contents = f'"{title}"\\n{text}'``.

Only two parallel lists are kept (``contents`` and ``ids``), not the parsed rows, so a 21M-passage corpus costs
little more than its text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Corpus:
    """Passages in file order: ``contents[i]`` is passage ``i``, ``ids[i]`` its id from the file."""

    contents: list[str]
    ids: list[str]

    def __len__(self) -> int:
        return len(self.contents)


def contents_of(row: Any) -> tuple[str, str]:
    """``(id, contents)`` of one parsed row; ``ValueError`` says what is wrong with it."""
    if not isinstance(row, dict):
        raise ValueError(f"expected a JSON object, got {type(row).__name__}")
    passage_id = row.get("id")
    if isinstance(passage_id, int) and not isinstance(passage_id, bool):
        passage_id = str(passage_id)
    if not isinstance(passage_id, str):
        raise ValueError("missing or non-string 'id'")
    if "contents" in row:
        contents = row["contents"]
        if not isinstance(contents, str):
            raise ValueError("'contents' must be a string")
        return passage_id, contents
    title, text = row.get("title"), row.get("text")
    if isinstance(title, str) and isinstance(text, str):
        return passage_id, f'"{title}"\n{text}'
    raise ValueError("expected a string 'contents', or string 'title' and 'text'")


def load_corpus(path: str | Path) -> Corpus:
    """Read every passage of the jsonl file at ``path``.

    Blank lines are skipped. A line that is not valid JSON or not a passage raises ``ValueError`` naming the file
    and the 1-based line number; an empty corpus raises ``ValueError`` too.
    """
    path = Path(path)
    contents: list[str] = []
    ids: list[str] = []
    with path.open("r", encoding="utf-8") as lines:
        for line_number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                passage_id, passage = contents_of(json.loads(line))
            except ValueError as exc:  # json.JSONDecodeError is a ValueError too
                raise ValueError(f"{path}:{line_number}: bad corpus line: {exc}") from None
            ids.append(passage_id)
            contents.append(passage)
    if not contents:
        raise ValueError(f"{path}: the corpus holds no passages")
    return Corpus(contents=contents, ids=ids)
