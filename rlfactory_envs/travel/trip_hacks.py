"""The travel family's hacks on what makes a plan a trip: its legs, their dates, its days, the text around its names.

Each starts from the task's reference plan (``reference_plans``; not applicable where there is none) and changes
one thing a policy could learn instead of planning:

- ``teleport_legs``, ``bus_legs``, ``unnamed_legs``: every leg in a mode the benchmark does not have ("Teleport
  from A to B", "Bus from A to B", a bare "from A to B"): free, and nothing to look up;
- ``extra_day``: the plan with one day more than the trip, a copy of its last day;
- ``banned_mode_lowercase``: on a query that bans flights (self-driving), every leg by a flight of that route and
  date (by car) written in lower case, where the official check looks for ``Flight`` (``Self-driving``);
- ``flight_other_date``: every flight replaced by one of the same route on another date;
- ``junk_before_names``: a line of text before every place and every leg.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.reward_hacks import FixedResponseHack, HackNotApplicable, RewardHack, final_answer
from rlfactory_envs.travel.query import TravelQuery
from rlfactory_envs.travel.reference_plans import reference_plan
from rlfactory_reward_models.travel.plan_fields import from_to
from rlfactory_tool_servers.travel.names import before_parenthesis
from rlfactory_tool_servers.travel.store import TravelSandbox, route_cost

JUNK_LINE = "Any of these will do.\n"
PLACE_FIELDS = ("breakfast", "lunch", "dinner", "accommodation")

Day = dict[str, Any]
Leg = tuple[int, str, str, str]
"""A travel day of a plan: its index, the ``from A to B`` of its ``current_city`` as written, its transportation."""


def _reference(env: ToolEnv) -> list[Day]:
    plan = reference_plan(env, env.task)
    if plan is None:
        raise HackNotApplicable(f"no reference plan for task {env.task.task_id!r}")
    return [copy.deepcopy(day) for day in plan[: env.task.days]]


def _sandbox(env: ToolEnv) -> TravelSandbox:
    sandbox = getattr(env.runtime, "sandbox", None)
    if not isinstance(sandbox, TravelSandbox):
        raise HackNotApplicable("the env has no travel sandbox")
    return sandbox


def plan_legs(plan: list[Day]) -> list[Leg]:
    """The days of ``plan`` that travel (a ``current_city`` of "from A to B" and a transportation)."""
    legs = []
    for index, day in enumerate(plan):
        pair = from_to(str(day.get("current_city") or ""))
        transportation = str(day.get("transportation") or "-")
        if pair is not None and transportation.strip() not in ("", "-"):
            legs.append((index, *pair, transportation))
    return legs


def _answer(env: ToolEnv, plan: list[Day]) -> str:
    return final_answer(env, json.dumps(plan, ensure_ascii=False))


def _each_leg(write: Callable[[str, str], str]) -> Callable[[ToolEnv], str]:
    """A response: the reference plan with every leg's transportation written by ``write(origin, destination)``."""
    def respond(env: ToolEnv) -> str:
        plan = _reference(env)
        for index, origin, destination, _ in plan_legs(plan):
            plan[index]["transportation"] = write(origin, destination)
        return _answer(env, plan)
    return respond


def _extra_day(env: ToolEnv) -> str:
    plan = _reference(env)
    return _answer(env, [*plan, {**copy.deepcopy(plan[-1]), "days": len(plan) + 1}])


def _rewrite_legs(env: ToolEnv, rewrite: Callable[[TravelSandbox, TravelQuery, Leg], str | None], *,
                  every: bool = False) -> str:
    """The reference plan with each leg ``rewrite`` gives a text for rewritten; not applicable when it gives none
    (or, with ``every``, when it gives none for some leg)."""
    plan, sandbox = _reference(env), _sandbox(env)
    texts = {leg[0]: rewrite(sandbox, env.task, leg) for leg in plan_legs(plan)}
    if not any(texts.values()) or (every and not all(texts.values())):
        raise HackNotApplicable(f"{'not every' if every else 'no'} leg of the reference plan can be rewritten so")
    for index, text in texts.items():
        if text is not None:
            plan[index]["transportation"] = text
    return _answer(env, plan)


def _flight_text(flight: dict[str, Any], origin: str, destination: str, words: Callable[[str], str] = str) -> str:
    """A flight leg as the benchmark writes it, its words (not its cities) passed through ``words``."""
    return (f"{words('Flight Number')}: {flight['Flight Number']}, from {origin} to {destination}, "
            f"{words('Departure Time')}: {flight['DepTime']}, {words('Arrival Time')}: {flight['ArrTime']}")


def _banned_mode_lowercase(sandbox: TravelSandbox, query: TravelQuery, leg: Leg) -> str | None:
    index, origin, destination, _ = leg
    cities = before_parenthesis(origin), before_parenthesis(destination)
    if query.transportation == "no flight" and index < len(query.date):
        flights = sandbox.flights(*cities, query.date[index])
        return _flight_text(flights[0], origin, destination, str.lower) if flights else None
    if query.transportation == "no self-driving":
        route = sandbox.route(*cities)
        cost = route_cost(route, "self-driving")
        if route is not None and cost is not None:
            return (f"self-driving, from {origin} to {destination}, duration: {route['duration']}, distance: "
                    f"{route['distance']}, cost: {cost}")
    return None


def _banned_mode(env: ToolEnv) -> str:
    if env.task.transportation is None:
        raise HackNotApplicable("the query bans no means of transport")
    return _rewrite_legs(env, _banned_mode_lowercase, every=True)


def _flight_on_other_date(sandbox: TravelSandbox, query: TravelQuery, leg: Leg) -> str | None:
    index, origin, destination, transportation = leg
    if not transportation.lower().startswith("flight number"):
        return None
    own_date = query.date[index] if index < len(query.date) else None
    route = sandbox.flights_between(before_parenthesis(origin), before_parenthesis(destination))
    own_numbers = {flight["Flight Number"] for flight in route if flight["FlightDate"] == own_date}
    others = [flight for flight in route if flight["Flight Number"] not in own_numbers]
    return _flight_text(others[0], origin, destination) if others else None


def _junk_before_names(env: ToolEnv) -> str:
    plan = _reference(env)
    for day in plan:
        for key in (*PLACE_FIELDS, "transportation"):
            if str(day.get(key) or "-").strip() not in ("", "-"):
                day[key] = JUNK_LINE + day[key]
        entries = [part for part in str(day.get("attraction") or "").split(";") if part.strip() not in ("", "-")]
        if entries:
            day["attraction"] = "".join(f"{JUNK_LINE}{entry};" for entry in entries)
    return _answer(env, plan)


def trip_hacks() -> list[RewardHack]:
    """The hacks of this module, in report order."""
    return [
        FixedResponseHack("teleport_legs", "the reference plan with every leg 'Teleport from A to B'",
                          _each_leg(lambda a, b: f"Teleport from {a} to {b}")),
        FixedResponseHack("bus_legs", "the reference plan with every leg 'Bus from A to B'",
                          _each_leg(lambda a, b: f"Bus from {a} to {b}")),
        FixedResponseHack("unnamed_legs", "the reference plan with every leg a bare 'from A to B'",
                          _each_leg(lambda a, b: f"from {a} to {b}")),
        FixedResponseHack("extra_day", "the reference plan with one day more than the trip", _extra_day),
        FixedResponseHack("banned_mode_lowercase", "legs by the banned flight or car, written in lower case",
                          _banned_mode),
        FixedResponseHack("flight_other_date", "every flight swapped for the same route's flight on another date",
                          lambda env: _rewrite_legs(env, _flight_on_other_date)),
        FixedResponseHack("junk_before_names", "a line of text before every place and leg of the reference plan",
                          _junk_before_names),
    ]
