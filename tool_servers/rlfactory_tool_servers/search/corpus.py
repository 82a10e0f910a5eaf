"""Read a passage corpus in Search-R1's wiki-18 jsonl format, streaming, with a checksum of the file.

Each non-blank line is one JSON object, either

- ``{"id": str, "contents": "\\"Title\\"\\ntext"}`` (Search-R1's ``wiki-18.jsonl``: the title, in double quotes,
  on the first line of ``contents``), or
- ``{"id": str, "title": str, "text": str}``, stored as ``contents = f'"{title}"\\n{text}'``.

``iter_passages`` yields one passage at a time (an index build never holds the corpus); ``load_corpus`` keeps only
two parallel lists (``contents`` and ``ids``), not the parsed rows, so a 21M-passage corpus costs little more than
its text. Both hash the file's bytes as they read them: the checksum that ties a built index to its corpus
(``manifest.py``) costs no second pass.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHECKSUM_ALGORITHM = "blake2b"
_READ_CHUNK = 1 << 20


@dataclass(frozen=True)
class Corpus:
    """Passages in file order: ``contents[i]`` is passage ``i``, ``ids[i]`` its id from the file; ``checksum`` is
    ``file_checksum`` of the file they were read from."""

    contents: list[str]
    ids: list[str]
    checksum: str = ""

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


class PassageReader:
    """Iterates over the passages of the jsonl file at ``path`` as ``(id, contents)``, hashing every byte read.

    ``skip`` passages are read (and hashed) but neither parsed nor yielded: a resumed build starts where it stopped
    at the cost of reading, not of parsing. After a full iteration, ``checksum`` is ``file_checksum(path)`` and
    ``count`` the number of passages in the file. A bad line raises ``ValueError`` naming the file and the 1-based
    line number; a file without passages raises ``ValueError`` too.
    """

    def __init__(self, path: str | Path, *, skip: int = 0) -> None:
        self.path = Path(path)
        self.skip = skip
        self.count = 0
        self._digest = hashlib.blake2b(digest_size=16)
        self._done = False

    @property
    def checksum(self) -> str:
        if not self._done:
            raise RuntimeError("the checksum is known only once the whole file has been read")
        return f"{CHECKSUM_ALGORITHM}:{self._digest.hexdigest()}"

    def __iter__(self) -> Iterator[tuple[str, str]]:
        update = self._digest.update
        with self.path.open("rb") as lines:
            for line_number, line in enumerate(lines, start=1):
                update(line)
                if not line.strip():
                    continue
                self.count += 1
                if self.count <= self.skip:
                    continue
                try:
                    yield contents_of(json.loads(line))
                except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors too
                    raise ValueError(f"{self.path}:{line_number}: bad corpus line: {exc}") from None
        if not self.count:
            raise ValueError(f"{self.path}: the corpus holds no passages")
        self._done = True


def iter_passages(path: str | Path) -> Iterator[tuple[str, str]]:
    """Every passage of the jsonl file at ``path`` as ``(id, contents)``, one at a time."""
    return iter(PassageReader(path))


def load_corpus(path: str | Path) -> Corpus:
    """Read every passage of the jsonl file at ``path`` (see ``PassageReader`` for the errors)."""
    contents: list[str] = []
    ids: list[str] = []
    reader = PassageReader(path)
    for passage_id, passage in reader:
        ids.append(passage_id)
        contents.append(passage)
    return Corpus(contents=contents, ids=ids, checksum=reader.checksum)


def file_checksum(path: str | Path) -> str:
    """``blake2b:<hex>`` of the bytes of the file at ``path`` (the checksum a ``PassageReader`` computes)."""
    digest = hashlib.blake2b(digest_size=16)
    with Path(path).open("rb") as data:
        while chunk := data.read(_READ_CHUNK):
            digest.update(chunk)
    return f"{CHECKSUM_ALGORITHM}:{digest.hexdigest()}"
