"""The eight commonsense constraints, with the official evaluator's names and semantics.

Each check takes the query, the plan's first ``query.days`` days and the plan's ``PlanLookup`` and answers
``(passed, why)``. Where upstream's ``commonsense_constraint.py`` crashes (a day without a field, a "from" that is
not "from A to B", an empty plan) the check fails with the reason instead. Departures from upstream, each a
plain bug there (listed in rlfactory_envs/travel/README.md):

- within current city: a one-city day is compared by whole city name; upstream iterates the characters of the
  name (``for city in "Rockford"``), so any text sharing a letter passed, and the accommodation was checked
  against the name's last letter;
- sandbox, diversity and current city read every attraction, including one not followed by ``;``;
- an entry with an empty name is not in the sandbox (see ``lookup``).

The strict reading (``lookup.strict``, the reward's default) is tighter where the official one pays for what is no
trip: names are whole and exact (``lookup``), a travel day's city is "from A to B" and nothing more, and every leg
is a flight, a self-driving or a taxi leg of the day's route, on the day's date (``legs``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import groupby
from typing import Any

from rlfactory_reward_models.travel.legs import leg_problem
from rlfactory_reward_models.travel.lookup import PlanLookup
from rlfactory_reward_models.travel.plan_fields import (EMPTY, MEALS, NO_MORE_DAYS, attraction_entries, day_cities,
                                                        field, filled, flight_number, from_to, name_and_city,
                                                        transport_kind)
from rlfactory_reward_models.travel.trip import TripQuery
from rlfactory_tool_servers.travel.names import before_parenthesis

Verdict = tuple[bool | None, str | None]
Check = Callable[[TripQuery, Sequence[Any], PlanLookup], Verdict]


def _route_cities(query: TripQuery, days: Sequence[Any], *, exact: bool = False) -> tuple[list[str] | None,
                                                                                          str | None]:
    """The cities the days pass through, in order (both ends of a travel day); or why they cannot be read.
    ``exact``: a travel day's city is "from A to B" and nothing else (``from_to``)."""
    cities: list[str] = []
    for i, day in enumerate(days):
        value = field(day, "current_city")
        if value is None:
            return None, f"Day {i + 1} has no current_city."
        if "from" in value:
            pair = from_to(value, exact=exact)
            if pair is None:
                return None, f"The current city of day {i + 1} is not 'from A to B'."
            first, second = before_parenthesis(pair[0]), before_parenthesis(pair[1])
            if i == 0 and first != query.org:
                return None, f"The first day's city should be {query.org}."
            cities += [first, second]
        else:
            cities.append(before_parenthesis(value))
    return cities, None


def _valid_city_sequence(cities: list[str]) -> bool:
    """Upstream ``is_valid_city_sequence``: at least three entries; every city but the first and last appears in
    one consecutive run of two or more, and never again after its run."""
    if len(cities) < 3:
        return False
    visited: set[str] = set()
    i = 0
    while i < len(cities):
        city = cities[i]
        if city in visited and i != 0 and i != len(cities) - 1:
            return False
        count = 0
        while i < len(cities) and cities[i] == city:
            count += 1
            i += 1
        if count == 1 and 0 < i - 1 < len(cities) - 1:
            return False
        visited.add(city)
    return True


def is_reasonable_visiting_city(query: TripQuery, days: Sequence[Any], lookup: PlanLookup) -> Verdict:
    cities, why = _route_cities(query, days, exact=lookup.strict)
    if cities is None:
        return False, why
    if not cities:
        return False, "The plan has no days."
    if cities[0] != cities[-1]:
        return False, "The trip should be a closed circle."
    if not _valid_city_sequence(cities):
        return False, "The city sequence is invalid."
    for i, city in enumerate(cities):
        state = lookup.state_of(city)
        if state is None:
            return False, f"{city} is not a valid city."
        if i not in (0, len(cities) - 1) and query.days > 3 and state != query.dest:
            return False, f"{city} is not in {query.dest}."
    return True, None


def _entity(lookup: PlanLookup, kind: str, entry: str) -> Any:
    """What counts as "the same" restaurant or attraction: the entry's text, or with ``strict`` the row it names."""
    if not lookup.strict:
        return entry
    row = lookup.restaurant(entry) if kind == "restaurant" else lookup.attraction(entry)
    parsed = name_and_city(entry, whole=True)
    if row is None:
        return parsed or entry.strip()
    return (row["Name"], row["City"])


def is_valid_restaurants(query: TripQuery, days: Sequence[Any], lookup: PlanLookup) -> Verdict:
    seen: set[Any] = set()
    for i, day in enumerate(days):
        for meal in MEALS:
            entry = filled(day, meal)
            if entry is None:
                continue
            key = _entity(lookup, "restaurant", entry)
            if key in seen:
                return False, f"The restaurant in day {i + 1} {meal} is repeated."
            seen.add(key)
    return True, None


def is_valid_attractions(query: TripQuery, days: Sequence[Any], lookup: PlanLookup) -> Verdict:
    seen: set[Any] = set()
    for i, day in enumerate(days):
        text = filled(day, "attraction")
        for entry in attraction_entries(text) if text else ():
            key = _entity(lookup, "attraction", entry)
            if key in seen:
                return False, f"The attraction '{entry}' in day {i + 1} is repeated."
            seen.add(key)
    return True, None


def is_valid_transportation(query: TripQuery, days: Sequence[Any], lookup: PlanLookup) -> Verdict:
    first = filled(days[0], "transportation") if days else None
    if first is None:
        return False, "The transportation in day 1 should not be empty."
    kinds = {transport_kind(first)}
    kinds |= {transport_kind(text) for day in days if (text := filled(day, "transportation"))}
    if {"Self-driving", "Flight"} <= kinds or {"Taxi", "Self-driving"} <= kinds:
        return False, "The transportation is conflicting."
    return True, None


def is_valid_information_in_current_city(query: TripQuery, days: Sequence[Any], lookup: PlanLookup) -> Verdict:
    for i, day in enumerate(days):
        value = field(day, "current_city")
        cities = day_cities(value, exact=lookup.strict) if value is not None else []
        if not cities:
            return False, f"The current city of day {i + 1} cannot be read."
        transportation = filled(day, "transportation")
        if transportation and any(city not in transportation for city in cities):
            return False, f"The transportation in day {i + 1} is invalid city choice."
        for meal in MEALS:
            entry = filled(day, meal)
            if entry and not any(city in entry for city in cities):
                return False, f"The {meal} in day {i + 1} is invalid city choice."
        attractions = filled(day, "attraction")
        for entry in attraction_entries(attractions) if attractions else ():
            if not any(city in entry for city in cities):
                return False, f"The attraction in day {i + 1} is invalid city choice."
        accommodation = filled(day, "accommodation")
        if accommodation and cities[-1] not in accommodation:
            return False, f"The accommodation in day {i + 1} is invalid city choice."
    return True, None


def is_valid_information_in_sandbox(query: TripQuery, days: Sequence[Any], lookup: PlanLookup) -> Verdict:
    for i, day in enumerate(days):
        transportation = filled(day, "transportation")
        if transportation and lookup.strict:
            problem = leg_problem(query, i, day, lookup)
            if problem:
                return False, problem
        elif transportation:
            lowered = transportation.lower()
            pair = from_to(transportation) or from_to(field(day, "current_city") or "")
            if "flight number" in lowered:
                number = flight_number(transportation)
                if pair is None or not number:
                    return False, f"The transportation {transportation!r} in day {i + 1} can not be parsed."
                if lookup.flight(number, before_parenthesis(pair[0]), before_parenthesis(pair[1])) is None:
                    return False, f"The flight number in day {i + 1} is invalid in the sandbox."
            elif "self-driving" in lowered or "taxi" in lowered:
                origin, destination = pair or ("-", "-")
                mode = "self-driving" if "self-driving" in lowered else "taxi"
                if lookup.ground_cost(origin, destination, mode) is None:
                    return False, f"The {mode} in day {i + 1} is invalid in the sandbox."
        for meal in MEALS:
            entry = filled(day, meal)
            if entry and lookup.restaurant(entry) is None:
                return False, f"The {meal} in day {i + 1} is invalid in the sandbox."
        attractions = filled(day, "attraction")
        for entry in attraction_entries(attractions) if attractions else ():
            if lookup.attraction(entry) is None:
                return False, f"The attraction {entry} in day {i + 1} is invalid in the sandbox."
        accommodation = filled(day, "accommodation")
        if accommodation and lookup.accommodation(accommodation) is None:
            return False, f"The accommodation in day {i + 1} is invalid in the sandbox."
    return True, None


def is_valid_accommodation(query: TripQuery, days: Sequence[Any], lookup: PlanLookup) -> Verdict:
    stays = []
    for day in days:
        value = field(day, "accommodation")
        if value is None:
            return False, "No Accommodation Info."
        stays.append(value)
    for value, run in groupby(stays):
        nights = len(list(run))
        if value in EMPTY or lookup.accommodation_matches(value) != 1:
            continue  # upstream applies the rule only to an entry that matches exactly one row
        row = lookup.accommodation(value)
        if row is not None and nights < row["minimum nights"]:
            return False, f"The accommodation {value} do not obey the minumum nights rule."
    return True, None


def _valid_days(query: TripQuery, days: Sequence[Any]) -> bool:
    counted = sum(1 for day in days if day != {} and field(day, "current_city") not in (None, NO_MORE_DAYS))
    return counted == query.days


def _valid_city_number(query: TripQuery, days: Sequence[Any], exact: bool) -> bool:
    cities, _ = _route_cities(query, days, exact=exact)
    if cities is None:
        return False
    return len(set(cities) - {query.org}) == query.visiting_city_number


def is_not_absent(query: TripQuery, days: Sequence[Any], lookup: PlanLookup) -> Verdict:
    if not _valid_days(query, days):
        return False, "Invalid Days"
    if not _valid_city_number(query, days, lookup.strict):
        return False, "Invalid City Number"
    given = 0
    for i, day in enumerate(days):
        for key in ("transportation", "breakfast", "lunch", "dinner", "attraction", "accommodation"):
            if field(day, key) is None:
                return False, f"No {key.capitalize()} Info."
        city = field(day, "current_city") or ""
        if ("from " in city or "to " in city) and field(day, "transportation") in EMPTY:
            return False, f"No transportation in day {i + 1} is not allowed."
        if "from " not in city and " to " not in city and field(day, "attraction") in EMPTY:
            return False, f"No attaction in day {i + 1} is not allowed."
        if i != query.days - 1 and field(day, "accommodation") in EMPTY:
            return False, f"No accommodation in day {i + 1} is not allowed."
        if any(field(day, meal) in EMPTY for meal in MEALS) and "from " not in city:
            return False, f"No meal in day {i + 1} is not allowed."
        given += sum(1 for value in day.values() if value and value != "-")
    if given / (6 * query.days) < 0.5:
        return False, "The absent information is more than 50%."
    return True, None


COMMONSENSE: dict[str, Check] = {
    "is_reasonable_visiting_city": is_reasonable_visiting_city,
    "is_valid_restaurants": is_valid_restaurants,
    "is_valid_attractions": is_valid_attractions,
    "is_valid_accommodation": is_valid_accommodation,
    "is_valid_transportation": is_valid_transportation,
    "is_valid_information_in_current_city": is_valid_information_in_current_city,
    "is_valid_information_in_sandbox": is_valid_information_in_sandbox,
    "is_not_absent": is_not_absent,
}
"""The commonsense constraints by their official names, in upstream's order."""
