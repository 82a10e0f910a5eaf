"""The runs table's columns of one run: a compact, growing store the page sorts and filters.

Decoded lines arrive one at a time from the indexing thread; every ``CHUNK_ROWS`` they are turned, column by
column, into numpy arrays, so 100,000 episodes cost a few megabytes: numbers as float64/float32/int32/int64,
repeated strings (env, task id, template, difficulty, end reason) as codes into a list of labels, each reward part
a float32 column. ``payload`` is what ``/api/columns`` sends: the columns in binary (base64) and the labels.
"""

from __future__ import annotations

import base64
import threading
from typing import Any

import numpy as np

from rlfactory_envs.view.episode_fields import (LineFields, difficulty_of, end_reason, seconds_of, task_label,
                                                template_of)

CHUNK_ROWS = 4096
FIRST_CHUNK_ROWS = 256
"""The first chunk is flushed this early, so a page opened as indexing begins has rows to show."""
MAX_PARTS = 32
"""Reward parts a run's table keeps columns for (the first seen); a row's other parts are still on its page."""
LATENCY_BINS_MS = np.logspace(-1, 6, 29)
"""Edges of the per-call tool latency histogram, 0.1 ms to 1000 s, four bins a decade."""
LABEL_COLUMNS = {"env": lambda f: f.env_id, "task": task_label, "template": template_of,
                 "difficulty": difficulty_of, "reason": end_reason}
NUMBERS = (("src", np.int64), ("line", np.int64), ("offset", np.int64), ("length", np.int64), ("reward", np.float64),
           ("turns", np.int32), ("tool_calls", np.int32), ("tool_errors", np.int32), ("step", np.int64))
NULLABLE = ("seconds", "latency_ms")
"""The numbers of ``ColumnStore.add``'s tuples, in order: those that are never missing, then those that may be."""
SHOWN = ("reward", "turns", "tool_calls", "tool_errors", "seconds", "latency_ms", "step", "src", "line")


class Labels:
    """Strings as small integer codes: ``codes(texts)`` gives each distinct text the next code."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._codes: dict[str, int] = {}

    def codes(self, texts: list[str]) -> np.ndarray:
        for text in [t for t in dict.fromkeys(texts) if t not in self._codes]:  # in order of first appearance
            self._codes[text] = len(self.texts)
            self.texts.append(text)
        return np.fromiter((self._codes[t] for t in texts), dtype=np.int32, count=len(texts))


class ColumnStore:
    """The growing columns of a run's table; ``add``/``flush`` from one writer thread, the rest from any."""

    def __init__(self) -> None:
        self.labels = {name: Labels() for name in LABEL_COLUMNS}
        self.part_names: list[str] = []
        self.latency_counts = np.zeros(len(LATENCY_BINS_MS) + 1, dtype=np.int64)
        self._pending: list[tuple[Any, ...]] = []
        self._latencies: list[float] = []
        self._chunks: list[dict[str, np.ndarray]] = []
        self._lock = threading.Lock()
        self._joined: tuple[int, dict[str, np.ndarray]] | None = None

    def __len__(self) -> int:
        with self._lock:
            return sum(len(chunk["reward"]) for chunk in self._chunks)

    def add(self, fields: LineFields, src: int, line: int, offset: int, length: int) -> None:
        """Append one episode, read from line ``line`` (0-based) of source ``src``, ``length`` bytes at
        ``offset``. Its values are copied out of ``fields`` at once (plain numbers and strings, which the garbage
        collector does not track: keeping thousands of decoded lines would make it scan them again and again)."""
        latencies = fields.tool_latency_s
        self._latencies.extend(latencies)
        self._pending.append((src, line, offset, length, fields.reward, fields.turns, fields.tool_calls,
                              fields.tool_errors, -1 if fields.train_step is None else fields.train_step,
                              seconds_of(fields) if fields.steps else None,
                              1000.0 * sum(latencies) / len(latencies) if latencies else None,
                              *(read(fields) for read in LABEL_COLUMNS.values()), fields.reward_parts))
        if len(self._pending) >= (CHUNK_ROWS if self._chunks else FIRST_CHUNK_ROWS):
            self.flush()

    def flush(self) -> None:
        """Turn the pending rows into a chunk of columns."""
        rows, self._pending = self._pending, []
        if not rows:
            return
        chunk = self._chunk(rows)
        with self._lock:
            self._chunks.append(chunk)

    def columns(self) -> dict[str, np.ndarray]:
        """Every flushed row's columns, concatenated (cached until the next chunk)."""
        with self._lock:
            chunks, joined = list(self._chunks), self._joined
        if joined is not None and joined[0] == len(chunks):
            return joined[1]
        names = [*SHOWN, "offset", "length", *LABEL_COLUMNS, *(f"part:{name}" for name in self.part_names)]
        together = {name: np.concatenate([_column(chunk, name) for chunk in chunks]) if chunks
                    else np.zeros(0, dtype=np.float32) for name in names}
        with self._lock:
            self._joined = (len(chunks), together)
        return together

    def payload(self) -> dict[str, Any]:
        """The flushed rows as the page reads them: each column little-endian binary in base64 with its type
        (``f8``, ``f4``, ``i4``: a JavaScript typed array of it is made without parsing numbers), the labels as
        lists of texts."""
        columns = self.columns()
        shown = [*SHOWN, *LABEL_COLUMNS, *(f"part:{name}" for name in self.part_names)]
        return {"rows": int(len(columns["reward"])), "columns": {name: binary(columns[name]) for name in shown},
                "labels": {name: list(labels.texts) for name, labels in self.labels.items()},
                "parts": list(self.part_names), "latency_bins_ms": LATENCY_BINS_MS.tolist(),
                "latency_counts": self.latency_counts.tolist()}

    def _chunk(self, rows: list[tuple[Any, ...]]) -> dict[str, np.ndarray]:
        """The columns of ``rows`` (``add``'s tuples), and their tool calls' latencies counted."""
        n = len(rows)
        chunk = {name: np.fromiter((row[k] for row in rows), dtype=dtype, count=n)
                 for k, (name, dtype) in enumerate(NUMBERS)}
        for k, name in enumerate(NULLABLE, start=len(NUMBERS)):
            chunk[name] = _floats([row[k] for row in rows]).astype(np.float32)
        first_label = len(NUMBERS) + len(NULLABLE)
        for k, name in enumerate(LABEL_COLUMNS, start=first_label):
            chunk[name] = self.labels[name].codes([row[k] for row in rows])
        parts = [row[-1] for row in rows]
        known = set(self.part_names)
        for name in (name for found in parts if found for name in found):
            if name not in known and len(known) < MAX_PARTS:
                known.add(name)
                self.part_names.append(name)
        for name in self.part_names:
            chunk[f"part:{name}"] = _floats([found.get(name) for found in parts]).astype(np.float32)
        flat = np.asarray(self._latencies, dtype=np.float64) * 1000.0
        self._latencies = []
        self.latency_counts += np.bincount(np.searchsorted(LATENCY_BINS_MS, flat), minlength=len(self.latency_counts))
        return chunk


def binary(column: np.ndarray) -> dict[str, str]:
    """``column`` as ``{"type", "base64"}``: floats as they are (``f8``/``f4``), integers as ``i4``."""
    kind = column.dtype.str[1:] if column.dtype.kind == "f" else "i4"
    data = column.astype(f"<{kind}", copy=False).tobytes()
    return {"type": kind, "base64": base64.b64encode(data).decode("ascii")}


def _floats(values: list[float | None]) -> np.ndarray:
    """``values`` as float64, ``None`` as NaN."""
    return np.array(values, dtype=np.float64)


def _column(chunk: dict[str, np.ndarray], name: str) -> np.ndarray:
    """``chunk``'s column ``name``; a part first seen after the chunk was made is all NaN there."""
    found = chunk.get(name)
    return found if found is not None else np.full(len(chunk["reward"]), np.nan, dtype=np.float32)
