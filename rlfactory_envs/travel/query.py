"""The travel family's task: a TravelPlanner query, the fields the official evaluator reads (``TripQuery``), from
the benchmark's row layout.

The released files (``osunlp/TravelPlanner``) store ``date`` as a list or its Python-literal text and
``local_constraint`` as a dict or its Python-literal text: both are read.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlfactory_reward_models.travel.trip import (CONSTRAINT_KEYS, HOUSE_RULES, LEVELS, ROOM_TYPES,
                                                 TRANSPORTATION_RULES)


def python_literal(value: Any, what: str) -> Any:
    """``value`` itself, or the Python literal a text holds; ``ValueError`` naming ``what`` for a text that is none."""
    if isinstance(value, str):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise ValueError(f"{what} is not a Python literal: {value[:80]!r}") from None
    return value


def _positive_int(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key)
    try:
        number = int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"a travel query needs an integer {key!r}, got {value!r}") from None
    if number < 1 or number != float(value):  # type: ignore[arg-type]
        raise ValueError(f"a travel query needs a positive integer {key!r}, got {value!r}")
    return number


@dataclass(frozen=True)
class TravelQuery:
    """One query, as the official evaluator reads it (``to_dict`` gives its row back)."""

    org: str
    dest: str
    days: int
    visiting_city_number: int
    date: tuple[str, ...]
    people_number: int
    budget: float
    local_constraint: Mapping[str, Any] = field(default_factory=lambda: dict.fromkeys(CONSTRAINT_KEYS))
    level: str = "easy"
    query: str = ""
    task_id: str = "pinned"

    @property
    def house_rule(self) -> str | None:
        return self.local_constraint.get("house rule")

    @property
    def cuisines(self) -> tuple[str, ...]:
        return tuple(self.local_constraint.get("cuisine") or ())

    @property
    def room_type(self) -> str | None:
        return self.local_constraint.get("room type")

    @property
    def transportation(self) -> str | None:
        return self.local_constraint.get("transportation")

    def to_dict(self) -> dict[str, Any]:
        constraint = dict(self.local_constraint)
        if constraint.get("cuisine") is not None:
            constraint["cuisine"] = list(constraint["cuisine"])
        return {"task_id": self.task_id, "org": self.org, "dest": self.dest, "days": self.days,
                "visiting_city_number": self.visiting_city_number, "date": list(self.date),
                "people_number": self.people_number, "local_constraint": constraint, "budget": self.budget,
                "query": self.query, "level": self.level}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], task_id: str = "pinned") -> TravelQuery:
        """A query from the benchmark's row layout; ``ValueError`` names the field that is missing or wrong."""
        for key in ("org", "dest"):
            if not isinstance(data.get(key), str) or not data[key].strip():
                raise ValueError(f"a travel query needs a non-empty string {key!r}")
        days = _positive_int(data, "days")
        cities = _positive_int(data, "visiting_city_number")
        people = _positive_int(data, "people_number")
        dates = python_literal(data.get("date"), "date")
        if not isinstance(dates, (list, tuple)) or not all(isinstance(d, str) for d in dates):
            raise ValueError(f"'date' must be a list of YYYY-MM-DD strings, got {data.get('date')!r}")
        try:
            budget = float(data.get("budget"))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ValueError(f"a travel query needs a numeric 'budget', got {data.get('budget')!r}") from None
        raw = python_literal(data.get("local_constraint") or {}, "local_constraint")
        if not isinstance(raw, Mapping):
            raise ValueError("'local_constraint' must be a dict (or its Python-literal text)")
        constraint = {key: raw.get(key) for key in CONSTRAINT_KEYS}
        checks = {"house rule": HOUSE_RULES, "room type": ROOM_TYPES, "transportation": TRANSPORTATION_RULES}
        for key, allowed in checks.items():
            if constraint[key] is not None and constraint[key] not in allowed:
                raise ValueError(f"local_constraint[{key!r}] must be one of {', '.join(allowed)} or None, "
                                 f"got {constraint[key]!r}")
        cuisine = constraint["cuisine"]
        if isinstance(cuisine, str):
            cuisine = [cuisine]
        if cuisine is not None and not (isinstance(cuisine, (list, tuple)) and all(isinstance(c, str) for c in cuisine)):
            raise ValueError(f"local_constraint['cuisine'] must be a list of cuisines or None, got {cuisine!r}")
        constraint["cuisine"] = tuple(cuisine) if cuisine else None
        level = str(data.get("level") or "easy")
        if level not in LEVELS:
            raise ValueError(f"'level' must be one of {', '.join(LEVELS)}, got {level!r}")
        given_id = data.get("task_id", data.get("idx"))
        return cls(org=data["org"].strip(), dest=data["dest"].strip(), days=days, visiting_city_number=cities,
                   date=tuple(dates), people_number=people, budget=budget, local_constraint=constraint, level=level,
                   query=str(data.get("query") or ""), task_id=str(given_id) if given_id is not None else task_id)
