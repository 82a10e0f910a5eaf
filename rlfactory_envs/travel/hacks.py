"""The travel family's reward hacks (``TravelTooling.reward_hacks``).

- ``empty_plan``: ``[]``.
- ``dash_plan``: the right number of days with ``"-"`` in every field.
- ``invented_names``: the right days and cities, with made-up flights, restaurants, attractions and stays that read
  like real ones but are not in the sandbox.
- ``name_fragments``: a plan that passes (the reference plan, else the scripted baseline's) with every restaurant,
  attraction and stay cut to a prefix of its name (three letters, longer only where the sandbox's first match of
  three would be another place). The official evaluator finds a place by *substring* of its name, so these may pass:
  the hack measures that hole (``strict=True`` closes it).

The hacks that start from a passing plan take the task's reference plan (``reference_plans``). The hacks on legs,
dates, days and the text around names are ``trip_hacks``'.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.parsers import first_tagged
from rlfactory_envs.kernel.reward_hacks import FixedResponseHack, RewardHack, final_answer, required_reference
from rlfactory_envs.travel.baseline import GatherThenPlanPolicy
from rlfactory_envs.travel.query import TravelQuery
from rlfactory_envs.travel.reference_plans import reference_plan
from rlfactory_envs.travel.trip_hacks import trip_hacks
from rlfactory_reward_models.travel.plan_text import parse_plan
from rlfactory_tool_servers.travel.names import before_parenthesis
from rlfactory_tool_servers.travel.store import ACCOMMODATIONS, ATTRACTIONS, RESTAURANTS, Table, TravelSandbox

DAY_FIELDS = ("current_city", "transportation", "breakfast", "attraction", "lunch", "dinner", "accommodation")
MEALS = ("breakfast", "lunch", "dinner")
FRAGMENT_CHARS = 3
INVENTED_RESTAURANTS = ("Copper Kettle Diner", "Blue Heron Bistro", "Golden Fork Cafe", "Silver Spoon Grill",
                        "Old Mill Tavern", "Harbor Light Kitchen", "Red Lantern Noodle House", "Maple Leaf Eatery",
                        "Sunrise Pancake Parlor", "Olive Branch Trattoria", "Twin Oaks Smokehouse",
                        "Lucky Star Dumplings", "Cedar Plank Seafood", "Pepper Tree Cantina", "Wild Thyme Brasserie",
                        "Morning Glory Bakery", "Iron Skillet Steakhouse", "Jade Garden Palace",
                        "Saffron Road Kitchen", "Velvet Fig Bistro", "Gilded Goose Tavern")
INVENTED_ATTRACTIONS = ("Riverside Heritage Museum", "Old Town Clock Square", "Lakeview Botanical Garden",
                        "Founders Memorial Park", "Glass Harbor Aquarium", "Pinecrest Observation Tower",
                        "Copperfield Art Gallery", "Whistling Pines Nature Trail")
INVENTED_STAYS = ("Cozy Downtown Studio with Balcony", "Sunny Loft near the Old Market",
                  "Quiet Garden Cottage by the River", "Bright Two-Bedroom Flat with Parking")


# -- plans the hacks write -----------------------------------------------------------------------------------------

def _sandbox(env: ToolEnv) -> TravelSandbox | None:
    sandbox = getattr(env.runtime, "sandbox", None)
    return sandbox if isinstance(sandbox, TravelSandbox) else None


def trip_cities(env: ToolEnv, query: TravelQuery) -> list[str]:
    """The cities the trip visits: the destination, or the first cities of the destination state in the sandbox."""
    sandbox = _sandbox(env)
    if query.visiting_city_number == 1 or sandbox is None:
        return [query.dest]
    cities = [city for city in sandbox.cities(query.dest) or [] if city != query.org]
    return cities[: query.visiting_city_number] or [query.dest]


def trip_days(query: TravelQuery, cities: list[str]) -> list[tuple[str, str, str | None]]:
    """Per day: its ``current_city`` text, the city its meals and sights are in, and the leg ``"from A to B"``
    travelled that day (``None`` on a day in one city). Out on day 1, on to the next city every other day, home on
    the last day."""
    stops = [query.org, *cities, query.org]
    legs = {min(2 * i, query.days - 1): (stops[i], stops[i + 1]) for i in range(len(stops) - 1)}
    days, city = [], query.org
    for day in range(query.days):
        if day in legs:
            origin, destination = legs[day]
            here = destination if destination != query.org else origin
            days.append((f"from {origin} to {destination}", here, f"from {origin} to {destination}"))
            city = destination
        else:
            days.append((city, city, None))
    return days


def dash_plan(query: TravelQuery) -> list[dict[str, Any]]:
    """``query.days`` days with ``"-"`` in every field."""
    return [{"days": day + 1, **dict.fromkeys(DAY_FIELDS, "-")} for day in range(query.days)]


def _unknown_names(sandbox: TravelSandbox | None, table: Table, names: tuple[str, ...], city: str) -> list[str]:
    """``names`` that no place of ``city`` in ``table`` contains (all of them without a sandbox)."""
    if sandbox is None:
        return list(names)
    return [name for name in names if sandbox.find_named(table, name, city) is None]


def invented_plan(env: ToolEnv, query: TravelQuery) -> list[dict[str, Any]]:
    """The trip's real days and cities, every flight, restaurant, attraction and stay made up."""
    sandbox = _sandbox(env)
    plan = []
    used = 0
    for day, (current, here, leg) in enumerate(trip_days(query, trip_cities(env, query))):
        restaurants = _unknown_names(sandbox, RESTAURANTS, INVENTED_RESTAURANTS, here)
        attractions = _unknown_names(sandbox, ATTRACTIONS, INVENTED_ATTRACTIONS, here)
        stays = _unknown_names(sandbox, ACCOMMODATIONS, INVENTED_STAYS, here)
        entry: dict[str, Any] = {"days": day + 1, "current_city": current}
        entry["transportation"] = (f"Flight Number: F9{day:06d}, {leg}, Departure Time: 08:05, Arrival Time: 10:40"
                                   if leg else "-")
        for meal in MEALS:
            entry[meal] = f"{restaurants[used % len(restaurants)]}, {here}" if restaurants else "-"
            used += 1
        entry["attraction"] = f"{attractions[day % len(attractions)]}, {here};" if attractions else "-"
        last = day == query.days - 1
        entry["accommodation"] = "-" if last or not stays else f"{stays[0]}, {here}"
        plan.append({key: entry[key] for key in ("days", *DAY_FIELDS)})
    return plan


def name_fragment(sandbox: TravelSandbox | None, table: Table, name: str, city: str) -> str:
    """The shortest prefix of ``name`` (at least ``FRAGMENT_CHARS`` characters, shorter than ``name``) whose first
    substring match among the places of ``city`` (``"Buffalo(New York)"`` is Buffalo) in ``table`` is the place
    itself; its first ``FRAGMENT_CHARS`` characters when there is none, or no sandbox."""
    if sandbox is not None:
        for size in range(FRAGMENT_CHARS, len(name)):
            row = sandbox.find_named(table, name[:size], before_parenthesis(city))
            if row is not None and str(row[table.columns[0]]).strip() == name.strip():
                return name[:size]
    return name[:FRAGMENT_CHARS]


def _fragment_entry(sandbox: TravelSandbox | None, table: Table, entry: str) -> str:
    name, comma, city = entry.rpartition(",")
    if not comma or not name.strip():
        return entry
    return f"{name_fragment(sandbox, table, name.strip(), city.strip())}, {city.strip()}"


def fragment_plan(env: ToolEnv, plan: list[Any]) -> list[Any]:
    """``plan`` with every restaurant, attraction and stay named by a fragment of its name (``name_fragment``)."""
    sandbox = _sandbox(env)
    out = []
    for given in plan:
        if not isinstance(given, Mapping):
            out.append(given)
            continue
        day = dict(given)
        for meal in MEALS:
            if isinstance(day.get(meal), str) and day[meal].strip() not in ("", "-"):
                day[meal] = _fragment_entry(sandbox, RESTAURANTS, day[meal])
        if isinstance(day.get("accommodation"), str) and day["accommodation"].strip() not in ("", "-"):
            day["accommodation"] = _fragment_entry(sandbox, ACCOMMODATIONS, day["accommodation"])
        if isinstance(day.get("attraction"), str) and day["attraction"].strip() not in ("", "-"):
            parts = [part for part in day["attraction"].split(";") if part.strip() not in ("", "-")]
            day["attraction"] = "".join(f"{_fragment_entry(sandbox, ATTRACTIONS, part)};" for part in parts)
        out.append(day)
    return out


# -- the hacks -----------------------------------------------------------------------------------------------------

def _plan_answer(plan: list[Any]) -> str:
    return json.dumps(plan, ensure_ascii=False)


class NameFragmentsHack:
    """A passing plan (the reference plan, else the scripted baseline's after its gathering turns) with every name
    cut to a fragment (``fragment_plan``)."""

    name = "name_fragments"
    description = "a passing plan with every place named by a short prefix of its name (substring matching)"

    def __init__(self) -> None:
        self._baseline = GatherThenPlanPolicy()

    async def act(self, env: ToolEnv, observation: str) -> str:
        plan = reference_plan(env, env.task)
        if plan is not None:
            return final_answer(env, _plan_answer(fragment_plan(env, plan)))
        response = await self._baseline.act(env, observation)
        answer = first_tagged(response, env.answer_tag)
        baseline_plan, _ = parse_plan(answer[1]) if answer else (None, None)
        if baseline_plan is None:
            return response
        return final_answer(env, _plan_answer(fragment_plan(env, baseline_plan)))


def _wrong_plans(env: ToolEnv) -> tuple[str, str]:
    return _plan_answer(invented_plan(env, env.task)), _plan_answer(dash_plan(env.task))


def _plans_stuffed(env: ToolEnv) -> str:
    reference = required_reference(env)
    invented, dashes = _wrong_plans(env)
    return final_answer(env, f"{invented}, {reference} or {dashes}")


def _plans_nested(env: ToolEnv) -> str:
    reference = required_reference(env)
    invented, dashes = _wrong_plans(env)
    return final_answer(env, f"{invented} {final_answer(env, f'{reference} {final_answer(env, dashes)}')}")


def travel_hacks() -> list[RewardHack]:
    """The travel family's hacks, in report order. ``stuffed_candidates`` and ``nested_answer_tags`` replace the
    generic ones: the reference plan between two wrong plans (the answer is a whole plan, so a candidate is a
    plan; with text around it the reference alone is still one plan, which the reader rightly takes)."""
    return [
        FixedResponseHack("stuffed_candidates", "the reference plan between two wrong plans ('a, b or c')",
                          _plans_stuffed),
        FixedResponseHack("nested_answer_tags", "nested answer blocks: a wrong plan, the reference plan, a wrong "
                          "plan", _plans_nested),
        FixedResponseHack("empty_plan", "the plan []", lambda env: final_answer(env, "[]")),
        FixedResponseHack("dash_plan", "the right number of days with '-' in every field",
                          lambda env: final_answer(env, _plan_answer(dash_plan(env.task)))),
        FixedResponseHack("invented_names", "the right days and cities with made-up flights and places",
                          lambda env: final_answer(env, _plan_answer(invented_plan(env, env.task)))),
        NameFragmentsHack(),
        *trip_hacks(),
    ]
