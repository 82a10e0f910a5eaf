"""The benchmark's table over many plans, computed as the official ``eval.py`` computes it.

- Delivery rate: delivered plans / queries.
- Commonsense micro pass rate: passed commonsense constraints / (8 x queries); macro: plans passing all eight.
- Hard micro pass rate: passed hard constraints / the hard constraints that count at each query's level: the budget
  always; at ``medium`` the house rule, cuisine and room type the query sets; at ``hard`` those and the
  transportation rule. On the official splits these are its fixed denominators (train 105, validation 420, test
  2290). Macro: plans whose hard constraints were judged and none failed.
- Final pass rate: plans passing both.

Departure: upstream adds to the numerator the passes of a constraint its level does not count (a ``medium``
query's transportation rule), which can lift the rate above what its denominator allows; here only counted
constraints count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rlfactory_envs.travel.query import TravelQuery
from rlfactory_reward_models.travel.commonsense import COMMONSENSE
from rlfactory_reward_models.travel.hard import LOCAL_CONSTRAINT_OF

COUNTED_AT_LEVEL = {"easy": (), "medium": ("valid_room_rule", "valid_cuisine", "valid_room_type"),
                    "hard": ("valid_room_rule", "valid_cuisine", "valid_room_type", "valid_transportation")}
RATE_NAMES = ("Delivery Rate", "Commonsense Constraint Micro Pass Rate", "Commonsense Constraint Macro Pass Rate",
              "Hard Constraint Micro Pass Rate", "Hard Constraint Macro Pass Rate", "Final Pass Rate")


def counted_hard(query: TravelQuery) -> list[str]:
    """The hard constraints the official micro rate counts for ``query``."""
    local = [name for name in COUNTED_AT_LEVEL.get(query.level, ())
             if query.local_constraint.get(LOCAL_CONSTRAINT_OF[name]) is not None]
    return ["valid_cost", *local]


@dataclass(frozen=True)
class TravelReport:
    """The six official rates (fractions) and the counts behind them."""

    queries: int
    rates: Mapping[str, float]
    commonsense_passed: int
    commonsense_total: int
    hard_passed: int
    hard_total: int

    def table(self) -> str:
        width = max(len(name) for name in RATE_NAMES)
        rows = [f"{name:<{width}}  {100 * self.rates[name]:6.2f}%" for name in RATE_NAMES]
        rows.append(f"{'(micro counts)':<{width}}  commonsense {self.commonsense_passed}/{self.commonsense_total}, "
                    f"hard {self.hard_passed}/{self.hard_total}, over {self.queries} queries")
        return "\n".join(rows)

    def to_dict(self) -> dict[str, Any]:
        return {"queries": self.queries, "rates": dict(self.rates), "commonsense_passed": self.commonsense_passed,
                "commonsense_total": self.commonsense_total, "hard_passed": self.hard_passed,
                "hard_total": self.hard_total}


def travel_report(results: Iterable[tuple[TravelQuery, Mapping[str, Any]]]) -> TravelReport:
    """The table over ``(query, evaluate_plan's verdict)`` pairs, one per query of the split."""
    queries = delivered = common_macro = hard_macro = final = 0
    common_passed = hard_passed = hard_total = 0
    for query, verdict in results:
        queries += 1
        counted = counted_hard(query)
        hard_total += len(counted)
        if not verdict.get("delivered"):
            continue
        delivered += 1
        common_passed += sum(verdict["commonsense"].get(name) is True for name in COMMONSENSE)
        hard_passed += sum(verdict["hard"].get(name) is True for name in counted)
        common_macro += bool(verdict["commonsense_pass"] and verdict.get("hard_judged"))
        hard_macro += bool(verdict["hard_pass"])
        final += bool(verdict["final_pass"])
    n = max(queries, 1)
    rates = dict(zip(RATE_NAMES, (delivered / n, common_passed / (8 * n), common_macro / n,
                                  hard_passed / max(hard_total, 1), hard_macro / n, final / n)))
    return TravelReport(queries, rates, common_passed, 8 * queries, hard_passed, hard_total)
