"""The runs table's columns of one run: a compact, growing store the page sorts and filters.

Rows arrive a line at a time from the indexing thread; every ``CHUNK_ROWS`` they are frozen into numpy arrays, so
100,000 episodes cost a few megabytes: numbers as float32/int32/int64, repeated strings (env, task id, template,
difficulty, end reason) as codes into a list of labels. ``payload`` is what ``/api/columns`` sends: the columns
as lists (NaN as ``null``), the labels, and each reward part's column.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

from rlfactory_envs.view.episode_fields import TableRow

CHUNK_ROWS = 4096
MAX_PARTS = 32
"""Reward parts a run's table keeps columns for (the first seen); a row's other parts are still on its page."""
LATENCY_BINS_MS = np.logspace(-1, 6, 29)
"""Edges of the per-call tool latency histogram, 0.1 ms to 1000 s, four bins a decade."""

NUMBER_COLUMNS = {"reward": np.float64, "turns": np.int32, "tool_calls": np.int32, "tool_errors": np.int32,
                  "seconds": np.float32, "latency_ms": np.float32, "step": np.int64, "src": np.int32,
                  "line": np.int64, "offset": np.int64, "length": np.int64}
LABEL_COLUMNS = ("env", "task", "template", "difficulty", "reason")


class Labels:
    """Strings as small integer codes: ``code(text)`` gives each distinct text the next code."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._codes: dict[str, int] = {}

    def code(self, text: str) -> int:
        found = self._codes.get(text)
        if found is None:
            found = self._codes[text] = len(self.texts)
            self.texts.append(text)
        return found


class ColumnStore:
    """The growing columns of a run's table; ``add`` from one writer thread, ``payload``/``column`` from any."""

    def __init__(self) -> None:
        self.labels = {name: Labels() for name in LABEL_COLUMNS}
        self.part_names: list[str] = []
        self.latency_counts = np.zeros(len(LATENCY_BINS_MS) + 1, dtype=np.int64)
        self._pending: dict[str, list[Any]] = self._empty_pending()
        self._chunks: list[dict[str, np.ndarray]] = []
        self._lock = threading.Lock()
        self._frozen: tuple[int, dict[str, np.ndarray]] | None = None

    def __len__(self) -> int:
        return sum(len(chunk["reward"]) for chunk in self._chunks) + len(self._pending["reward"])

    def add(self, row: TableRow, src: int, line: int, offset: int, length: int) -> None:
        """Append one episode's row, read from line ``line`` (0-based) of source ``src`` at ``offset``."""
        pending = self._pending
        for name in LABEL_COLUMNS:
            pending[name].append(self.labels[name].code(getattr(row, name)))
        for name, value in (("reward", row.reward), ("turns", row.turns), ("tool_calls", row.tool_calls),
                            ("tool_errors", row.tool_errors), ("seconds", row.seconds),
                            ("latency_ms", row.latency_ms), ("step", row.step), ("src", src), ("line", line),
                            ("offset", offset), ("length", length)):
            pending[name].append(value)
        for name in row.parts:
            if name not in self.part_names and len(self.part_names) < MAX_PARTS:
                self.part_names.append(name)
        pending["parts"].append(row.parts)
        if row.call_latencies:
            bins = np.searchsorted(LATENCY_BINS_MS, np.asarray(row.call_latencies) * 1000.0)
            np.add.at(self.latency_counts, bins, 1)
        if len(pending["reward"]) >= CHUNK_ROWS:
            self.flush()

    def flush(self) -> None:
        """Freeze the pending rows into a chunk of numpy arrays."""
        pending = self._pending
        if not pending["reward"]:
            return
        chunk = {name: np.asarray(pending[name], dtype=dtype) for name, dtype in NUMBER_COLUMNS.items()}
        chunk.update({name: np.asarray(pending[name], dtype=np.int32) for name in LABEL_COLUMNS})
        chunk.update({f"part:{name}": np.asarray([p.get(name, math.nan) for p in pending["parts"]], np.float32)
                      for name in self.part_names})
        with self._lock:
            self._chunks.append(chunk)
            self._pending = self._empty_pending()
            self._frozen = None

    def columns(self) -> dict[str, np.ndarray]:
        """Every frozen row's columns, concatenated (cached until the next chunk)."""
        with self._lock:
            chunks, frozen = list(self._chunks), self._frozen
        if frozen is not None and frozen[0] == len(chunks):
            return frozen[1]
        names = [*NUMBER_COLUMNS, *LABEL_COLUMNS, *(f"part:{name}" for name in self.part_names)]
        joined = {name: np.concatenate([_column(chunk, name) for chunk in chunks]) if chunks
                  else np.zeros(0, dtype=np.float32) for name in names}
        with self._lock:
            self._frozen = (len(chunks), joined)
        return joined

    def payload(self) -> dict[str, Any]:
        """The frozen rows as the page reads them: each column a list, labels as lists of texts."""
        columns = self.columns()
        shown = [name for name in columns if name not in ("offset", "length")]
        return {"rows": int(len(columns["reward"])),
                "columns": {name: columns[name].tolist() for name in shown},
                "labels": {name: list(self.labels[name].texts) for name in LABEL_COLUMNS},
                "parts": list(self.part_names),
                "latency_bins_ms": LATENCY_BINS_MS.tolist(), "latency_counts": self.latency_counts.tolist()}

    @staticmethod
    def _empty_pending() -> dict[str, list[Any]]:
        return {name: [] for name in [*NUMBER_COLUMNS, *LABEL_COLUMNS, "parts"]}


def _column(chunk: dict[str, np.ndarray], name: str) -> np.ndarray:
    """``chunk``'s column ``name``; a part first seen after the chunk was frozen is all NaN there."""
    found = chunk.get(name)
    return found if found is not None else np.full(len(chunk["reward"]), math.nan, dtype=np.float32)
