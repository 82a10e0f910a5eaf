"""Tool-verified NL2SQL reward: run the predicted and the gold query on the task's database, compare the results.

``SqlExecutionReward`` scores 1.0 when the predicted query's result equals the gold query's result under the
dataset's comparison (``rlfactory_reward_models.sql.compare``: Spider's permuted-column multisets with row order when
the
gold query orders its result at the top level, or BIRD's sets of rows), else 0.0 with the reason in ``Reward.reason``;
``Reward.info["execution"]`` counts the databases compared and the rows of both results on the main file;
with ``answer_clock`` set, ``Reward.info["answer_clock"]`` gives the answer's wall clock (``wall_s``), its stops
(``stopped_s``, see ``answer_check``) and how long its check took from its arrival until its work gave the reward
(``took_s``, at most their sum; the event loop hands the reward on after that). Off by default: timings differ from
run to run, and equal episodes keep equal infos.

Strict where a policy could game the official evaluators: the prediction must be exactly one read-only query
(checked with sqlglot; several statements, writes, ATTACH, PRAGMA score 0), it runs on a read-only connection
with a deadline (a timeout scores 0), and a result over the row/byte limits scores 0. ``distinct="strip"``
removes every DISTINCT from both queries first, as the official Spider evaluator does by default; the default here,
``"keep"``, compares what the queries really return (``count(DISTINCT a)`` is not ``count(a)``).

Test suites: one database cannot tell a right query from a constant the model read with its tools (``SELECT 6``
for "How many singers?"), from a dropped condition that filters nothing there, or from ``>`` for ``>=`` where no
value sits on the boundary. So the prediction must match on other databases of the same schema too, as in the
official ``exec_eval.eval_exec_match``; the reason names the first file that differs. ``test_suite``:

- ``"generate"`` (default): the official test-suite databases when the task's folder has them (every other
  ``.sqlite`` file beside ``<db_id>.sqlite``), else ``suite_size`` generated variants
  (``rlfactory_reward_models.sql.test_suite``: the original's schema, values resampled from its own columns and
  the gold queries' literals, keys kept, distilled to tell the task set's gold queries from their neighbours),
  built on first use and cached on disk outside the data folder. A gold query that fails on a generated variant
  (a timeout there) skips that variant for that query.
- ``"official"``: the official databases when present, else the main file alone.
- ``"off"``: the main file alone (single-database semantics; ``True``/``False`` mean ``"official"``/``"off"``).

The tools only ever see the main file.

Bounds (``answer_check``): each answer is checked in the catalog's fair pool (16 threads by default) as a client of
its own: light answers first, an answer that outgrows a light CPU slice goes on as heavy, after them and one at a
time on the CPU, so hostile answers (endless CTEs, slow queries, wide rows) cannot keep honest ones waiting. One
deadline (``timeout_s``) covers an answer's wait for a worker, its parse (once) and its query on every database of
the suite; ``score``/``score_batch`` never block the event loop. A result is bounded as the tools' are (a row to
``engine.MAX_ROW_BYTES`` before it is built, the result to ``max_bytes`` as Python holds it, 4-byte characters
counted as 4 bytes); with Spider's comparison a predicted result to its gold result's rows and bytes. Gold results
are cached per database file and query (databases are read-only) in at most ``gold_cache_bytes``, so the n samples
of one prompt execute its gold query once per file.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import cachetools

from rlfactory_reward_models.base import Reward, RewardInput, RewardModelBase
from rlfactory_reward_models.sql.answer_check import WALL_FACTOR, AnswerCheck, parts
from rlfactory_reward_models.sql.compare import Comparison
from rlfactory_reward_models.sql.test_suite import GeneratedSuites, SuiteSettings
from rlfactory_reward_models.sql.unscorable import Unscorable, check_unscorable
from rlfactory_tool_servers.sql.sandbox.catalog import DatabaseCatalog
from rlfactory_tool_servers.sql.sandbox.engine import QueryError, QueryLimits, QueryResult
from rlfactory_tool_servers.sql.sandbox.fair_pool import Turn
from rlfactory_tool_servers.sql.sandbox.statement_check import parse_read_query, without_distinct

__all__ = ["SqlExecutionReward", "TestSuite", "extract_sql"]

ANSWER_SLICE_S = 0.2
"""CPU seconds an answer's check may use as light work (a Spider dev answer uses 1.7 ms at the median, 22 ms at
p99, on eleven databases, alone; at 50 ms, world_1's right answers on generated suites beside 15 other envs
turned heavy, queued for the one heavy baton and 5 in 40 s met their wall clock, scoring 0; at 200 ms none did and
`rlf bench --only sql_hostile`'s quiet honest answer p99 went from 12 s to 2.2 s, its hostile bounds holding)."""
DistinctMode = Literal["keep", "strip"]
TestSuite = Literal["generate", "official", "off"]
_FENCE_RE = re.compile(r"^```(?:[A-Za-z0-9_+-]*[ \t]*\n|(?i:sql|sqlite)[ \t]+)?(.*?)\n?```$", re.DOTALL)
"""A fence's info string is a word on the fence line (``sql``, ``SQLite``, ...) or ``sql``/``sqlite`` before the
query on one line: ```` ```SELECT 1``` ```` keeps its ``SELECT``."""


def extract_sql(answer: str | None) -> str:
    """The query inside a final answer: white space trimmed, a surrounding Markdown code fence removed, and the
    semicolons that end it dropped (``SELECT 1;;`` is one statement followed by empty ones, which SQLite's driver
    would refuse as a second statement). A semicolon followed by anything else stays, so a second statement is
    still refused."""
    if not answer:
        return ""
    text = str(answer).strip()
    fenced = _FENCE_RE.match(text)
    text = fenced.group(1).strip() if fenced else text
    return text.rstrip("; \t\r\n\f\v")  # linear, where a regular expression could backtrack on long runs of spaces


class SqlExecutionReward(RewardModelBase):
    """Execution-match reward for tasks with ``db_id`` and ``gold_sql`` (``rlfactory_envs.sql.task.SqlTask``).

    ``databases``: a ``DatabaseCatalog`` or a database directory (Spider ``database/``, BIRD ``dev_databases/``).
    ``comparison``: ``"spider"`` (default) or ``"bird"``. ``distinct``: ``"keep"`` (default) or ``"strip"`` (the
    official Spider default). ``timeout_s`` bounds an answer's check (its queries on every database together),
    ``gold_timeout_s`` the gold query's runs on a suite (once; cached); ``max_rows``/``max_bytes`` one result,
    ``gold_cache_bytes`` the cached gold results together.

    ``empty_gold``: ``"unscored"`` (default) gives a task whose gold result is empty on every database of its
    suite 0.0 whatever the answer, with the reason: with one database every query with no rows and the gold's
    column count would match it (``SELECT NULL WHERE 0`` scores on 43 of the 972 Spider dev questions); for GRPO
    equal rewards in a group carry no advantage, so such tasks drop out of the gradient instead of paying empty
    answers. Where a variant's gold result has rows the match means something, and the task is scored.
    ``"match"`` scores them like any other task, as the official evaluators do. ``constant_gold``: the same for a
    task whose gold result is the same on every database of its test suite (a count that is 0 everywhere), which a
    constant answer would match (``rlfactory_reward_models.sql.unscorable``).

    ``test_suite``: ``"generate"`` (default), ``"official"`` or ``"off"`` (see the module docstring);
    ``suite_size``/``suite_seed``/``suite_candidates``/``suite_dir`` set the generated suites
    (``SuiteSettings``), ``suite_queries`` the gold queries per ``db_id`` they are distilled for (the task set's).
    """

    reward_range: tuple[float, float] = (0.0, 1.0)

    def __init__(self, databases: DatabaseCatalog | str | Path, *, comparison: Comparison = "spider",
                 distinct: DistinctMode = "keep", timeout_s: float = 5.0, gold_timeout_s: float = 30.0,
                 max_rows: int = 100_000, max_bytes: int = 16_000_000, gold_cache_bytes: int = 256_000_000,
                 threads: int = 16, empty_gold: Unscorable = "unscored", constant_gold: Unscorable = "unscored",
                 test_suite: TestSuite | bool = "generate",
                 suite_size: int = 10, suite_seed: int = 0, suite_candidates: int | None = None,
                 suite_dir: str | None = None, suite_queries: Mapping[str, Sequence[str]] | None = None):
        self.empty_gold = check_unscorable("empty_gold", empty_gold)
        self.constant_gold = check_unscorable("constant_gold", constant_gold)
        if comparison not in ("spider", "bird"):
            raise ValueError(f"comparison must be 'spider' or 'bird', got {comparison!r}")
        if distinct not in ("keep", "strip"):
            raise ValueError(f"distinct must be 'keep' or 'strip', got {distinct!r}")
        if isinstance(test_suite, bool):
            test_suite = "official" if test_suite else "off"
        if test_suite not in ("generate", "official", "off"):
            raise ValueError(f"test_suite must be 'generate', 'official' or 'off', got {test_suite!r}")
        self.catalog = databases if isinstance(databases, DatabaseCatalog) else DatabaseCatalog(databases,
                                                                                               threads=threads)
        self.comparison = comparison
        self.distinct = distinct
        self.test_suite: TestSuite = test_suite
        self.suites = GeneratedSuites(
            SuiteSettings(size=suite_size, seed=suite_seed, cache_dir=suite_dir,
                          candidates=suite_candidates if suite_candidates is not None else 3 * suite_size),
            comparison, suite_queries, pool_size=self.catalog.pool_size)
        self.limits = QueryLimits(timeout_s=timeout_s, max_rows=max_rows, max_bytes=max_bytes)
        self.gold_limits = QueryLimits(timeout_s=gold_timeout_s, max_rows=max_rows, max_bytes=max_bytes)
        self._gold_cache: cachetools.LRUCache[tuple[str, str, str], QueryResult] = cachetools.LRUCache(
            gold_cache_bytes, getsizeof=lambda result: result.nbytes + 1024)
        self._lock = threading.Lock()
        self.answer_clock = False  # Reward.info["answer_clock"] (see the module docstring)

    # -- async API -------------------------------------------------------------------------------------------

    async def score(self, item: RewardInput) -> Reward:
        """Score ``item.answer`` (the predicted SQL) against ``item.task``'s gold query, in the catalog's fair pool
        (see ``answer_check``)."""
        db_id, gold_sql = self._task_fields(item.task)
        unanswered = self._unanswered(item.answer)
        if unanswered is not None:
            return unanswered
        check = AnswerCheck(self, db_id, gold_sql, extract_sql(item.answer), WALL_FACTOR)
        pool = self.catalog.pool
        client = pool.client(limit=1, slice_s=ANSWER_SLICE_S, cpu_budget_s=self.limits.timeout_s,
                             excuse_light_waits=True)
        try:
            reward = await pool.run(client, check.run, check.deadline, heavy=check.heavy)
        except QueryError as exc:  # no worker in time
            reward = Reward(0.0, parts(0.0, 0.0, 1.0), f"{exc.kind}: {exc}")
        if not self.answer_clock:
            return reward
        check.excused_s = client.excused_s  # with its last wait for a worker
        clock = {"wall_s": check.wall_s, "stopped_s": round(check.stopped_s, 3),
                 "took_s": round((check.finished or time.monotonic()) - check.arrived, 3)}
        return dataclasses.replace(reward, info={**reward.info, "answer_clock": clock})

    async def score_batch(self, items: Sequence[RewardInput]) -> list[Reward]:
        """Every item scored concurrently in the worker threads; aligned with ``items``."""
        return list(await asyncio.gather(*(self.score(item) for item in items)))

    # -- the synchronous core --------------------------------------------------------------------------------

    @staticmethod
    def _task_fields(task: Any) -> tuple[str, str]:
        try:
            return str(task.db_id), str(task.gold_sql)
        except AttributeError:
            raise TypeError(f"SqlExecutionReward needs a task with 'db_id' and 'gold_sql', "
                            f"got {type(task).__name__}") from None

    def verify(self, db_id: str, gold_sql: str, answer: str | None) -> Reward:
        """The reward of the predicted query ``answer`` against ``gold_sql`` on database ``db_id``, checked in the
        calling thread (blocking; no fair pool)."""
        unanswered = self._unanswered(answer)
        if unanswered is not None:
            return unanswered
        return AnswerCheck(self, db_id, gold_sql, extract_sql(answer)).run(None)

    @staticmethod
    def _unanswered(answer: str | None) -> Reward | None:
        if extract_sql(answer):
            return None
        return Reward(0.0, parts(0.0, 0.0, 0.0), "no final answer" if answer is None else "empty query")

    def databases(self, db_id: str) -> tuple[tuple[Any, ...], bool]:
        """The databases a prediction for ``db_id`` must match on, the main file first, and whether the others
        are generated variants."""
        if self.test_suite == "off":
            return (self.catalog.get(db_id),), False
        official = self.catalog.variants(db_id)
        if len(official) > 1 or self.test_suite == "official":
            return official, False
        return (official[0], *self.suites.databases(db_id, self.catalog.paths[db_id])), True

    def effective(self, sql: str) -> str:
        """The query as executed: DISTINCT removed in ``"strip"`` mode; ``UnsafeQuery`` when it is not exactly one
        read query (checked here, once for every database)."""
        if self.distinct == "strip":
            return without_distinct(sql)
        parse_read_query(sql)
        return sql

    def gold_result(self, database: Any, db_id: str, gold_sql: str, turn: Turn | None,
                    not_after: float | None = None) -> QueryResult:
        """The gold query's result on ``database``, from the cache or run now (and cached when it fits)."""
        key = (db_id, str(getattr(database, "path", "")), gold_sql)  # one entry per (database file, query)
        with self._lock:
            cached = self._gold_cache.get(key)
        if cached is not None:
            return cached
        result = database.execute(gold_sql, self.gold_limits, truncate=False, not_after=not_after, turn=turn,
                                  checked=True)
        with self._lock, contextlib.suppress(ValueError):  # a result larger than the whole cache is not kept
            self._gold_cache[key] = result
        return result

    def release_idle(self) -> None:
        """Give back the open files and worker threads while no env uses the reward (kept idle by the runtime's
        shared parts); the next answer opens them again. The gold cache and the suites' index stay."""
        self.catalog.close()
        self.suites.close()

    def close(self) -> None:
        """Stop the worker threads and close the connections (``release_idle``: a later answer opens them again)."""
        self.release_idle()

    def __repr__(self) -> str:
        return (f"SqlExecutionReward(databases={self.catalog.db_dir or len(self.catalog.ids)}, "
                f"comparison={self.comparison!r}, distinct={self.distinct!r}, empty_gold={self.empty_gold!r}, "
                f"constant_gold={self.constant_gold!r}, "
                f"test_suite={self.test_suite!r})")
