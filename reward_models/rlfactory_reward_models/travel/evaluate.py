"""One plan's verdict: every commonsense and hard constraint, as the official evaluation judges a submission.

``evaluate_plan(query, plan, lookup)`` never raises (a plan is untrusted model output) and returns the dict that
becomes ``info["travel_eval"]``::

    {"delivered": bool, "commonsense": {name: True|False|None}, "hard": {name: True|False|None},
     "commonsense_pass": bool, "hard_pass": bool, "final_pass": bool, "messages": {name: why},
     "hard_judged": bool, "total_cost": float|None}

As in the official ``eval.py``: a plan is delivered when it is a non-empty list; the hard constraints are judged
only for a delivered plan that passes ``is_not_absent`` and ``is_valid_information_in_sandbox`` (a constraint the
query sets but that is not judged is ``False`` here, as it counts in the official rates); ``None`` means the query
does not set that constraint; a pass is a plan with no ``False``. The strict reading (``lookup.strict``) reads
the days after the trip too: a plan with one that plans something fails ``is_not_absent`` (upstream ignores them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlfactory_reward_models.travel.commonsense import COMMONSENSE
from rlfactory_reward_models.travel.hard import HARD, LOCAL_CONSTRAINT_OF, total_cost
from rlfactory_reward_models.travel.lookup import PlanLookup
from rlfactory_reward_models.travel.plan_fields import days_beyond, days_of
from rlfactory_reward_models.travel.trip import TripQuery

NOT_JUDGED = "not judged: the plan is incomplete or leaves the sandbox"


def applicable_hard(query: TripQuery) -> list[str]:
    """The hard constraints the query sets: the budget, and each local constraint that is not ``None``."""
    return [name for name in HARD if name == "valid_cost" or query.local_constraint.get(LOCAL_CONSTRAINT_OF[name])
            is not None]


def evaluate_plan(query: TripQuery, plan: Sequence[Any] | None, lookup: PlanLookup,
                  *, not_delivered: str = "no plan was delivered") -> dict[str, Any]:
    """The verdict on ``plan`` (``None`` or empty: not delivered, with ``not_delivered`` as the reason; any other
    value that is not a list of days is not delivered either)."""
    messages: dict[str, str] = {}
    if not isinstance(plan, (list, tuple)) or not plan:
        messages["plan"] = (not_delivered if plan is None or isinstance(plan, (list, tuple))
                            else f"the plan is a {type(plan).__name__}, not a list of days")
        return {"delivered": False, "commonsense": dict.fromkeys(COMMONSENSE), "hard": dict.fromkeys(HARD),
                "commonsense_pass": False, "hard_pass": False, "final_pass": False, "messages": messages,
                "hard_judged": False, "total_cost": None}
    days = days_of(plan, query.days)
    commonsense: dict[str, bool | None] = {}
    for name, check in COMMONSENSE.items():
        commonsense[name], why = check(query, days, lookup)
        if why:
            messages[name] = why
    extra = days_beyond(plan, query.days) if lookup.strict else 0
    if extra and commonsense["is_not_absent"]:
        commonsense["is_not_absent"] = False
        messages["is_not_absent"] = f"The plan has {extra} day(s) more than the trip's {query.days}."
    judged = bool(commonsense["is_not_absent"] and commonsense["is_valid_information_in_sandbox"])
    hard: dict[str, bool | None] = {}
    applicable = applicable_hard(query)
    for name, check in HARD.items():
        if judged:
            hard[name], why = check(query, days, lookup)
        else:
            hard[name], why = (False, NOT_JUDGED) if name in applicable else (None, None)
        if why:
            messages[name] = why
    commonsense_pass = all(value is not False for value in commonsense.values())
    hard_pass = judged and all(value is not False for value in hard.values())
    return {"delivered": True, "commonsense": commonsense, "hard": hard, "commonsense_pass": commonsense_pass,
            "hard_pass": hard_pass, "final_pass": commonsense_pass and hard_pass, "messages": messages,
            "hard_judged": judged, "total_cost": total_cost(query, days, lookup) if judged else None}
