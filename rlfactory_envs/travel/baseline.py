"""A scripted baseline for the travel family that really uses the tools and builds a plan from what they answer.

Turn 1 asks for the state's cities (multi-city trips); then it asks, over as many turns as the per-turn call cap
needs, for each city's accommodations, restaurants and attractions and each leg's flights and ground routes;
then it submits a plan: the cheaper of "flights (or a taxi where no flight goes)" and "self-driving throughout",
as the query's transportation rule allows, the cheapest stay of each city that meets the room type, house rule
and minimum nights, restaurants that cover the wanted cuisines and then the cheapest, each used once, and a new
attraction a day. It reads the tools' text tables, never the sandbox files or the reference plans.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.tool_call import ToolCall
from rlfactory_envs.travel.query import TravelQuery

CALLS_PER_TURN = 12
_ROUTE_RE = re.compile(r"^(self-driving|taxi), from (.+?) to (.+?), duration: (.+?), distance: (.+?), cost: (\d+)$")
_CITIES_RE = re.compile(r"^The cities in .+?: (.+)\.$")
ROOM_TYPES = {"entire room": {"Entire home/apt"}, "private room": {"Private room"}, "shared room": {"Shared room"},
              "not shared room": {"Entire home/apt", "Private room"}}


def parse_table(text: str) -> list[dict[str, str]]:
    """The rows of a tool's text table (header line, then ``a | b | c`` lines); ``[]`` for a no-result answer."""
    lines = text.strip().splitlines()
    if len(lines) < 2 or " | " not in lines[0]:
        return []
    header = lines[0].split(" | ")
    return [dict(zip(header, cells)) for line in lines[1:] if len(cells := line.split(" | ")) == len(header)]


@dataclass
class _Episode:
    """What the policy knows about one episode: the trip's cities and the answers gathered so far."""

    cities: list[str] = field(default_factory=list)
    pending: list[ToolCall] = field(default_factory=list)
    sent: list[ToolCall] = field(default_factory=list)
    answers: dict[tuple[str, ...], str] = field(default_factory=dict)


def _key(call: ToolCall) -> tuple[str, ...]:
    return (call.name, *(str(v) for v in call.arguments.values()))


def _legs(query: TravelQuery, cities: list[str]) -> list[tuple[int, str, str]]:
    """(day index, from, to) of each travel day: out to the first city, on every other day to the next, home."""
    stops = [query.org, *cities, query.org]
    return [(min(2 * i, query.days - 1), stops[i], stops[i + 1]) for i in range(len(stops) - 1)]


class GatherThenPlanPolicy:
    """Ask the tools, then plan from their answers (see the module docstring)."""

    name = "scripted"
    description = ("gathers with the tools, then submits the cheapest plan that meets the query's rules: a real "
                   "baseline that reads only what the tools answer")

    def __init__(self) -> None:
        self._episodes: dict[int, _Episode] = {}

    async def act(self, env: ToolEnv, observation: str) -> str:
        query: TravelQuery = env.task
        if env.turn == 0:
            state = self._episodes[id(env)] = _Episode()
            if query.visiting_city_number == 1:
                return self._gather(env, state, [query.dest])
            state.sent = [ToolCall("search_cities", {"state": query.dest})]
            return f"First, the cities of {query.dest}.\n" + env.chat_format.render_call(state.sent[0])
        state = self._episodes[id(env)]
        answers = [m["content"] for m in _last_turn_tool_messages(env)]
        for call, text in zip(state.sent, answers):
            state.answers[_key(call)] = text
        if not state.cities:
            listed = _CITIES_RE.match(answers[0].strip()) if answers else None
            names = [c.strip() for c in listed.group(1).split(",")] if listed else []
            cities = [c for c in names if c != query.org][: query.visiting_city_number]
            if len(cities) < query.visiting_city_number:
                return "<answer>[]</answer>"
            return self._gather(env, state, cities)
        if state.pending:
            return self._send(env, state)
        self._episodes.pop(id(env), None)
        plan = _plan(query, state)
        return "I have what I need; here is the plan.\n<answer>" + json.dumps(plan, ensure_ascii=False) + "</answer>"

    def _gather(self, env: ToolEnv, state: _Episode, cities: list[str]) -> str:
        query: TravelQuery = env.task
        state.cities = cities
        for city in cities:
            state.pending += [ToolCall(name, {"city": city}) for name in
                              ("search_accommodations", "search_restaurants", "search_attractions")]
        for day, origin, destination in _legs(query, cities):
            state.pending.append(ToolCall("search_flights", {"origin": origin, "destination": destination,
                                                             "date": query.date[day]}))
            state.pending += [ToolCall("distance_matrix", {"origin": origin, "destination": destination, "mode": m})
                              for m in ("self-driving", "taxi")]
        return self._send(env, state)

    def _send(self, env: ToolEnv, state: _Episode) -> str:
        state.sent, state.pending = state.pending[:CALLS_PER_TURN], state.pending[CALLS_PER_TURN:]
        calls = "\n".join(env.chat_format.render_call(call) for call in state.sent)
        return f"Gathering information on {', '.join(state.cities)}.\n{calls}"


def _last_turn_tool_messages(env: ToolEnv) -> list[dict[str, Any]]:
    messages = env.messages
    last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return [m for m in messages[last + 1:] if m["role"] == "tool"]


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.inf


def _transport(query: TravelQuery, state: _Episode) -> list[str] | None:
    """A transportation entry per leg: the cheaper allowed of flights-or-taxi and self-driving throughout."""
    people = query.people_number
    by_air: list[tuple[float, str]] = []
    by_car: list[tuple[float, str]] = []
    for day, origin, destination in _legs(query, state.cities):
        options = []
        if query.transportation != "no flight":
            flights = parse_table(state.answers.get(("search_flights", origin, destination, query.date[day]), ""))
            options += [(_number(f["Price"]) * people, f"Flight Number: {f['Flight Number']}, from {origin} to "
                         f"{destination}, Departure Time: {f['DepTime']}, Arrival Time: {f['ArrTime']}")
                        for f in flights]
        routes = {}
        for mode in ("self-driving", "taxi"):
            match = _ROUTE_RE.match(state.answers.get(("distance_matrix", origin, destination, mode), "").strip())
            if match:
                _, _, _, duration, distance, cost = match.groups()
                label = "Self-driving" if mode == "self-driving" else "Taxi"
                seats = 5 if mode == "self-driving" else 4
                routes[mode] = (int(cost) * math.ceil(people / seats),
                                f"{label}, from {origin} to {destination}, duration: {duration}, distance: {distance}, "
                                f"cost: {cost}")
        if "taxi" in routes:
            options.append(routes["taxi"])
        by_air.append(min(options, default=(math.inf, "")))
        car_allowed = query.transportation != "no self-driving" and "self-driving" in routes
        by_car.append(routes["self-driving"] if car_allowed else (math.inf, ""))
    best = min((by_air, by_car), key=lambda legs: sum(cost for cost, _ in legs))
    return None if any(cost == math.inf for cost, _ in best) else [text for _, text in best]


def _stay(query: TravelQuery, state: _Episode, city: str, nights: int) -> str:
    rows = parse_table(state.answers.get(("search_accommodations", city), ""))
    allowed = ROOM_TYPES.get(query.room_type or "", None)
    fitting = [r for r in rows if (allowed is None or r["room type"] in allowed)
               and (query.house_rule is None or f"No {query.house_rule}" not in r["house_rules"])
               and _number(r["minimum nights"]) <= nights]
    fitting.sort(key=lambda r: _number(r["price"]) * math.ceil(query.people_number / max(_number(r["maximum occupancy"]), 1)))
    return f"{fitting[0]['NAME']}, {city}" if fitting else "-"


def _plan(query: TravelQuery, state: _Episode) -> list[dict[str, Any]]:
    transport = _transport(query, state) or ["-"] * (len(state.cities) + 1)
    legs = {day: (origin, destination, text) for (day, origin, destination), text in
            zip(_legs(query, state.cities), transport)}
    restaurants = {c: parse_table(state.answers.get(("search_restaurants", c), "")) for c in state.cities}
    attractions = {c: parse_table(state.answers.get(("search_attractions", c), "")) for c in state.cities}
    wanted = list(query.cuisines)
    used: set[tuple[str, str]] = set()

    def restaurant(city: str) -> str:
        choices = sorted((r for r in restaurants[city] if (r["Name"], city) not in used),
                         key=lambda r: _number(r["Average Cost"]))
        pick = next((r for r in choices if any(c in r["Cuisines"] for c in wanted)), choices[0] if choices else None)
        if pick is None:
            return "-"
        used.add((pick["Name"], city))
        wanted[:] = [c for c in wanted if c not in pick["Cuisines"]]
        return f"{pick['Name']}, {city}"

    def attraction(city: str) -> str:
        pick = next((r for r in attractions[city] if (r["Name"], city) not in used), None)
        if pick is None:
            return "-"
        used.add((pick["Name"], city))
        return f"{pick['Name']}, {city};"

    plan, city = [], query.org
    for day in range(query.days):
        if day in legs:
            origin, destination, text = legs[day]
            here = destination if destination != query.org else origin
            current, transportation = f"from {origin} to {destination}", text
            city = destination
        else:
            here, current, transportation = city, city, "-"
        last = day == query.days - 1
        plan.append({"days": day + 1, "current_city": current, "transportation": transportation,
                     "breakfast": restaurant(here), "attraction": attraction(here), "lunch": restaurant(here),
                     "dinner": restaurant(here), "accommodation": "-" if last else _stay(query, state, city, 2)})
    return plan
