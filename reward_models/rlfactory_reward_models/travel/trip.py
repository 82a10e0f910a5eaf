"""What the official evaluator reads of a TravelPlanner query, and the words its constraints take.

The reward reads a query through ``TripQuery``: the travel family's task type (``rlfactory_envs.travel.query``)
has these fields, and so may any other object. ``level`` is ``easy`` / ``medium`` / ``hard``; ``dest`` is a city for
3-day trips and a state for 5- and 7-day ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

LEVELS = ("easy", "medium", "hard")
HOUSE_RULES = ("parties", "smoking", "children under 10", "pets", "visitors")
ROOM_TYPES = ("entire room", "private room", "shared room", "not shared room")
TRANSPORTATION_RULES = ("no flight", "no self-driving")
CONSTRAINT_KEYS = ("house rule", "cuisine", "room type", "transportation")


class TripQuery(Protocol):
    """A query as the evaluator reads it: the trip, its people and budget, and its local constraints."""

    org: str
    dest: str
    days: int
    visiting_city_number: int
    date: Sequence[str]
    """The trip's dates, ``YYYY-MM-DD``, one a day."""
    people_number: int
    budget: float
    level: str
    local_constraint: Mapping[str, Any]

    @property
    def house_rule(self) -> str | None: ...

    @property
    def cuisines(self) -> tuple[str, ...]: ...

    @property
    def room_type(self) -> str | None: ...

    @property
    def transportation(self) -> str | None: ...
