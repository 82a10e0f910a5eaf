"""Text search in any field of a run's episodes: the files are scanned in blocks, not loaded.

The query is matched against each line's JSON text, ignoring ASCII case, in the form JSON writes it (a quote in
the query matches ``\\"`` in the file), so it finds words in the messages, the task, the answer, the reward's
reasons alike. A scan stops at its deadline and says how far it got; results are cached per run for the queries
asked last.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from rlfactory_envs.view.run_index import RunIndex

LOWER_ASCII = bytes.maketrans(bytes(range(65, 91)), bytes(range(97, 123)))
SCAN_BYTES = 4 << 20
MAX_QUERY_CHARS = 256
CACHED_QUERIES = 16


@dataclass(frozen=True)
class SearchResult:
    """The rows whose line holds the query; ``complete`` is false when the deadline cut the scan short."""

    rows: list[int]
    complete: bool
    scanned_bytes: int


class RunSearch:
    """Searches of one run: one scan at a time, the last ``CACHED_QUERIES`` results kept."""

    def __init__(self, index: RunIndex):
        self.index = index
        self.busy = threading.Lock()
        self._cache: OrderedDict[tuple[str, int], SearchResult] = OrderedDict()

    def search(self, query: str, deadline_s: float) -> SearchResult:
        """The rows matching ``query`` (at most ``MAX_QUERY_CHARS``), scanning for at most ``deadline_s``."""
        columns = self.index.store.columns()
        key = (query, len(columns["reward"]))
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        needle = json.dumps(query[:MAX_QUERY_CHARS], ensure_ascii=False)[1:-1].encode().translate(LOWER_ASCII)
        found = scan(self.index, columns, needle, time.monotonic() + deadline_s)
        if found.complete:
            self._cache[key] = found
            while len(self._cache) > CACHED_QUERIES:
                self._cache.popitem(last=False)
        return found


def scan(index: RunIndex, columns: dict[str, np.ndarray], needle: bytes, deadline: float) -> SearchResult:
    """The rows (of ``columns``) whose line holds ``needle`` (lower-case bytes), source by source."""
    rows: list[int] = []
    scanned = 0
    for src, path in enumerate(index.sources):
        in_src = np.flatnonzero(columns["src"] == src)
        starts = columns["offset"][in_src]
        ends = starts + columns["length"][in_src]
        with path.open("rb") as file:
            at = 0
            while block := file.read(SCAN_BYTES + len(needle) - 1):
                text = block.translate(LOWER_ASCII)
                rows += _hits(text, needle, at, starts, ends, in_src)
                scanned += min(len(block), SCAN_BYTES)
                at += SCAN_BYTES
                file.seek(at)
                if time.monotonic() > deadline:
                    return SearchResult(sorted(set(rows)), False, scanned)
    return SearchResult(sorted(set(rows)), True, scanned)


def _hits(text: bytes, needle: bytes, at: int, starts: np.ndarray, ends: np.ndarray,
          rows: np.ndarray) -> list[int]:
    """The rows with a match in ``text`` (the file from byte ``at``); after a match the scan jumps to the end of
    its row's line, so a common word costs one find per row, not per occurrence."""
    found, pos = [], 0
    while (hit := text.find(needle, pos)) >= 0:
        i = int(np.searchsorted(starts, at + hit, side="right")) - 1
        if i >= 0 and at + hit < ends[i]:
            found.append(int(rows[i]))
            pos = int(ends[i]) - at
        else:
            pos = hit + 1
    return found
