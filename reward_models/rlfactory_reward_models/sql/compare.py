"""Is a predicted query's result the gold query's result? The two official comparisons, made sound.

``spider_match`` is the official Spider test-suite evaluator's ``result_eq`` (``exec_eval.py``): the results are
equal when some permutation of the predicted columns makes the two row lists equal as multisets (bag semantics),
or as lists when row order counts (the caller decides that from the gold query's ORDER BY). ``bird_match`` is
BIRD's ``set(predicted) == set(gold)``: sets of rows, columns in their own order, duplicates and order ignored.

Values compare as Python compares them, as in both evaluators: ``1 == 1.0``, ``NULL`` (``None``) equals ``NULL``,
``'1'`` is not ``1``. Where the official code is unsound this is strict, so a policy cannot game it:

- two empty results match only when they have the same number of columns (officially any two empty results match,
  so ``SELECT 1 WHERE 0`` would score on every question whose gold result is empty);
- the column permutation is searched exhaustively among columns whose value multisets agree (officially a random
  sample of rows prunes it, and a sort key of ``str(value) + str(type)`` can reject ``1`` against ``1.0``);
- more than ``MAX_PERMUTATIONS`` candidate permutations is a mismatch, never a guess.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any, Literal

__all__ = ["MAX_PERMUTATIONS", "Comparison", "Match", "bird_match", "results_match", "spider_match"]

MAX_PERMUTATIONS = 20_000

Comparison = Literal["spider", "bird"]

Row = tuple[Any, ...]


class Match:
    """A verdict and, for a mismatch, the reason in words."""

    __slots__ = ("ok", "reason")

    def __init__(self, ok: bool, reason: str | None = None):
        self.ok, self.reason = ok, reason

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return f"Match({self.ok}, {self.reason!r})"


def _width(columns: int | None, rows: Sequence[Row]) -> int:
    return len(rows[0]) if rows else (columns or 0)


def _empty_or_shape(gold: Sequence[Row], pred: Sequence[Row], gold_columns: int | None,
                    pred_columns: int | None) -> Match | None:
    """The verdict when it follows from sizes alone, else ``None``."""
    if not gold and not pred:
        if gold_columns is not None and pred_columns is not None and gold_columns != pred_columns:
            return Match(False, f"both results are empty, but with {pred_columns} columns instead of {gold_columns}")
        return Match(True)
    if len(gold) != len(pred):
        return Match(False, f"{len(pred)} rows instead of {len(gold)}")
    if _width(gold_columns, gold) != _width(pred_columns, pred):
        return Match(False, f"{_width(pred_columns, pred)} columns instead of {_width(gold_columns, gold)}")
    return None


def _candidate_permutations(gold: Sequence[Row], pred: Sequence[Row]) -> Iterator[tuple[int, ...]]:
    """Every ``perm`` (gold column ``i`` is predicted column ``perm[i]``) whose columns hold equal multisets."""
    width = len(gold[0])
    gold_columns = [Counter(row[i] for row in gold) for i in range(width)]
    pred_columns = [Counter(row[j] for row in pred) for j in range(width)]
    choices = [[j for j in range(width) if pred_columns[j] == gold_columns[i]] for i in range(width)]
    order = sorted(range(width), key=lambda i: len(choices[i]))  # most constrained column first
    perm = [0] * width
    used = [False] * width

    def extend(depth: int) -> Iterator[tuple[int, ...]]:
        if depth == width:
            yield tuple(perm)
            return
        i = order[depth]
        for j in choices[i]:
            if not used[j]:
                used[j], perm[i] = True, j
                yield from extend(depth + 1)
                used[j] = False

    return extend(0)


def spider_match(gold: Sequence[Row], pred: Sequence[Row], *, order_matters: bool,
                 gold_columns: int | None = None, pred_columns: int | None = None) -> Match:
    """The Spider verdict: equal under some column permutation, as multisets of rows (as lists when
    ``order_matters``). ``*_columns``: the column counts, which decide between two empty results."""
    shaped = _empty_or_shape(gold, pred, gold_columns, pred_columns)
    if shaped is not None:
        return shaped
    gold, pred = [tuple(row) for row in gold], [tuple(row) for row in pred]
    if pred == gold:  # the search's first candidate (columns in their own order) fits row by row: most right answers
        return Match(True)
    bag = Counter(gold)
    if not order_matters and Counter(pred) == bag:
        return Match(True)
    tried, reordered = 0, False
    for perm in _candidate_permutations(gold, pred):
        tried += 1
        if tried > MAX_PERMUTATIONS:
            return Match(False, f"more than {MAX_PERMUTATIONS} column permutations to try; counted as different")
        permuted = [tuple(row[j] for j in perm) for row in pred]
        if order_matters and permuted == gold:
            return Match(True)
        if Counter(permuted) == bag:
            if not order_matters:
                return Match(True)
            reordered = True
    if tried == 0:
        return Match(False, "the values of the columns differ")
    if reordered:
        return Match(False, "the same rows, in another order (the gold query orders its result)")
    return Match(False, "the rows differ")


def bird_match(gold: Sequence[Row], pred: Sequence[Row], *, gold_columns: int | None = None,
               pred_columns: int | None = None) -> Match:
    """The BIRD verdict: ``set(pred) == set(gold)``; columns in order, duplicates and row order ignored."""
    if not gold and not pred:
        shaped = _empty_or_shape(gold, pred, gold_columns, pred_columns)
        return shaped if shaped is not None else Match(True)
    if set(map(tuple, gold)) == set(map(tuple, pred)):
        return Match(True)
    return Match(False, f"the sets of rows differ ({len(set(map(tuple, pred)))} distinct rows, gold "
                        f"{len(set(map(tuple, gold)))})")


def results_match(comparison: Comparison, gold: Any, pred: Any, order_matters: bool) -> Match:
    """The dataset's verdict on two query results (objects with ``columns`` and ``rows``)."""
    widths = {"gold_columns": len(gold.columns), "pred_columns": len(pred.columns)}
    if comparison == "bird":
        return bird_match(gold.rows, pred.rows, **widths)
    return spider_match(gold.rows, pred.rows, order_matters=order_matters, **widths)
