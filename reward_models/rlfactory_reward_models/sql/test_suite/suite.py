"""Generated test suites per database, built once and cached on disk beside an index of what produced them.

``GeneratedSuites.databases(db_id, path)`` gives the variants of one database (read-only, each with its own
connection pool), building them on first use: ``candidates`` variants from seeds derived from ``seed`` and the
database, distilled to ``size`` for the gold queries known for it. A suite lives in
``<cache_dir>/<db_id>/<key>/`` (``variant_00.sqlite``, ... and ``index.json``), where ``key`` hashes everything
that decides its contents: the original file's bytes, the gold queries, the settings and the generator's
version. A changed database or task set builds a new suite; the user's data folder is never written. The cache
folder is ``cache_dir``, else ``$RLF_CACHE_DIR/sql_test_suites``, else ``$XDG_CACHE_HOME`` (``~/.cache``)
``/rlfactory_envs/sql_test_suites``. Several processes building the same suite at once each build it in a
folder of their own and the first to finish wins.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sqlite3
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rlfactory_reward_models.sql.compare import Comparison
from rlfactory_reward_models.sql.test_suite.distill import distill
from rlfactory_reward_models.sql.test_suite.fuzz import DEFAULT_MAX_ROWS, write_variant
from rlfactory_reward_models.sql.test_suite.neighbours import compared_literals
from rlfactory_reward_models.sql.test_suite.profile import profile_table
from rlfactory_reward_models.sql.test_suite.schema import read_schema
from rlfactory_tool_servers.sql.sandbox.engine import ReadOnlyDatabase

__all__ = ["GENERATOR_VERSION", "GeneratedSuites", "SuiteSettings", "default_cache_dir"]

GENERATOR_VERSION = 1
"""Bumped whenever the same inputs would give other variants; part of every suite's key."""
INDEX_NAME = "index.json"


def default_cache_dir() -> Path:
    if os.environ.get("RLF_CACHE_DIR"):
        return Path(os.environ["RLF_CACHE_DIR"]) / "sql_test_suites"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rlfactory_envs" / "sql_test_suites"


@dataclass(frozen=True)
class SuiteSettings:
    """``size``: variants kept per database (K); ``candidates``: variants generated to choose them from;
    ``seed``; ``max_rows``: rows per table of a variant; ``cache_dir``: see the module docstring."""

    size: int = 10
    candidates: int = 30
    seed: int = 0
    max_rows: int = DEFAULT_MAX_ROWS
    cache_dir: str | None = None

    def __post_init__(self) -> None:
        if self.size < 1 or self.candidates < self.size or self.max_rows < 1:
            raise ValueError(f"invalid test-suite settings (need 1 <= size <= candidates, max_rows >= 1): {self}")


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _variant_seed(seed: int, db_id: str, position: int) -> int:
    return random.Random(f"{seed}:{db_id}:{position}").getrandbits(63)


class GeneratedSuites:
    """The generated variants of every database of a task set. ``queries``: the gold queries per ``db_id`` (what
    the distillation tells apart); ``comparison``: the dataset's result comparison."""

    def __init__(self, settings: SuiteSettings, comparison: Comparison,
                 queries: Mapping[str, Sequence[str]] | None = None, pool_size: int = 4):
        self.settings = settings
        self.comparison = comparison
        self.queries = {db_id: sorted(set(sqls)) for db_id, sqls in (queries or {}).items()}
        self.cache_dir = Path(settings.cache_dir) if settings.cache_dir else default_cache_dir()
        self.pool_size = pool_size
        self._open: dict[str, tuple[ReadOnlyDatabase, ...]] = {}
        self._indexes: dict[str, dict[str, Any]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def databases(self, db_id: str, path: str | os.PathLike[str]) -> tuple[ReadOnlyDatabase, ...]:
        """The variants of database ``db_id`` (main file ``path``), built or read from the cache on first use."""
        found = self._open.get(db_id)
        if found is not None:
            return found
        with self._guard:
            lock = self._locks.setdefault(db_id, threading.Lock())
        with lock:
            found = self._open.get(db_id)
            if found is None:
                folder, index = self._suite(db_id, Path(path))
                found = tuple(ReadOnlyDatabase(folder / entry["file"], db_id, self.pool_size)
                              for entry in index["variants"])
                self._indexes[db_id] = index
                self._open[db_id] = found
        return found

    def index(self, db_id: str) -> dict[str, Any] | None:
        """What produced the suite of ``db_id`` and what it tells apart, once built (``index.json``)."""
        return self._indexes.get(db_id)

    def _key(self, db_id: str, path: Path) -> tuple[str, dict[str, Any]]:
        identity = {"generator_version": GENERATOR_VERSION, "db_id": db_id, "source_sha256": _file_digest(path),
                    "comparison": self.comparison, **asdict(self.settings),
                    "queries_sha256": hashlib.sha256("\n;\n".join(self.queries.get(db_id, ())).encode()).hexdigest()}
        identity.pop("cache_dir")
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16], identity

    @staticmethod
    def _complete(folder: Path, key: str) -> dict[str, Any] | None:
        """The index of the suite in ``folder`` when it is that of ``key`` and every variant file is there."""
        try:
            index = json.loads((folder / INDEX_NAME).read_text(encoding="utf-8"))
            if index.get("key") == key and all((folder / entry["file"]).is_file() for entry in index["variants"]):
                return index
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return None

    def _suite(self, db_id: str, path: Path) -> tuple[Path, dict[str, Any]]:
        key, identity = self._key(db_id, path)
        folder = self.cache_dir / db_id / key
        index = self._complete(folder, key)
        if index is not None:
            return folder, index
        building = folder.parent / f".building-{uuid.uuid4().hex}"
        building.mkdir(parents=True, exist_ok=True)
        try:
            index = self._build(db_id, path, building, {"key": key, "source": str(path), **identity})
            try:
                os.replace(building, folder)
            except OSError:  # a suite is in the way: another process's (as good as ours), or a damaged one
                if self._complete(folder, key) is None:
                    shutil.rmtree(folder, ignore_errors=True)
                    os.replace(building, folder)
        finally:
            shutil.rmtree(building, ignore_errors=True)
        index = self._complete(folder, key)
        if index is None:
            raise OSError(f"the test suite of {db_id!r} could not be written to {folder}")
        return folder, index

    def _build(self, db_id: str, path: Path, folder: Path, identity: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        queries = self.queries.get(db_id, ())
        literals: dict[str, list[Any]] = {}
        for sql in queries:
            for column, values in compared_literals(sql).items():
                literals.setdefault(column, []).extend(values)
        source = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            schema = read_schema(source)
            profiled = {table.name: profile_table(source, table, literals) for table in schema.tables}
        finally:
            source.close()
        sizes = {name: total for name, (total, _) in profiled.items()}
        profiles = {name: columns for name, (_, columns) in profiled.items()}
        settings = self.settings
        candidates = []
        for position in range(settings.candidates):
            candidate = folder / f"candidate_{position:03d}.sqlite"
            rows = write_variant(schema, profiles, sizes, candidate, _variant_seed(settings.seed, db_id, position),
                                 settings.max_rows)
            candidates.append((candidate, rows))
        databases = [ReadOnlyDatabase(candidate, db_id, 1) for candidate, _ in candidates]
        original = ReadOnlyDatabase(path, db_id, 1)
        try:
            columns = sorted({column.name for table in schema.tables for column in table.columns})
            chosen = distill(original, databases, queries, columns, self.comparison, settings.size)
        finally:
            for database in (original, *databases):
                database.close()
        variants = []
        for rank, (position, told) in enumerate(zip(chosen.chosen, chosen.told_apart)):
            name = f"variant_{rank:02d}.sqlite"
            os.replace(candidates[position][0], folder / name)
            variants.append({"file": name, "candidate": position, "rows": candidates[position][1],
                             "pairs_told_apart": told})
        for candidate, _ in candidates:
            candidate.unlink(missing_ok=True)
        index = {**identity, "queries": len(queries), "candidates_unusable": chosen.unusable,
                 "pairs": chosen.pairs, "pairs_told_apart": chosen.covered, "literal_pairs": chosen.literal_pairs,
                 "literal_pairs_told_apart": chosen.literal_covered, "seconds": round(time.perf_counter() - started, 3),
                 "variants": variants}
        (folder / INDEX_NAME).write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
        return index

    def close(self) -> None:
        with self._guard:
            suites, self._open = list(self._open.values()), {}
        for suite in suites:
            for database in suite:
                database.close()
