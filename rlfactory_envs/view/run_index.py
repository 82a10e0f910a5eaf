"""One run of ``rlf view``: a trajectory file (or a folder of them), indexed in a background thread.

The index keeps, per episode, where its line lies (source, byte offset, length) and the table's values
(``ColumnStore``); the file itself stays on disk and is read in blocks, so the server's memory does not grow with
the file. A line that is not an episode record (cut short by an interrupted writer, not JSON, another shape) is
kept as a ``BadLine`` with its line number and the reason, and skipped. The page can ask for a run's columns
while it is still being indexed: it gets the rows so far and ``complete: false``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from rlfactory_envs.view.column_store import ColumnStore
from rlfactory_envs.view.episode_fields import NotAnEpisode, decode_line
from rlfactory_envs.view.foreground import Foreground

BLOCK_BYTES = 8 << 20
MAX_LINE_BYTES = 256 << 20
"""A longer line is reported as a bad line and skipped, not read."""
WHITESPACE = b" \t\r\f\v"
MAX_BAD_KEPT = 1000
"""Bad lines listed with their reason; more are only counted."""
MAX_EPISODE_BYTES = 32 << 20
"""An episode's page reads at most this much of its line."""
INDEX_NICENESS = 10
"""How much lower than the server's the indexing thread's scheduling priority is (``nice``'s scale)."""
MAX_PAUSE_S = 0.5
"""The longest the indexing thread waits, before a block, for the requests being answered (``Foreground``)."""


@dataclass(frozen=True)
class BadLine:
    """A line that is not an episode record: ``line`` is 1-based, as an editor shows it."""

    src: int
    line: int
    offset: int
    length: int
    reason: str


class RunIndex:
    """The index of one run's trajectory files (``sources``), built by ``start``'s thread."""

    def __init__(self, sources: list[Path]):
        self.sources = sources
        self.foreground = Foreground()
        """The server's requests, which each block waits for (the server gives every run the same one)."""
        self.store = ColumnStore()
        self.bad: list[BadLine] = []
        self.bad_count = 0
        self.bytes_total = sum(path.stat().st_size for path in sources)
        self.bytes_done = 0
        self.complete = False
        self.seconds = 0.0
        self.failure: str | None = None
        self.on_complete: Callable[[], None] | None = None
        """Called from the indexing thread once the index is complete (the server encodes the columns then)."""
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Index the sources in a daemon thread (``complete`` turns true at the end)."""
        self._thread = threading.Thread(target=self._index_all, name="rlf-view-index", daemon=True)
        self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the index to be complete; whether it is."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.complete

    def record(self, row: int) -> dict[str, Any]:
        """Episode ``row``'s line, parsed; a line past ``MAX_EPISODE_BYTES``, or one that no longer parses (the
        file was rewritten since it was indexed), gives ``{"unreadable": why}``."""
        columns = self.store.columns()
        src, offset, length = (int(columns[name][row]) for name in ("src", "offset", "length"))
        if length > MAX_EPISODE_BYTES:
            return {"unreadable": f"its line is {length / 2**20:.0f} MB, more than the {MAX_EPISODE_BYTES >> 20} MB "
                                  "an episode page reads"}
        try:
            found = msgspec.json.decode(read_bytes(self.sources[src], offset, length))
        except msgspec.DecodeError:
            found = None
        if not isinstance(found, dict):
            return {"unreadable": f"line {int(columns['line'][row]) + 1} of {self.sources[src]} no longer holds "
                                  "the episode: the file changed since it was indexed (restart rlf view)"}
        return found

    def _index_all(self) -> None:
        started = time.perf_counter()
        yield_the_cpu()
        try:
            for src, path in enumerate(self.sources):
                self._index_source(src, path)
        except OSError as exc:
            self.failure = f"reading stopped: {exc}"
        finally:
            self.store.flush()
            self.seconds = time.perf_counter() - started
            self.complete = True
            if self.on_complete is not None:
                self.on_complete()

    def _index_source(self, src: int, path: Path) -> None:
        """Every line of ``path``, in blocks; a line running past a block is gathered in ``pending``."""
        pending, pending_at, skipping, line = bytearray(), 0, False, 0
        with path.open("rb") as file:
            at = 0
            while block := self._next_block(file):
                pos = 0
                if pending or skipping:
                    newline = block.find(b"\n")
                    if newline < 0:
                        pending, skipping = self._grow(src, line, pending, pending_at, block, skipping)
                        at += len(block)
                        self.bytes_done += len(block)
                        continue
                    if not skipping:
                        pending += block[:newline]
                        self._add(src, line, pending_at, memoryview(pending))
                    pending, skipping, pos, line = bytearray(), False, newline + 1, line + 1
                while (newline := block.find(b"\n", pos)) >= 0:
                    self._add(src, line, at + pos, memoryview(block)[pos:newline])
                    pos, line = newline + 1, line + 1
                if pos < len(block):
                    pending, pending_at = bytearray(block[pos:]), at + pos
                at += len(block)
                self.bytes_done += len(block)
        if pending:
            self._add(src, line, pending_at, memoryview(pending))

    def _next_block(self, file: BinaryIO) -> bytes:
        """The next block of ``file``, read once no request is being answered (or ``MAX_PAUSE_S`` has passed)."""
        self.foreground.wait_idle(MAX_PAUSE_S)
        return file.read(BLOCK_BYTES)

    def _grow(self, src: int, line: int, pending: bytearray, pending_at: int, block: bytes,
              skipping: bool) -> tuple[bytearray, bool]:
        """A block with no line end: add it to the pending line, or give the line up as too long."""
        if skipping:
            return pending, True
        pending += block
        if len(pending) <= MAX_LINE_BYTES:
            return pending, False
        self._bad(src, line, pending_at, len(pending), f"longer than {MAX_LINE_BYTES >> 20} MB; skipped unread")
        return bytearray(), True

    def _add(self, src: int, line: int, offset: int, text: memoryview) -> None:
        if not text or text[0] in WHITESPACE and not bytes(text).strip():
            return
        try:
            fields = decode_line(text)
        except msgspec.DecodeError as exc:
            self._bad(src, line, offset, len(text), f"not JSON, or cut short: {exc}")
        except NotAnEpisode as exc:
            self._bad(src, line, offset, len(text), str(exc))
        else:
            self.store.add(fields, src, line, offset, len(text))

    def _bad(self, src: int, line: int, offset: int, length: int, reason: str) -> None:
        self.bad_count += 1
        if len(self.bad) < MAX_BAD_KEPT:
            self.bad.append(BadLine(src, line + 1, offset, length, reason))


def yield_the_cpu() -> None:
    """Lower the calling thread's scheduling priority (Linux, where a thread has its own niceness), so that serving
    requests, and a browser on the same machine drawing them, come before indexing. A refusal leaves it as it is."""
    if sys.platform != "linux":
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), INDEX_NICENESS)
    except OSError:
        pass


def read_bytes(path: Path, offset: int, length: int) -> bytes:
    """``length`` bytes of ``path`` from ``offset``."""
    with path.open("rb") as file:
        file.seek(offset)
        return file.read(length)
