"""Timed tests run alone when pytest-xdist runs the suite on several workers (``pytest -n 2``).

A test marked ``alone`` asserts a wall-clock bound or a ratio of two timings; a test on another worker would take CPU
from it. Every test holds a shared lock on one file of the run while it runs (setup, call and teardown); an ``alone``
test holds it exclusively. A second file is a turnstile that gives the exclusive holder precedence: a worker waiting
to run alone takes it first, so no new test starts until the ones running have ended and the alone test has run.
Without xdist, nothing is locked. Linux and macOS (``fcntl.flock``).
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO


def lock_folder() -> Path | None:
    """The folder of this run's lock files, shared by its workers; ``None`` outside xdist."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run or not os.environ.get("PYTEST_XDIST_WORKER"):
        return None
    folder = Path(tempfile.gettempdir()) / f"rlf-tests-{run}"
    folder.mkdir(exist_ok=True)
    return folder


def _locked(path: Path, how: int) -> IO[str]:
    """``path`` opened and locked; closing it releases the lock."""
    handle = path.open("a")
    fcntl.flock(handle, how)
    return handle


@contextmanager
def _shared(folder: Path) -> Iterator[None]:
    with _locked(folder / "turnstile", fcntl.LOCK_EX):
        running = _locked(folder / "running", fcntl.LOCK_SH)
    with running:
        yield


class RunLock:
    """One worker's side of the run's lock. An exclusive hold is kept while the worker's next test is ``alone`` too,
    so a run of them (a parametrized test's cases) waits for the other workers once, not once a case."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._exclusive: list[IO[str]] = []

    def held(self, alone: bool, next_alone: bool) -> AbstractContextManager[None]:
        """Hold the lock around one test: shared, or exclusive when ``alone`` (kept if ``next_alone``)."""
        return self._alone(keep=next_alone) if alone else _shared(self.folder)

    @contextmanager
    def _alone(self, keep: bool) -> Iterator[None]:
        self._exclusive = self._exclusive or [_locked(self.folder / name, fcntl.LOCK_EX)
                                              for name in ("turnstile", "running")]
        try:
            yield
        finally:
            if not keep:
                self.release()

    def release(self) -> None:
        for handle in reversed(self._exclusive):
            handle.close()  # closing the file releases its lock
        self._exclusive = []


def run_lock() -> RunLock | None:
    """This worker's lock, or ``None`` outside xdist (nothing is locked)."""
    folder = lock_folder()
    return None if folder is None else RunLock(folder)
