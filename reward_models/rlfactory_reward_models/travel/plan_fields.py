"""Reading the fields of a submitted day the way the official evaluator reads them.

A day is a dict: ``current_city`` ("A" or "from A to B"), ``transportation``, ``breakfast``, ``attraction``
("Name, City;Name, City;"), ``lunch``, ``dinner``, ``accommodation`` ("Name, City"); ``"-"`` or ``""`` where
nothing applies. Submissions are untrusted: any value is read as text, and a missing field as absent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rlfactory_tool_servers.travel.names import before_parenthesis

DAY_FIELDS = ("current_city", "transportation", "breakfast", "attraction", "lunch", "dinner", "accommodation")
MEALS = ("breakfast", "lunch", "dinner")
EMPTY = ("", "-")
NO_MORE_DAYS = "You don't need to fill in the information for this or later days."

FROM_TO_READ_CHARS = 512
"""How much of a field is searched for "from A to B": upstream's pattern backtracks quadratically, so a field of
64 KB would take seconds; real fields are under 200 characters."""
_FROM_TO_RE = re.compile(r"from\s+(.+?)\s+to\s+([^,]+)(?=[,\s]|$)")
_EXACT_FROM_TO_RE = re.compile(r"from\s+(.+?)\s+to\s+([^,]+?)")


def field(day: Any, key: str) -> str | None:
    """The field as text; ``None`` when the day is not a dict or lacks it."""
    if not isinstance(day, Mapping) or key not in day:
        return None
    value = day[key]
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def filled(day: Any, key: str) -> str | None:
    """The field's text when it names something (present, not ``""`` or ``"-"``), else ``None``."""
    value = field(day, key)
    return None if value is None or value in EMPTY else value


def days_of(plan: Sequence[Any], days: int) -> list[Any]:
    """The days the evaluator reads: the first ``days`` entries (a plan may carry trailing ``{}``)."""
    return list(plan[:days])


def days_beyond(plan: Sequence[Any], days: int) -> int:
    """How many entries after the first ``days`` plan something: all but ``{}``, a day whose fields are all ``"-"``
    or ``""`` (its ``days`` number aside), and the benchmark's "no more days" marker."""
    def plans_something(day: Any) -> bool:
        if not isinstance(day, Mapping):
            return True
        return any(key != "days" and field(day, key) not in (*EMPTY, NO_MORE_DAYS) for key in day)
    return sum(map(plans_something, plan[days:]))


def from_to(text: str, *, exact: bool = False) -> tuple[str, str] | None:
    """``(A, B)`` of the first "from A to B" in ``text`` (B ends at a comma or the end), else ``None``. ``exact``:
    only when the whole text (but surrounding space) is "from A to B", so no text can come before or after it."""
    if not exact:
        match = _FROM_TO_RE.search(text[:FROM_TO_READ_CHARS])
    else:
        match = _EXACT_FROM_TO_RE.fullmatch(text.strip()) if len(text) <= FROM_TO_READ_CHARS else None
    return (match.group(1), match.group(2)) if match else None


def day_cities(current_city: str, *, exact: bool = False) -> list[str]:
    """The cities of a day: ``[A, B]`` for "from A to B" (read as ``from_to`` does, ``exact`` or not), else ``[A]``
    (parenthesised parts dropped)."""
    if "from" in current_city:
        pair = from_to(current_city, exact=exact)
        if pair is None:
            return []
        return [before_parenthesis(pair[0]), before_parenthesis(pair[1])]
    return [before_parenthesis(current_city)]


def name_and_city(entry: str, *, whole: bool = False) -> tuple[str, str] | None:
    """``("Name", "City")`` of ``"Name, City"`` (the city after the last comma), else ``None`` (upstream
    ``get_valid_name_city``, which answers ``("-", "-")`` there). Upstream's regular expression, read in linear
    time: the name is what precedes the last comma on its line, the city all that follows it. ``whole``: the name
    is all that precedes the last comma, earlier lines included (upstream drops them, so a line of any text before
    a name passes)."""
    head, comma, tail = entry.rpartition(",")
    if not comma or not tail:
        return None
    name = head if whole else head.rpartition("\n")[2]
    return name.strip(), before_parenthesis(tail.strip()).strip()


def attraction_entries(text: str) -> list[str]:
    """The attractions of ``"A, City;B, City;"``. Upstream reads ``split(';')[:-1]``, which drops an entry not
    followed by ``;`` (so "A, City" alone is never checked); here every segment counts but a blank or ``-`` one
    (the benchmark's "nothing here")."""
    return [part for part in text.split(";") if part.strip() not in EMPTY]


def transport_kind(text: str) -> str | None:
    """``Taxi`` / ``Self-driving`` / ``Flight`` by the first keyword found in that order, else ``None``."""
    lowered = text.lower()
    if "taxi" in lowered:
        return "Taxi"
    if "self-driving" in lowered:
        return "Self-driving"
    if "flight" in lowered:
        return "Flight"
    return None


FLIGHT_NUMBER_RE = re.compile(r"Flight Number:\s*([^,]*)", re.IGNORECASE)


def flight_number(text: str) -> str | None:
    """The number after "Flight Number: " up to the next comma (upstream ``split('Flight Number: ')[1]``)."""
    match = FLIGHT_NUMBER_RE.search(text)
    return match.group(1).strip() if match else None
