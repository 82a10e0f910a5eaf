"""Queries a little different from a gold query, and the literals a gold query compares columns with.

The neighbours are what a policy near the right answer writes: each changes one thing of the gold query (a
comparison made looser, stricter or reversed; one condition of a WHERE or HAVING dropped; an aggregate swapped;
a selected column replaced by another of the database; an ORDER BY reversed; a LIMIT changed; a DISTINCT added or
removed). Those that return the gold's result on the original database are the pairs a test suite must tell
apart (``distill``). Texts are rewritten by sqlglot; a neighbour that does not parse back is left out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import sqlglot
from sqlglot import expressions as exp

__all__ = ["MAX_NEIGHBOURS", "compared_literals", "neighbour_queries"]

logging.getLogger("sqlglot").setLevel(logging.ERROR)

DIALECT = "sqlite"
MAX_NEIGHBOURS = 48
_COMPARISONS: dict[type, tuple[type, ...]] = {
    exp.EQ: (exp.NEQ, exp.GTE, exp.LTE),
    exp.NEQ: (exp.EQ,),
    exp.GT: (exp.GTE, exp.LT),
    exp.GTE: (exp.GT, exp.LTE),
    exp.LT: (exp.LTE, exp.GT),
    exp.LTE: (exp.LT, exp.GTE),
}
_AGGREGATES: dict[type, tuple[type, ...]] = {
    exp.Max: (exp.Min,), exp.Min: (exp.Max,), exp.Sum: (exp.Avg, exp.Count), exp.Avg: (exp.Sum, exp.Max),
    exp.Count: (exp.Sum,),
}


def _parse(sql: str) -> exp.Expression | None:
    try:
        return sqlglot.parse_one(sql, read=DIALECT)
    except (sqlglot.errors.SqlglotError, RecursionError, ValueError):
        return None


def _variants(tree: exp.Expression, kinds: tuple[type, ...],
              change: Callable[[exp.Expression], list[exp.Expression | None]]) -> Iterator[exp.Expression]:
    """For the i-th node of ``kinds`` and each replacement ``change`` offers for it, a copy of ``tree`` with the
    node replaced (``None``: removed)."""
    count = sum(1 for _ in tree.find_all(*kinds))
    for position in range(count):
        original = list(tree.find_all(*kinds))[position]
        for choice in range(len(change(original))):
            copy = tree.copy()
            node = list(copy.find_all(*kinds))[position]
            replacement = change(node)[choice]
            if replacement is None:
                node.pop()
            elif node is copy:  # the root has no parent to replace it in
                copy = replacement
            else:
                node.replace(replacement)
            yield copy


def _swap_comparison(node: exp.Expression) -> list[exp.Expression | None]:
    return [kind(this=node.this.copy(), expression=node.expression.copy()) for kind in _COMPARISONS[type(node)]]


def _drop_condition(node: exp.Expression) -> list[exp.Expression | None]:
    return [node.expression.copy(), node.this.copy()]  # either side of an AND alone


def _swap_aggregate(node: exp.Expression) -> list[exp.Expression | None]:
    if isinstance(node, exp.Count) and isinstance(node.this, exp.Star):
        return []
    return [kind(this=node.this.copy()) for kind in _AGGREGATES[type(node)]]


def _reverse_order(node: exp.Expression) -> list[exp.Expression | None]:
    flipped = node.copy()
    flipped.set("desc", not node.args.get("desc"))
    return [flipped]


def _change_limit(node: exp.Expression) -> list[exp.Expression | None]:
    amount = node.expression
    if isinstance(amount, exp.Literal) and amount.is_int:
        value = int(amount.this)
        return [exp.Limit(expression=exp.Literal.number(value + 1)), None] + (
            [exp.Limit(expression=exp.Literal.number(value - 1))] if value > 1 else [])
    return []


def _removed(node: exp.Expression) -> list[exp.Expression | None]:
    return [None]


def _distinct_toggled(node: exp.Expression) -> list[exp.Expression | None]:
    toggled = node.copy()
    toggled.set("distinct", None if node.args.get("distinct") else exp.Distinct())
    return [toggled]


def _columns_replaced(tree: exp.Expression, columns: list[str]) -> Iterator[exp.Expression]:
    selected = [column for select in tree.find_all(exp.Select) for item in select.expressions
                for column in item.find_all(exp.Column)]
    for position in range(len(selected)):
        name = selected[position].name.lower()
        for other in columns:
            if other.lower() == name:
                continue
            copy = tree.copy()
            targets = [column for select in copy.find_all(exp.Select) for item in select.expressions
                       for column in item.find_all(exp.Column)]
            targets[position].set("this", exp.to_identifier(other, quoted=True))
            yield copy
            break  # one replacement per selected column: the first other column that runs


def neighbour_queries(gold_sql: str, columns: list[str] = (), limit: int = MAX_NEIGHBOURS) -> list[str]:
    """Up to ``limit`` distinct queries, each ``gold_sql`` with one change; ``columns``: names to swap a selected
    column for (the database's columns)."""
    tree = _parse(gold_sql)
    if tree is None:
        return []
    generators = (
        _variants(tree, tuple(_COMPARISONS), _swap_comparison),
        _variants(tree, (exp.And,), _drop_condition),
        _variants(tree, (exp.Where, exp.Having), _removed),
        _variants(tree, tuple(_AGGREGATES), _swap_aggregate),
        _variants(tree, (exp.Ordered,), _reverse_order),
        _variants(tree, (exp.Limit,), _change_limit),
        _variants(tree, (exp.Select,), _distinct_toggled),
        _columns_replaced(tree, list(columns)),
    )
    found: dict[str, None] = {}
    original = tree.sql(dialect=DIALECT)
    for generator in generators:
        for mutant in generator:
            try:
                text = mutant.sql(dialect=DIALECT)
            except (sqlglot.errors.SqlglotError, ValueError):
                continue
            if text != original:
                found.setdefault(text)
            if len(found) >= limit:
                return list(found)
    return list(found)


def _literal_value(node: exp.Literal) -> Any:
    if node.is_string:
        return node.this
    try:
        return int(node.this)
    except ValueError:
        try:
            return float(node.this)
        except ValueError:
            return None


def compared_literals(gold_sql: str) -> dict[str, list[Any]]:
    """``{lower-case column name: [values]}``: the literals ``gold_sql`` compares a column with (``=``, ``<``,
    ``IN``, ``BETWEEN``, ``LIKE``: the pattern without its wildcards)."""
    tree = _parse(gold_sql)
    found: dict[str, list[Any]] = {}
    if tree is None:
        return found
    kinds = (*_COMPARISONS, exp.In, exp.Between, exp.Like)
    for node in tree.find_all(*kinds):
        column = node.this if isinstance(node.this, exp.Column) else node.args.get("expression")
        if not isinstance(column, exp.Column):
            continue
        for literal in node.find_all(exp.Literal):
            value = _literal_value(literal)
            if isinstance(node, exp.Like) and isinstance(value, str):
                value = value.strip("%_")
            if value is not None and value != "":
                found.setdefault(column.name.lower(), []).append(value)
    return found
