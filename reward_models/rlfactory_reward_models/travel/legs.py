"""A day's travel leg as the strict reading takes it: one of the benchmark's modes, on the day's route and date.

The official evaluator checks only the transportation texts that mention a flight number, self-driving or a taxi;
any other text ("Teleport from A to B", "Bus from A to B", a bare "from A to B") passes its sandbox check at no
cost, a flight is found by number and route whatever its date, and a leg may carry any text before its mode. The
strict reading (``PlanLookup(strict=True)``, the reward's default) takes a leg only in the benchmark's own formats:

- ``Flight Number: F0123456, from A to B, ...`` (the flight's details after the route are free text);
- ``Self-driving, from A to B, ...`` and ``Taxi, from A to B, ...``;

with the mode's words in any letter case, and resolves it: the route is the day's own ``from A to B``, a flight is
in the sandbox on that route on the day's date (``query.date[day]``), a car or taxi route has a cost there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rlfactory_reward_models.travel.lookup import PlanLookup
from rlfactory_reward_models.travel.plan_fields import FROM_TO_READ_CHARS, field, from_to
from rlfactory_reward_models.travel.trip import TripQuery
from rlfactory_tool_servers.travel.names import before_parenthesis

Mode = Literal["flight", "self-driving", "taxi"]
LEG_FORMATS = ("'Flight Number: F0123456, from A to B, ...', 'Self-driving, from A to B, ...' or "
               "'Taxi, from A to B, ...'")
_LEG_RE = re.compile(r"(?:flight number:\s*(?P<number>[^\s,]+)\s*,|(?P<ground>self-driving|taxi)\s*,?)"
                     r"\s*from\s+(?P<origin>.+?)\s+to\s+(?P<destination>[^,\n]+?)\s*(?:,.*)?", re.IGNORECASE)


@dataclass(frozen=True)
class Leg:
    """A transportation entry read strictly: its mode, its cities (parenthesised states dropped), its flight."""

    mode: Mode
    origin: str
    destination: str
    number: str | None = None


def parse_leg(text: str) -> Leg | None:
    """The leg ``text`` is in one of the benchmark's formats (``LEG_FORMATS``), else ``None``."""
    match = _LEG_RE.fullmatch(text.strip()) if len(text) <= FROM_TO_READ_CHARS else None
    if match is None:
        return None
    mode: Mode = "flight" if match.group("number") else match.group("ground").lower()  # type: ignore[assignment]
    return Leg(mode, before_parenthesis(match.group("origin")).strip(),
               before_parenthesis(match.group("destination")).strip(), match.group("number"))


def leg_problem(query: TripQuery, index: int, day: Mapping[str, Any], lookup: PlanLookup) -> str | None:
    """Why day ``index``'s transportation is not a leg of the trip the sandbox has, or ``None`` when it is one."""
    text = field(day, "transportation") or ""
    leg = parse_leg(text)
    if leg is None:
        return f"The transportation in day {index + 1} is not one of the benchmark's modes: write {LEG_FORMATS}."
    route = from_to(field(day, "current_city") or "", exact=True)
    if route is None or (before_parenthesis(route[0]).strip(), before_parenthesis(route[1]).strip()) != (
            leg.origin, leg.destination):
        return f"The transportation in day {index + 1} is not the day's own 'from A to B'."
    if leg.mode != "flight":
        if lookup.ground_cost(leg.origin, leg.destination, leg.mode) is None:
            return f"The {leg.mode} in day {index + 1} is invalid in the sandbox."
        return None
    date = query.date[index] if index < len(query.date) else None
    if date is None or lookup.flight(leg.number or "", leg.origin, leg.destination, date) is None:
        return f"The flight number in day {index + 1} is not in the sandbox on {date or 'the day'}."
    return None
