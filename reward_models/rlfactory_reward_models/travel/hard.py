"""The five hard constraints, with the official evaluator's names and semantics (``hard_constraint.py``).

A constraint the query does not set is ``None`` (not applicable). Departures from upstream (plain bugs there,
listed in rlfactory_envs/travel/README.md): the cuisine check skips a meal taken in the origin city, where
upstream's ``continue`` also skipped the rest of that day's meals; a route whose cost the sandbox cannot give fails
the budget instead of raising. The strict reading (``lookup.strict``) finds a banned mode in any letter case
(upstream looks for ``Flight`` and ``Self-driving``, so ``flight number: ...`` evades "no flight").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlfactory_reward_models.travel.commonsense import Check, Verdict
from rlfactory_reward_models.travel.lookup import PlanLookup, rooms_needed
from rlfactory_reward_models.travel.plan_fields import MEALS, field, filled, flight_number, from_to, name_and_city
from rlfactory_reward_models.travel.trip import TripQuery

ROOM_TYPE_ROWS = {"shared room": "Shared room", "private room": "Private room", "entire room": "Entire home/apt"}


def total_cost(query: TripQuery, days: Sequence[Any], lookup: PlanLookup) -> float | None:
    """The plan's cost for the whole group, as upstream ``get_total_cost`` adds it up: flights per person, a car
    per five people, a taxi per four, meals per person, a room per ``maximum occupancy`` people each night.
    Entries the sandbox does not know add nothing; ``None`` when a listed car or taxi route has no cost."""
    people = query.people_number
    cost = 0.0
    for day in days:
        transportation = filled(day, "transportation")
        pair = (from_to(transportation) or from_to(field(day, "current_city") or "")) if transportation else None
        if transportation and pair is not None:
            lowered = transportation.lower()
            if "flight number" in lowered:
                flight = lookup.flight(flight_number(transportation) or "")
                if flight is not None:
                    cost += flight["Price"] * people
            elif "self-driving" in lowered or "taxi" in lowered:
                mode = "self-driving" if "self-driving" in lowered else "taxi"
                fare = lookup.ground_cost(pair[0], pair[1], mode)
                if fare is None:
                    return None
                cost += fare * rooms_needed(people, 5 if mode == "self-driving" else 4)
        for meal in MEALS:
            entry = filled(day, meal)
            restaurant = lookup.restaurant(entry) if entry else None
            if restaurant is not None:
                cost += restaurant["Average Cost"] * people
        entry = filled(day, "accommodation")
        stay = lookup.accommodation(entry) if entry else None
        if stay is not None:
            cost += stay["price"] * rooms_needed(people, stay["maximum occupancy"])
    return cost


def valid_cost(query: TripQuery, days: Sequence[Any], lookup: PlanLookup) -> Verdict:
    cost = total_cost(query, days, lookup)
    if cost is None:
        return False, "The cost of a car or taxi route of the plan is unknown to the sandbox."
    if cost > query.budget:
        return False, f"The plan costs {cost:g}, over the budget of {query.budget:g}."
    return True, None


def _stays(days: Sequence[Any], lookup: PlanLookup) -> list[dict[str, Any]]:
    return [stay for day in days if (entry := filled(day, "accommodation")) and
            (stay := lookup.accommodation(entry)) is not None]


def valid_room_rule(query: TripQuery, days: Sequence[Any], lookup: PlanLookup) -> Verdict:
    rule = query.house_rule
    if rule is None:
        return None, None
    if any(f"No {rule}" in str(stay["house_rules"]) for stay in _stays(days, lookup)):
        return False, f"The house rule should be {rule}."
    return True, None


def valid_room_type(query: TripQuery, days: Sequence[Any], lookup: PlanLookup) -> Verdict:
    wanted = query.room_type
    if wanted is None:
        return None, None
    for stay in _stays(days, lookup):
        kind = stay["room type"]
        if (kind == "Shared room") if wanted == "not shared room" else (kind != ROOM_TYPE_ROWS[wanted]):
            return False, f"The room type should be {wanted}."
    return True, None


def valid_cuisine(query: TripQuery, days: Sequence[Any], lookup: PlanLookup) -> Verdict:
    wanted = query.cuisines
    if not wanted:
        return None, None
    found: set[str] = set()
    for day in days:
        for meal in MEALS:
            entry = filled(day, meal)
            parsed = name_and_city(entry) if entry else None
            if entry is None or (parsed is not None and parsed[1] == query.org):
                continue
            restaurant = lookup.restaurant(entry)
            if restaurant is not None:
                found |= {cuisine for cuisine in wanted if cuisine in str(restaurant["Cuisines"])}
    missing = [cuisine for cuisine in wanted if cuisine not in found]
    if missing:
        return False, f"The cuisine {missing[0]} is not satisfied."
    return True, None


def valid_transportation(query: TripQuery, days: Sequence[Any], lookup: PlanLookup) -> Verdict:
    rule = query.transportation
    if rule is None:
        return None, None
    banned = {"no flight": "Flight", "no self-driving": "Self-driving"}[rule]
    for day in days:
        transportation = filled(day, "transportation")
        if transportation and (banned.lower() in transportation.lower() if lookup.strict else banned in transportation):
            return False, f"The transportation should not be {rule}."
    return True, None


HARD: dict[str, Check] = {
    "valid_cuisine": valid_cuisine,
    "valid_room_rule": valid_room_rule,
    "valid_transportation": valid_transportation,
    "valid_room_type": valid_room_type,
    "valid_cost": valid_cost,
}
"""The hard constraints by their official names, in upstream's order."""

LOCAL_CONSTRAINT_OF = {"valid_room_rule": "house rule", "valid_cuisine": "cuisine", "valid_room_type": "room type",
                       "valid_transportation": "transportation"}
"""The ``local_constraint`` key each hard constraint (but the budget) checks."""
