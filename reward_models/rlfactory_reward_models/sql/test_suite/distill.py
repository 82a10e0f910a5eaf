"""Of many candidate variants, keep the few that tell the gold queries from their neighbours (the paper's
distillation).

The pairs to tell apart are every (gold, neighbour) that return the same result on the original database
(``neighbours.neighbour_queries``), and every (gold, the gold's own result as a constant): the answer a policy
copies from its tools. A candidate tells a pair apart when the two disagree on it (or the neighbour fails there).
Candidates are kept greedily, each covering the most pairs not yet told apart, up to the suite's size; when no
candidate adds any, the rest are those that tell the most pairs apart in all. A candidate on which a gold query
fails (a timeout, a result over the limits) is never kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rlfactory_reward_models.sql.compare import Comparison, results_match
from rlfactory_reward_models.sql.test_suite.neighbours import neighbour_queries
from rlfactory_tool_servers.sql.sandbox.engine import QueryError, QueryLimits, QueryResult, ReadOnlyDatabase
from rlfactory_tool_servers.sql.sandbox.statement_check import UnsafeQuery, has_top_level_order_by

__all__ = ["Distilled", "distill"]

LIMITS = QueryLimits(timeout_s=2.0, max_rows=20_000, max_bytes=16_000_000)


@dataclass
class _Gold:
    sql: str
    ordered: bool
    result: QueryResult
    neighbours: list[str] = field(default_factory=list)
    """The neighbours that return ``result`` on the original: pairs to tell apart (the literal pair is implied)."""


@dataclass
class Distilled:
    chosen: list[int]
    """Indexes of the candidates kept, in the order they were chosen."""
    told_apart: list[int]
    """Per kept candidate, the pairs it tells apart."""
    pairs: int
    literal_pairs: int
    covered: int
    """Pairs told apart by at least one kept candidate."""
    literal_covered: int
    unusable: int
    """Candidates left out because a gold query failed on them."""


def _run(database: ReadOnlyDatabase, sql: str) -> QueryResult | None:
    try:
        return database.execute(sql, LIMITS, truncate=False)
    except QueryError:
        return None


def _golds(original: ReadOnlyDatabase, queries: Sequence[str], columns: list[str],
           comparison: Comparison) -> list[_Gold]:
    golds = []
    for sql in dict.fromkeys(queries):
        result = _run(original, sql)
        if result is None:
            continue
        try:
            ordered = has_top_level_order_by(sql)
        except UnsafeQuery:
            continue
        gold = _Gold(sql, ordered, result)
        for neighbour in neighbour_queries(sql, columns):
            found = _run(original, neighbour)
            if found is not None and results_match(comparison, result, found, ordered):
                gold.neighbours.append(neighbour)
        golds.append(gold)
    return golds


def _told_apart(candidate: ReadOnlyDatabase, golds: list[_Gold], comparison: Comparison) -> set[int] | None:
    """The indexes of the pairs ``candidate`` tells apart (literal pair first, then the neighbours, gold by gold),
    or ``None`` when a gold query fails on it."""
    apart: set[int] = set()
    index = 0
    for gold in golds:
        result = _run(candidate, gold.sql)
        if result is None:
            return None
        if not results_match(comparison, result, gold.result, gold.ordered):
            apart.add(index)
        index += 1
        for neighbour in gold.neighbours:
            found = _run(candidate, neighbour)
            if found is None or not results_match(comparison, result, found, gold.ordered):
                apart.add(index)
            index += 1
    return apart


def distill(original: ReadOnlyDatabase, candidates: Sequence[ReadOnlyDatabase], queries: Sequence[str],
            columns: list[str], comparison: Comparison, keep: int) -> Distilled:
    """Choose up to ``keep`` of ``candidates`` for the gold ``queries`` of ``original``; ``columns``: the
    database's column names (for the column-swapping neighbours)."""
    golds = _golds(original, queries, columns, comparison)
    literal_indexes: set[int] = set()
    index = 0
    for gold in golds:
        literal_indexes.add(index)
        index += 1 + len(gold.neighbours)
    total = index
    covers = {position: found for position, candidate in enumerate(candidates)
              if (found := _told_apart(candidate, golds, comparison)) is not None}
    chosen: list[int] = []
    uncovered = set(range(total))
    while len(chosen) < keep and len(chosen) < len(covers):
        best = max((position for position in covers if position not in chosen),
                   key=lambda position: (len(covers[position] & uncovered), len(covers[position]), -position))
        chosen.append(best)
        uncovered -= covers[best]
    covered = set(range(total)) - uncovered
    return Distilled(chosen=chosen, told_apart=[len(covers[position]) for position in chosen], pairs=total,
                     literal_pairs=len(literal_indexes), covered=len(covered),
                     literal_covered=len(covered & literal_indexes), unusable=len(candidates) - len(covers))
