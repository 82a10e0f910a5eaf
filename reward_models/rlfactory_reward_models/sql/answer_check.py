"""One answer's check against its task's gold query on every database of the task's test suite, bounded as a whole.

``AnswerCheck.run(turn)`` runs in a worker thread of the catalog's ``FairPool`` (the answer is a client of its own)
and goes on from where it was when a light turn spends its slice (``SliceSpent``: the pool runs it again as heavy).

One deadline per answer, not per database: the answer's own work (the parse of its query, once, and its query on
every database) may use ``timeout_s`` of CPU in all (``Client.cpu_budget_s``), and the whole check ends
``WALL_FACTOR`` times ``timeout_s`` after the answer arrived, waits included (for a worker, for the CPU behind
heavy answers that used less, resting while light work runs): past it the answer scores 0 with a ``timeout``
reason. Honest answers are light (a few milliseconds on all the databases) and go before every heavy one; a heavy
answer waits only behind heavy answers that have used less CPU than it, so an answer with a real query that
needs a second is not held up by hostile ones that used five. Neither bound counts the time the task's databases
are opened or built (once per database) or its gold results computed (once, then cached; those have
``gold_timeout_s`` in all, not per database). ``verify`` (no pool) has the wall clock alone, at ``timeout_s``.

Memory: a gold result is held to the reward's ``max_bytes`` and an answer's gold results together to
``GOLD_BYTES_PER_ANSWER`` of it; with Spider's comparison a predicted result may hold no more rows and bytes than
its gold result (more cannot match), with BIRD's at most ``max_bytes``.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from rlfactory_reward_models.base import Reward
from rlfactory_reward_models.sql.compare import results_match
from rlfactory_reward_models.sql.unscorable import unscorable_reason
from rlfactory_tool_servers.sql.sandbox.catalog import UnknownDatabase
from rlfactory_tool_servers.sql.sandbox.engine import (
    QueryError, QueryLimits, QueryResult, QueryTimeout, ResultOverLimits)
from rlfactory_tool_servers.sql.sandbox.fair_pool import PythonStopped, SliceSpent, Turn
from rlfactory_tool_servers.sql.sandbox.statement_check import UnsafeQuery, has_top_level_order_by

if TYPE_CHECKING:
    from rlfactory_reward_models.sql.execution import SqlExecutionReward

LIGHT_SQL_CHARS = 4096
"""A predicted query longer than this is checked as heavy from the start: its parse alone may take a second, and
nothing can cut a parse short (Spider's and BIRD's longest gold queries are under 1,500 characters)."""
GOLD_BYTES_PER_ANSWER = 4
"""An answer's gold results on all its databases together hold at most this many times ``max_bytes``."""
SPIDER_SLACK_BYTES = 1024
WALL_FACTOR = 4
FINISH_SHARE, FINISH_MAX_S = 0.05, 0.5
"""The part of an answer's wall clock its work leaves for handing the reward back (``AnswerCheck.deadline``)."""


def parts(match: float, executed: float, given: float) -> dict[str, float]:
    return {"execution_match": match, "executed": executed, "format": given}


class AnswerCheck:
    """The check of ``predicted`` (the query, already taken out of the answer) for ``db_id``'s ``gold_sql`` by
    ``reward``, ending ``wall_factor`` times the reward's ``timeout_s`` after it was made; ``run`` gives its
    ``Reward``."""

    def __init__(self, reward: SqlExecutionReward, db_id: str, gold_sql: str, predicted: str,
                 wall_factor: float = 1.0) -> None:
        self.reward, self.db_id, self.gold_sql, self.predicted = reward, db_id, gold_sql, predicted
        self.arrived = time.monotonic()
        self.finished: float | None = None  # when its work gave its reward (in its worker thread)
        self.wall_s = reward.limits.timeout_s * wall_factor
        self.excused_s = 0.0  # its waits for a thread behind light answers that came first (Client.excused_s)
        self.paused_s = 0.0  # the clock's stops: opening the databases, computing gold results
        self.databases: tuple[Any, ...] | None = None
        self.generated = False
        self.golds: list[tuple[Any, QueryResult]] = []
        self.gold_position = 0
        self.gold_bytes = 0
        self.gold_until: float | None = None
        self.query: str | None = None
        self.order_matters = False
        self.gold_query: str | None = None
        self.position = 0
        self._info: dict[str, Any] | None = None

    @property
    def heavy(self) -> bool:
        return max(len(self.predicted), len(self.gold_sql)) > LIGHT_SQL_CHARS

    def deadline(self) -> float:
        """The wall-clock deadline of the check's work (a ``time.monotonic()`` instant): ``wall_s`` from arrival,
        waits included, less ``FINISH_SHARE`` of it (at most ``FINISH_MAX_S``) kept for handing the reward back
        through a busy event loop, with the clock's stops so far (opening the databases, computing gold results,
        waiting for a thread behind light answers that came first)."""
        finish = min(FINISH_MAX_S, FINISH_SHARE * self.wall_s)
        return self.arrived + self.wall_s - finish + self.paused_s + self.excused_s

    @property
    def stopped_s(self) -> float:
        """The clock's stops so far: what the check may take beyond ``wall_s``."""
        return self.paused_s + self.excused_s

    def run(self, turn: Turn | None) -> Reward:
        """The reward, going on from where the last turn stopped (``SliceSpent`` passes through)."""
        if turn is not None:
            self.excused_s = turn.client.excused_s
        with uncharged(turn):
            opened = self._open()
        reward = opened or self._golds(turn) or self._parse(turn) or self._predictions(turn)
        self.finished = time.monotonic()
        return reward

    def _open(self) -> Reward | None:
        if self.databases is not None:
            return None
        started = time.monotonic()
        try:
            self.databases, self.generated = self.reward.databases(self.db_id)
            self.gold_query = self.reward.effective(self.gold_sql)
            self.order_matters = has_top_level_order_by(self.gold_query)
        except (UnknownDatabase, OSError, sqlite3.Error) as exc:
            return Reward(0.0, parts(0.0, 0.0, 1.0), f"task database unavailable: {exc}")
        except UnsafeQuery as exc:
            return Reward(0.0, parts(0.0, 0.0, 1.0), f"gold query failed: {exc}")
        finally:
            self.paused_s += time.monotonic() - started
        return None

    def _golds(self, turn: Turn | None) -> Reward | None:
        """The gold result on every database, first (cached; ``empty_gold`` needs them all)."""
        assert self.databases is not None and self.gold_query is not None
        suite = len(self.databases) > 1
        while self.gold_position < len(self.databases):
            database = self.databases[self.gold_position]
            started = time.monotonic()
            if self.gold_until is None:
                self.gold_until = started + self.reward.gold_limits.timeout_s
            try:
                with uncharged(turn):
                    gold = self.reward.gold_result(database, self.db_id, self.gold_query, turn, self.gold_until)
            except QueryError as exc:
                if not (self.generated and self.gold_position > 0):
                    return Reward(0.0, parts(0.0, 0.0, 1.0), f"gold query failed{on(database, suite)}: {exc}")
            else:
                self.gold_bytes += gold.nbytes
                if self.gold_bytes > GOLD_BYTES_PER_ANSWER * self.reward.limits.max_bytes:
                    return Reward(0.0, parts(0.0, 0.0, 1.0), f"gold query failed: its results hold more than "
                                  f"{GOLD_BYTES_PER_ANSWER * self.reward.limits.max_bytes:,} bytes together")
                self.golds.append((database, gold))
            finally:
                self.paused_s += time.monotonic() - started
            self.gold_position += 1
        return None

    def _parse(self, turn: Turn | None) -> Reward | None:
        """The predicted query checked and parsed once, for every database; its time counts (a heavy turn holds
        the CPU baton for it)."""
        if self.query is not None:
            return None
        if turn is not None and turn.checkpoint(self.deadline()):
            if turn.spent:
                raise SliceSpent()
            return Reward(0.0, parts(0.0, 0.0, 1.0), f"timeout: no turn on the CPU within {self.wall_s:g} s")
        try:
            with checking_python(turn, self.deadline()) if self.heavy else contextlib.nullcontext():
                self.query = self.reward.effective(self.predicted)
        except UnsafeQuery as exc:
            return Reward(0.0, parts(0.0, 0.0, 1.0), f"refused: {exc}", self.info)
        except PythonStopped:
            if turn is not None and turn.spent:
                raise SliceSpent() from None
            return Reward(0.0, parts(0.0, 0.0, 1.0), f"timeout: the query could not be read within {self.wall_s:g} s"
                          if turn is None or not turn.over_budget else f"timeout: reading the query used more than "
                          f"{self.reward.limits.timeout_s:g} s of CPU")
        if time.monotonic() > self.deadline():
            return Reward(0.0, parts(0.0, 0.0, 1.0), f"timeout: the query could not be read and run within "
                          f"{self.wall_s:g} s")
        return None

    def _predictions(self, turn: Turn | None) -> Reward:
        assert self.databases is not None and self.query is not None
        suite = len(self.databases) > 1
        unscored = unscorable_reason([gold for _, gold in self.golds], comparison=self.reward.comparison,
                                     order_matters=self.order_matters, suite=suite,
                                     empty_gold=self.reward.empty_gold, constant_gold=self.reward.constant_gold)
        info = self.info
        while self.position < len(self.golds):
            database, gold = self.golds[self.position]
            limits, bounded_by_gold = self._limits(gold)
            try:
                predicted = database.execute(self.query, limits, truncate=False, not_after=self.deadline(),
                                             turn=turn, checked=True)
            except QueryTimeout as exc:
                if turn is not None and turn.over_budget:
                    exc = QueryTimeout(f"the query used more than {self.reward.limits.timeout_s:g} s of CPU on the "
                                       f"{len(self.golds)} databases together and was stopped")
                return Reward(0.0, parts(0.0, 0.0, 1.0), f"timeout{on(database, suite)}: {exc}", info)
            except QueryError as exc:
                if bounded_by_gold and isinstance(exc, ResultOverLimits):
                    if not unscored:
                        return Reward(0.0, parts(0.0, 1.0, 1.0), f"result differs{on(database, suite)}: more rows "
                                      f"or bytes than the gold result ({len(gold.rows)} rows)", info)
                    self.position += 1
                    continue
                return Reward(0.0, parts(0.0, 0.0, 1.0), f"{exc.kind}{on(database, suite)}: {exc}", info)
            info["execution"].setdefault("predicted_rows", len(predicted.rows))  # on the main file
            self.position += 1
            if unscored:
                continue
            match = results_match(self.reward.comparison, gold, predicted, self.order_matters)
            if not match:
                return Reward(0.0, parts(0.0, 1.0, 1.0), f"result differs{on(database, suite)}: {match.reason}",
                              info)
        if unscored:
            return Reward(0.0, parts(0.0, 1.0, 1.0), unscored, info)
        return Reward(1.0, parts(1.0, 1.0, 1.0), info=info)

    @property
    def info(self) -> dict[str, Any]:
        """``Reward.info["execution"]``: the databases compared and the rows of both results on the main file."""
        if self._info is None:
            first = len(self.golds[0][1].rows) if self.golds else None
            self._info = {"execution": {"databases": len(self.golds), "gold_rows": first}}
        return self._info

    def _limits(self, gold: QueryResult) -> tuple[QueryLimits, bool]:
        """The predicted query's limits on a database whose gold result is ``gold``, and whether they come from
        it: a multiset of rows equal to the gold one holds as many rows and as many bytes (Spider). Its time is the
        answer's wall clock (``deadline``), not one ``timeout_s`` per database."""
        limits = self.reward.limits  # built directly: dataclasses.replace took a tenth of a warm check
        if self.reward.comparison != "spider":
            return QueryLimits(self.wall_s, limits.max_rows, limits.max_bytes), False
        return QueryLimits(self.wall_s, min(limits.max_rows, len(gold.rows)),
                           min(limits.max_bytes, gold.nbytes + SPIDER_SLACK_BYTES)), True


def checking_python(turn: Turn | None, until: float) -> contextlib.AbstractContextManager[None]:
    """``turn.checking_python(until)``: a long query's parse checks in like its queries (rests, waits for the CPU,
    stops at the deadline); nothing without a turn."""
    return turn.checking_python(until) if turn is not None else contextlib.nullcontext()


def uncharged(turn: Turn | None) -> contextlib.AbstractContextManager[None]:
    """``turn.uncharged()``: work done once for every answer (opening databases, building suites, gold results)."""
    return turn.uncharged() if turn is not None else contextlib.nullcontext()


def on(database: Any, suite: bool) -> str:
    """`` on <file>`` naming a test-suite variant in a reason; nothing when the task has one database."""
    return f" on {database.path.name}" if suite else ""
