"""The databases of a directory in Spider's or BIRD's layout, by ``db_id``, and the worker threads that query them.

``find_databases(db_dir)`` reads ``<db_dir>/<db_id>/<db_id>.sqlite`` (Spider's ``database/``, BIRD's
``dev_databases/``; ``.db`` and ``.sqlite3`` too) and flat ``<db_dir>/<db_id>.sqlite`` files. A ``db_id`` is only
ever looked up in that mapping, never turned into a path, so no argument can reach a file outside it.

A database in its own folder (``<db_dir>/<db_id>/``) may have variants beside it: the official Spider test-suite
databases put the same schema with other rows in every ``.sqlite`` file of that folder. ``variants(db_id)`` opens
them all (for the reward); ``get(db_id)`` is always the main file alone (for the tools).

The catalog's worker threads are a ``fair_pool.FairPool``: queries of many clients (the tools' episodes, the
reward's answers) share them so that none keeps the others waiting.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from rlfactory_tool_servers.sql.sandbox.engine import ReadOnlyDatabase
from rlfactory_tool_servers.sql.sandbox.fair_pool import FairPool

__all__ = ["DatabaseCatalog", "UnknownDatabase", "find_databases", "find_variants"]

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


class DatabaseCatalog:
    """Read-only databases by ``db_id`` (each opened on first use, with its own connection pool) and a fair pool of
    ``threads`` worker threads to run queries in (``pool``), so an event loop is never blocked by SQLite. Heavy
    queries hold at most three quarters of them, or, given ``heavy_threads``, that many more threads of their own:
    then light queries always have all ``threads``."""

    def __init__(self, databases: str | os.PathLike[str] | Mapping[str, str | os.PathLike[str]], *,
                 threads: int = 8, pool_size: int | None = None, heavy_threads: int | None = None):
        if isinstance(databases, Mapping):
            self.paths = {str(db_id): Path(path) for db_id, path in databases.items()}
            self.db_dir: Path | None = None
        else:
            self.db_dir = Path(databases)
            self.paths = find_databases(self.db_dir)
        if threads < 1:
            raise ValueError("threads must be at least 1")
        self.threads = threads + (heavy_threads or 0)
        self.pool_size = pool_size or self.threads
        self._open: dict[str, ReadOnlyDatabase] = {}
        self._variants: dict[str, tuple[ReadOnlyDatabase, ...]] = {}
        self._lock = threading.Lock()
        self.pool = FairPool(self.threads, reserve=None if heavy_threads is None else threads)

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

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker thread, as a light client of its own (quick work: schema look-ups), awaited
        without blocking the loop."""
        return await self.pool.run(self.pool.client(), lambda _: fn(*args), math.inf)

    def close(self) -> None:
        """Stop the worker threads and close every connection; databases used again are opened again (so an idle
        catalog holds no file open)."""
        with self._lock:
            databases, self._open = list(self._open.values()), {}
            databases += [variant for suite in self._variants.values() for variant in suite[1:]]
            self._variants = {}
        self.pool.close()
        for database in databases:
            database.close()
