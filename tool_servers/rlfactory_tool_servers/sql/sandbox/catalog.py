"""The databases of a directory in Spider's or BIRD's layout, by ``db_id``, and the worker threads that query them.

``find_databases(db_dir)`` reads ``<db_dir>/<db_id>/<db_id>.sqlite`` (Spider's ``database/``, BIRD's
``dev_databases/``; ``.db`` and ``.sqlite3`` too) and flat ``<db_dir>/<db_id>.sqlite`` files. A ``db_id`` is only
ever looked up in that mapping, never turned into a path, so no argument can reach a file outside it.

A database in its own folder (``<db_dir>/<db_id>/``) may have variants beside it: the official Spider test-suite
databases put the same schema with other rows in every ``.sqlite`` file of that folder. ``variants(db_id)`` opens
them all (for the reward); ``get(db_id)`` is always the main file alone (for the tools).

``FairSlots`` admits queries to the worker threads fairly: at most ``per_session`` running queries per session
(the tools' episode id), at most ``total`` in all, and when a thread frees the waiting query whose session runs
the fewest goes first (then the oldest), so one trajectory cannot take the pool; a query still waiting at its
deadline is not run (``QueryTimeout``).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from rlfactory_tool_servers.sql.sandbox.engine import QueryTimeout, ReadOnlyDatabase

__all__ = ["DatabaseCatalog", "FairSlots", "UnknownDatabase", "find_databases", "find_variants"]

SQLITE_SUFFIXES = (".sqlite", ".db", ".sqlite3")
T = TypeVar("T")


class UnknownDatabase(KeyError):
    """No database with that ``db_id`` in the catalog."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown database"


def find_databases(db_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """``{db_id: path}`` of every SQLite file in ``db_dir``'s layout, sorted by ``db_id``.

    ``FileNotFoundError`` when ``db_dir`` is not a directory."""
    root = Path(db_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"no database directory at {root}")
    found: dict[str, Path] = {}
    for child in sorted(root.iterdir()):
        if child.is_dir():
            for suffix in SQLITE_SUFFIXES:
                candidate = child / f"{child.name}{suffix}"
                if candidate.is_file():
                    found[child.name] = candidate
                    break
        elif child.is_file() and child.suffix in SQLITE_SUFFIXES:
            found.setdefault(child.stem, child)
    return dict(sorted(found.items()))


def find_variants(db_id: str, main: str | os.PathLike[str], db_dir: str | os.PathLike[str] | None = None
                  ) -> list[Path]:
    """The database files of ``db_id`` whose main file is ``main``: ``main`` first, then, when it lies in a folder
    of its own named ``db_id`` (not ``db_dir`` itself, where flat files are other databases), every other
    ``.sqlite`` file of that folder, sorted by name (the official test-suite evaluator reads every one too)."""
    main = Path(main)
    folder = main.parent
    if folder.name != db_id or (db_dir is not None and folder.resolve() == Path(db_dir).resolve()):
        return [main]
    others = [path for path in sorted(folder.iterdir())
              if path.suffix.lower() == ".sqlite" and path.name != main.name and path.is_file()]
    return [main, *others]


class FairSlots:
    """Admission of queries to ``total`` worker threads, at most ``per_session`` per session (see the module
    docstring). Used from one event loop; an empty session is a session of its own for each query."""

    def __init__(self, total: int, per_session: int = 2):
        if total < 1 or per_session < 1:
            raise ValueError("total and per_session must be at least 1")
        self.total = total
        self.per_session = per_session
        self.running: dict[object, int] = {}
        self._busy = 0
        self._waiting: list[tuple[int, object, asyncio.Future[None]]] = []
        self._order = itertools.count()

    @asynccontextmanager
    async def slot(self, session: str, not_after: float) -> AsyncIterator[None]:
        """Hold one slot for ``session`` while the block runs; ``QueryTimeout`` when none came by ``not_after``
        (a ``time.monotonic()`` instant)."""
        key: object = session or object()
        admitted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((next(self._order), key, admitted))
        self._admit()
        try:
            await asyncio.wait_for(asyncio.shield(admitted), max(not_after - time.monotonic(), 0.0))
        except BaseException as exc:
            if admitted.done() and not admitted.cancelled():
                self._leave(key)  # admitted just as the wait ended
            else:
                self._waiting = [entry for entry in self._waiting if entry[2] is not admitted]
                admitted.cancel()
            if isinstance(exc, TimeoutError):
                raise QueryTimeout("the query waited past its deadline for a worker (other queries of this "
                                   "session or of others held them) and was not run") from None
            raise
        try:
            yield
        finally:
            self._leave(key)

    def _admit(self) -> None:
        while self._busy < self.total:
            eligible = [entry for entry in self._waiting if self.running.get(entry[1], 0) < self.per_session]
            if not eligible:
                return
            chosen = min(eligible, key=lambda entry: (self.running.get(entry[1], 0), entry[0]))
            self._waiting.remove(chosen)
            _, key, admitted = chosen
            self.running[key] = self.running.get(key, 0) + 1
            self._busy += 1
            admitted.set_result(None)

    def _leave(self, key: object) -> None:
        self._busy -= 1
        left = self.running[key] - 1
        if left:
            self.running[key] = left
        else:
            del self.running[key]
        self._admit()


POOL_START_TIMEOUT_S = 10.0


def _started_pool(threads: int) -> ThreadPoolExecutor:
    """A pool whose ``threads`` workers all start now, not one by one as load first reaches them: a burst finds
    them ready, and the process's thread count does not creep up during a run (it is what a soak checks for
    leaks). Each worker's first task waits until every worker holds one, so the pool must start them all."""
    pool = ThreadPoolExecutor(threads, thread_name_prefix="rlf-sql")
    everyone = threading.Barrier(threads)
    for _ in range(threads):
        pool.submit(everyone.wait, POOL_START_TIMEOUT_S)
    return pool


class DatabaseCatalog:
    """Read-only databases by ``db_id`` (each opened on first use, with its own connection pool) and a pool of
    ``threads`` worker threads to run queries in, so an event loop is never blocked by SQLite."""

    def __init__(self, databases: str | os.PathLike[str] | Mapping[str, str | os.PathLike[str]], *,
                 threads: int = 8, pool_size: int | None = None):
        if isinstance(databases, Mapping):
            self.paths = {str(db_id): Path(path) for db_id, path in databases.items()}
            self.db_dir: Path | None = None
        else:
            self.db_dir = Path(databases)
            self.paths = find_databases(self.db_dir)
        if threads < 1:
            raise ValueError("threads must be at least 1")
        self.threads = threads
        self.pool_size = pool_size or threads
        self._open: dict[str, ReadOnlyDatabase] = {}
        self._variants: dict[str, tuple[ReadOnlyDatabase, ...]] = {}
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    @property
    def ids(self) -> list[str]:
        return list(self.paths)

    def __contains__(self, db_id: object) -> bool:
        return isinstance(db_id, str) and db_id in self.paths

    def get(self, db_id: str) -> ReadOnlyDatabase:
        """The database ``db_id``; ``UnknownDatabase`` naming a few known ids when there is none."""
        database = self._open.get(db_id) if isinstance(db_id, str) else None
        if database is not None:
            return database
        if db_id not in self:
            known = ", ".join(self.ids[:8]) + (", ..." if len(self.paths) > 8 else "")
            raise UnknownDatabase(f"no database {str(db_id)[:100]!r}; known: {known or 'none'}")
        with self._lock:
            database = self._open.get(db_id)
            if database is None:
                database = self._open[db_id] = ReadOnlyDatabase(self.paths[db_id], db_id, self.pool_size)
        return database

    def variants(self, db_id: str) -> tuple[ReadOnlyDatabase, ...]:
        """``get(db_id)`` followed by the other ``.sqlite`` files of its folder (``find_variants``), each read-only
        with its own connection pool; the folder is read once. Just ``(get(db_id),)`` when there are none."""
        cached = self._variants.get(db_id) if isinstance(db_id, str) else None
        if cached is not None:
            return cached
        main = self.get(db_id)
        paths = find_variants(db_id, self.paths[db_id], self.db_dir)[1:]
        with self._lock:
            cached = self._variants.get(db_id)
            if cached is None:
                cached = self._variants[db_id] = (main, *(ReadOnlyDatabase(path, db_id, self.pool_size)
                                                          for path in paths))
        return cached

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            with self._lock:
                if self._executor is None:
                    self._executor = _started_pool(self.threads)
        return self._executor

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker thread, awaited without blocking the loop."""
        return await asyncio.get_running_loop().run_in_executor(self._pool(), fn, *args)

    def close(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
            databases, self._open = list(self._open.values()), {}
            databases += [variant for suite in self._variants.values() for variant in suite[1:]]
            self._variants = {}
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        for database in databases:
            database.close()
