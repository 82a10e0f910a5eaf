"""What a plan's entries refer to in the sandbox, as the official evaluator resolves them, cached per plan.

``strict=False`` (the official reading): an entry ``"Name, City"`` is the first row of the city whose name
*contains* ``Name`` (case-sensitive), ``Name`` read from the entry's last line. ``strict=True``: the row whose
name *equals* it, all the text before the city included, which closes the holes of naming a fragment ("a,
Rockford" matches some restaurant of Rockford) and of text before the name on a line of its own. In both, an
empty name matches nothing; upstream's ``str.contains("")`` matches every row, so ", Rockford" passes its sandbox
check. Text SQLite cannot take (a lone surrogate, which JSON's ``"\\ud800"`` escape decodes to) names nothing,
instead of raising.
"""

from __future__ import annotations

import math
from typing import Any

from rlfactory_tool_servers.travel.store import (ACCOMMODATIONS, ATTRACTIONS, RESTAURANTS, Table,
                                                         TravelSandbox, route_cost)
from rlfactory_reward_models.travel.plan_fields import name_and_city
from rlfactory_tool_servers.travel.names import before_parenthesis


class PlanLookup:
    """Sandbox lookups for one plan's evaluation (entries repeat across constraints, so each is resolved once)."""

    def __init__(self, sandbox: TravelSandbox, *, strict: bool = False) -> None:
        self.sandbox = sandbox
        self.strict = strict
        self._named: dict[tuple[str, str], dict[str, Any] | None] = {}
        self._matches: dict[tuple[str, str], int] = {}

    def _find(self, table: Table, entry: str) -> dict[str, Any] | None:
        key = (table.name, entry)
        if key not in self._named:
            parsed = name_and_city(entry, whole=self.strict)
            found = None
            if parsed is not None and parsed[0] and _storable(*parsed):
                found = self.sandbox.find_named(table, parsed[0], parsed[1], exact=self.strict)
            self._named[key] = found
        return self._named[key]

    def restaurant(self, entry: str) -> dict[str, Any] | None:
        return self._find(RESTAURANTS, entry)

    def attraction(self, entry: str) -> dict[str, Any] | None:
        return self._find(ATTRACTIONS, entry)

    def accommodation(self, entry: str) -> dict[str, Any] | None:
        return self._find(ACCOMMODATIONS, entry)

    def accommodation_matches(self, entry: str) -> int:
        """How many rows the entry matches (upstream applies the minimum-nights rule only when exactly one)."""
        key = ("count", entry)
        if key not in self._matches:
            parsed = name_and_city(entry, whole=self.strict)
            count = 0
            if parsed is not None and parsed[0] and _storable(*parsed):
                count = self.sandbox.count_named(ACCOMMODATIONS, parsed[0], parsed[1], exact=self.strict)
            self._matches[key] = count
        return self._matches[key]

    def flight(self, number: str, origin: str | None = None, destination: str | None = None,
               date: str | None = None) -> dict[str, Any] | None:
        """The first flight of this number (on this route, on this date, where given)."""
        if not _storable(number, origin, destination, date):
            return None
        return self.sandbox.flight_numbered(number, origin, destination, date)

    def ground_cost(self, origin: str, destination: str, mode: str) -> int | None:
        """The cost of one car (``self-driving``) or taxi between two cities; ``None`` where the sandbox has no
        valid route (upstream ``run_for_evaluation(...)["cost"]``)."""
        if not _storable(origin, destination):
            return None
        return route_cost(self.sandbox.route(before_parenthesis(origin), before_parenthesis(destination)), mode)

    def state_of(self, city: str) -> str | None:
        return self.sandbox.city_state.get(city)


def _storable(*texts: str | None) -> bool:
    """Whether SQLite can be asked about these texts (UTF-8 cannot encode a lone surrogate)."""
    try:
        for text in texts:
            if text is not None:
                text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def rooms_needed(people: int, occupancy: Any) -> int:
    """Rooms (or cars) for ``people`` at ``occupancy`` each; an occupancy that is not a positive number needs one
    per person."""
    try:
        per = float(occupancy)
    except (TypeError, ValueError):
        return people
    return math.ceil(people / per) if per > 0 and math.isfinite(per) else people
