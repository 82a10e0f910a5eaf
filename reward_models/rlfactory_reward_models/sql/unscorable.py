"""Tasks the databases cannot score: where an answer that ignores the question matches the gold on every database.

- ``empty_gold``: the gold result is empty on every database (of the suite, or the one file): any query with no
  rows and the gold's width matches it (``SELECT NULL WHERE 0``).
- ``constant_gold``: with a test suite, the gold result has rows and is the same on every database of it (an empty
  one is ``empty_gold``'s): a query of constants that reproduces it (``SELECT 0`` for a count that is 0 everywhere)
  matches on all of them. On Spider dev these are counts and sums over rows that match nothing on any database
  (flight_2's cities are stored with a stray space, ``'Aberdeen '``, and a generated variant draws its values from
  the original's), 12 of the 972 questions; the list is in rlfactory_envs/sql/README.md. Also when the gold result
  has rows on the task's database and none on every other database of the suite: a constant gated on the task's
  database's own data (``SELECT ... WHERE (SELECT count(*) FROM t) = 15``) shows the rows there and none elsewhere,
  and matches on all of them (3 Spider dev questions with the default suites, found by a hostile review).

``"unscored"`` (the default for both) scores such a task 0 whatever the answer, with the reason: under GRPO equal
rewards in a group carry no advantage, so the task drops out of the gradient instead of paying constants.
``"match"`` scores it as the official evaluators do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from rlfactory_reward_models.sql.compare import Comparison, results_match

__all__ = ["Unscorable", "check_unscorable", "unscorable_reason"]

Unscorable = Literal["match", "unscored"]


def check_unscorable(name: str, value: Any) -> Unscorable:
    """``value`` as an ``Unscorable`` setting; ``ValueError`` naming the setting ``name`` for anything else."""
    if value not in ("match", "unscored"):
        raise ValueError(f"{name} must be 'match' or 'unscored', got {value!r}")
    return value


def unscorable_reason(golds: Sequence[Any], *, comparison: Comparison, order_matters: bool, suite: bool,
                      empty_gold: Unscorable = "unscored", constant_gold: Unscorable = "unscored") -> str | None:
    """Why a task whose gold results on its databases (the main file first) are ``golds`` is left unscored, or
    ``None`` when it is scored. ``suite``: the task has a test suite (else one database decides nothing of
    ``constant_gold``)."""
    if empty_gold == "unscored" and not any(gold.rows for gold in golds):
        return "the gold result is empty on every database of the suite: unscored (empty_gold='unscored')"
    if constant_gold != "unscored" or not suite or not golds[0].rows:
        return None
    if all(results_match(comparison, golds[0], gold, order_matters) for gold in golds[1:]):
        return ("the gold result is the same on every database of the suite, so a constant answer would match it: "
                "unscored (constant_gold='unscored')")
    if not any(gold.rows for gold in golds[1:]):
        return ("the gold result has rows on the task's database only, so a constant gated on that database's data "
                "would match it on every database of the suite: unscored (constant_gold='unscored')")
    return None
