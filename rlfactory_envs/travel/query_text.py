"""Reading a TravelPlanner query's structured fields from its natural-language text.

The benchmark's rows (``osunlp/TravelPlanner``) carry ``org``, ``dest``, ``days``, ``visiting_city_number``,
``date``, ``people_number``, ``local_constraint``, ``budget`` and ``level`` beside the ``query`` text; files that
hold only the text (the chat-format training set, ``{"idx", "query", "plan"}`` submissions) get them back from it
with ``parse_query_text``. The rules, in the order they are applied:

- **days**: ``"3 days"``, ``"5-day"``, ``"seven-day"``, ``"a week"`` / ``"one-week"`` / ``"week-long"`` (7); when
  the text names no length, the span of the dates (or of the reference flights). It must equal the span of the
  dates.
- **date**: every day from the earliest to the latest date the text names: ``"March 16th to March 18th, 2022"``,
  ``"March 13th, 2022 to March 15th, 2022"``, ``"between March 9th and 13th, 2022"`` (a bare ordinal takes the
  month of the nearest full date), ``"the 8th to the 10th of March, 2022"``. A date takes the first year written
  after it (else the last before it). One date alone starts a trip of ``days`` days; no date at all: the reference
  flights' first and last dates.
- **org / dest**: names are recognised from ``city_states`` (city -> state) and its states, longest name first. A
  name after a departure cue (``from``, ``departing``, ``leaving``, ``starting in``, ``beginning in``,
  ``originating from``, ``embark on our journey from``, ...) is the origin, else the first city named. A 3-day trip's
  destination is the first other city (one after ``to`` / ``visiting`` / ``heading to`` ... first); a 5- or 7-day
  trip's is the state named, preferring one after ``cities in`` / ``to`` / ``towards``, and never the origin's own
  qualifier (``"Charlotte in North Carolina"``). Names that are both a city and a state (``Washington``,
  ``New York``) play whichever role their cue gives them. With reference keys (``"Flight from A to B on DATE"``,
  ``"Self-driving from A to B"``, ``"Accommodations in X"``), the origin is the first leg's origin and the
  destination the visited city (3 days) or the one state of the visited cities (5/7 days); they win over the text.
- **visiting_city_number**: 1 for 3 days; else ``"2 cities"``, ``"three different cities"`` ... in the text, else
  the number of distinct ``"Accommodations in X"`` keys, else 2 for 5 days and 3 for 7.
- **people_number**: ``"a group of 4"`` / ``"a party of 5"``, ``"2 people"`` / ``"two individuals"`` /
  ``"2 participants"``, ``"for two"``, ``"for us 3"`` / ``"3 of us"``, ``"a pair"`` / ``"a couple"`` / ``"a duo"``
  (2), ``"solo"`` / ``"alone"`` / ``"a single person"`` / ``"an individual"`` (1); none of them: 1.
- **budget**: the dollar amount (``"$1,700"``).
- **local_constraint**, in the benchmark's vocabulary: house rule (``parties``, ``smoking``, ``children under 10``,
  ``pets``, ``visitors``: a house rule always means *allowed*, ``"do not restrict parties"`` included); cuisine
  (``Chinese``, ``American``, ``Italian``, ``Mexican``, ``Indian``, ``Mediterranean``, ``French``, in the text's
  order); room type (``not shared room`` for "non-shared" / "not shared" / "neither shared", ``shared room``,
  ``private room``, ``entire room``; an explicit private or entire room wins over "not shared"); transportation
  (``no flight`` / ``no self-driving``: a clause naming flights/flying/air travel, or self-driving/driving
  ourselves, together with a negation such as no, not, n't, avoid, without, exclude, non-).
- **level**, the way the benchmark builds its levels: ``easy`` with no local constraint, ``medium`` with one,
  ``hard`` with more (the benchmark's hard queries carry three).

Anything that cannot be read (no budget, no origin, two different trip lengths, two house rules, ...) is a
``ValueError`` that names it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from rlfactory_envs.travel.query import CONSTRAINT_KEYS
from rlfactory_tool_servers.travel.store import FLIGHT_KEY_RE

__all__ = ["CUISINES", "ReferenceKeys", "level_of", "parse_query_text", "parse_reference_keys"]

CUISINES = ("Chinese", "American", "Italian", "Mexican", "Indian", "Mediterranean", "French")
"""The cuisines the benchmark's queries ask for."""

_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                 "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_NUMBER = r"(\d{1,2}|" + "|".join(_NUMBER_WORDS) + r")"
_MONTHS = {name: index for index, name in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
     "december"), start=1)}
_MONTHS.update({name[:3]: number for name, number in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MONTH = r"(January|February|March|April|May|June|July|August|September|October|November|December|" \
         r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?"
_ORDINAL = r"(\d{1,2})(?:st|nd|rd|th)?"

_DAYS_RE = re.compile(rf"\b{_NUMBER}[- ]days?\b", re.IGNORECASE)
_WEEKS_RE = re.compile(rf"\b(a|one|{_NUMBER[1:-1]})[- ]weeks?(?:[- ]long)?\b|\bweek[- ]?long\b", re.IGNORECASE)
_MONTH_DAY_RE = re.compile(rf"\b{_MONTH}\s+{_ORDINAL}\b(?!\d)")
_DAY_OF_MONTH_RE = re.compile(rf"\bthe\s+{_ORDINAL}\s+of\s+{_MONTH}")
_BARE_ORDINAL_RE = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)\b")
_YEAR_RE = re.compile(r"\b((?:19|20)\d\d)\b")
_BUDGET_RE = re.compile(r"\$\s*(\d[\d,]*(?:\.\d+)?)")
_CITIES_RE = re.compile(rf"\b{_NUMBER}\s+(?:(?:different|distinct|unique|separate|more|other)\s+)?cities\b",
                        re.IGNORECASE)

_PEOPLE_PATTERNS = (
    re.compile(rf"\b(?:group|party|family|team) of {_NUMBER}\b", re.IGNORECASE),
    re.compile(rf"\b{_NUMBER}\s+(?:people|persons?|individuals?|travell?ers?|participants?|adults?|guests?|"
               r"friends|members)\b", re.IGNORECASE),
    re.compile(rf"\b(?:for|of|with) us {_NUMBER}\b|\b(?:the )?{_NUMBER} of us\b", re.IGNORECASE),
    re.compile(rf"\bfor (?:a |the )?{_NUMBER}\b(?![- ]*(?:days?|weeks?|nights?|cit(?:y|ies)|different|distinct|"
               r"unique|separate|months?|hours?|\$))", re.IGNORECASE),
)
_PAIR_RE = re.compile(r"\b(?:a|the|as a) (?:pair|couple|duo)\b(?! of (?:days|weeks|nights|cities|hours))",
                      re.IGNORECASE)

_HOUSE_RULES = (
    ("parties", re.compile(r"\bparties\b|\bparty[- ]friendly\b|\bhost(?:ing)? (?:a )?party\b", re.IGNORECASE)),
    ("smoking", re.compile(r"\bsmok(?:ing|ers?|e)\b", re.IGNORECASE)),
    ("children under 10", re.compile(r"\bchild(?:ren)?\b|\bkids?\b|\bchildren-friendly\b|\bchild-friendly\b",
                                     re.IGNORECASE)),
    ("pets", re.compile(r"\bpets?\b|\bpet-friendly\b", re.IGNORECASE)),
    ("visitors", re.compile(r"\bvisitors?\b|\bvisitor-friendly\b|\bguests? (?:are|is) allowed\b", re.IGNORECASE)),
)
_NOT_SHARED_RE = re.compile(r"\bnon-?shared\b|\bnot (?:be )?(?:a )?shared\b|\bneither shared\b|\bunshared\b|"
                            r"\b(?:aren't|isn't|are not|is not) shared\b", re.IGNORECASE)
_ROOM_TYPES = (
    ("private room", re.compile(r"\bprivate rooms?\b", re.IGNORECASE)),
    ("entire room", re.compile(r"\bentire (?:rooms?|homes?|apartments?|places?|units?)\b", re.IGNORECASE)),
    ("shared room", re.compile(r"\bshared rooms?\b", re.IGNORECASE)),
)
_CLAUSE_SPLIT_RE = re.compile(r"[.;!?]+(?:\s|$)|,\s+|\s+(?:and|but|so|while|whereas)\s+", re.IGNORECASE)
_NEGATION_RE = re.compile(r"\b(?:no|not|never|without|avoid|avoiding|exclude|excluding|cannot|neither|nor|"
                          r"rather than|instead of)\b|n't\b|\bnon-", re.IGNORECASE)
_FLIGHT_RE = re.compile(r"\bfl(?:y|ying|ights?)\b|\bflight-based\b|\bair ?(?:travel|plane|planes)\b|"
                        r"\bairlines?\b", re.IGNORECASE)
_DRIVING_RE = re.compile(r"self[- ]?driv\w*|\bdriv(?:e|ing)\b", re.IGNORECASE)

_ORIGIN_CUE_RE = re.compile(
    r"\b(?:from|depart\w*|leav\w*|start\w*|begin\w*|originat\w*|commenc\w*|set(?:ting)? off|tak\w* off|"
    r"initiat\w*|embark\w*)(?:\s+(?:on\s+)?(?:our|my|the)\s+(?:journey|trip|travels?))?(?:\s+(?:from|in|at|out of))?"
    r"\s+$", re.IGNORECASE)
_DESTINATION_CUE_RE = re.compile(
    r"\b(?:to|towards?|into|visit\w*|head\w* (?:to|for)|arriv\w* (?:in|at)|end\w* (?:in|at)|conclud\w* in|"
    r"explor\w*|tour\w*|cover\w*|in)\s+$", re.IGNORECASE)
_STATE_CUE_RE = re.compile(r"\bcit(?:y|ies)\s+(?:in|within|across|of|throughout)\s+(?:the state of\s+)?$",
                           re.IGNORECASE)

_ROAD_KEY_RE = re.compile(r"^(?:Self-driving|Taxi) from (.+) to (.+)$")
_PLACE_KEY_RE = re.compile(r"^(Accommodations|Attractions|Restaurants) in (.+)$")


def _number(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS[word.lower()]


def level_of(local_constraint: Mapping[str, Any]) -> str:
    """The benchmark's level for these local constraints: ``easy`` (none), ``medium`` (one), ``hard`` (more)."""
    count = sum(1 for key in CONSTRAINT_KEYS if local_constraint.get(key))
    return "easy" if count == 0 else "medium" if count == 1 else "hard"


@dataclass(frozen=True)
class ReferenceKeys:
    """What reference-information keys say about a query: the first leg's origin, the visited cities (in order),
    and the flight dates (in order)."""

    org: str | None
    cities: tuple[str, ...]
    flight_dates: tuple[str, ...]


def parse_reference_keys(keys: Sequence[str]) -> ReferenceKeys:
    """The origin, visited cities and flight dates named by reference keys such as ``"Flight from A to B on
    2022-03-16"``, ``"Self-driving from A to B"``, ``"Accommodations in X"``."""
    flights: list[tuple[str, str]] = []
    roads: list[str] = []
    places: dict[str, list[str]] = {"Accommodations": [], "Attractions": [], "Restaurants": []}
    for key in keys:
        key = str(key).strip()
        if match := FLIGHT_KEY_RE.match(key):
            flights.append((match[3], match[1].strip()))
        elif match := _ROAD_KEY_RE.match(key):
            roads.append(match[1].strip())
        elif match := _PLACE_KEY_RE.match(key):
            city = match[2].strip()
            if city not in places[match[1]]:
                places[match[1]].append(city)
    org = min(flights, key=lambda flight: flight[0])[1] if flights else (roads[0] if roads else None)
    cities = places["Accommodations"] or places["Attractions"] or places["Restaurants"]
    return ReferenceKeys(org=org, cities=tuple(city for city in cities if city != org),
                         flight_dates=tuple(sorted({flight[0] for flight in flights})))


@dataclass(frozen=True)
class _Mention:
    name: str
    start: int
    end: int
    is_city: bool
    is_state: bool


def parse_query_text(text: str, *, city_states: Mapping[str, str], reference_keys: Sequence[str] = ()) -> dict:
    """The benchmark row (org, dest, days, visiting_city_number, date, people_number, local_constraint, budget,
    query, level) that ``TravelQuery.from_dict`` accepts, read from a query's text (and its reference keys, when
    there are some); ``ValueError`` naming what could not be read. See the module's docstring for the rules."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the query text is empty")
    original, text = text.strip(), " ".join(text.split())
    reference = parse_reference_keys(reference_keys)

    days = _days(text)
    dates = _dates(text, days, reference.flight_dates)
    if days is None:
        days = len(dates)
    elif days != len(dates):
        raise ValueError(f"the query says {days} days but its dates {dates[0]} .. {dates[-1]} span {len(dates)}")

    org, dest = _places(text, days, city_states, reference)
    constraint = _local_constraint(text)
    return {"org": org, "dest": dest, "days": days, "visiting_city_number": _city_count(text, days, reference),
            "date": dates, "people_number": _people(text), "local_constraint": constraint,
            "budget": _budget(text), "query": original, "level": level_of(constraint)}


def _days(text: str) -> int | None:
    found = {_number(match[1]) for match in _DAYS_RE.finditer(text)}
    for match in _WEEKS_RE.finditer(text):
        count = match[1]
        found.add(7 * (1 if not count or count.lower() in ("a", "one") else _number(count)))
    if len(found) > 1:
        raise ValueError(f"the query names more than one trip length: {sorted(found)} days")
    return found.pop() if found else None


def _dates(text: str, days: int | None, flight_dates: Sequence[str]) -> list[str]:
    """Every day from the first to the last date of the text (or of the reference flights)."""
    full: list[tuple[int, int, int, int]] = []  # (start, end, month, day)
    for match in _MONTH_DAY_RE.finditer(text):
        full.append((match.start(), match.end(), _MONTHS[match[1].lower()], int(match[2])))
    for match in _DAY_OF_MONTH_RE.finditer(text):
        full.append((match.start(), match.end(), _MONTHS[match[2].lower()], int(match[1])))
    mentions = list(full)
    for match in _BARE_ORDINAL_RE.finditer(text):
        if any(start <= match.start() < end for start, end, _, _ in full):
            continue
        nearest = min(full, default=None, key=lambda item: min(abs(match.start() - item[1]),
                                                               abs(item[0] - match.end())))
        if nearest is not None and min(abs(match.start() - nearest[1]), abs(nearest[0] - match.end())) <= 40:
            mentions.append((match.start(), match.end(), nearest[2], int(match[1])))
    if not mentions:
        if flight_dates:
            first, last = date.fromisoformat(flight_dates[0]), date.fromisoformat(flight_dates[-1])
            return [(first + timedelta(days=offset)).isoformat() for offset in range((last - first).days + 1)]
        raise ValueError("the query names no travel dates (e.g. 'from March 16th to March 18th, 2022')")
    years = [(match.start(), int(match[1])) for match in _YEAR_RE.finditer(text)]
    if not years:
        raise ValueError("the query's dates have no year")
    found = []
    for start, _, month, day in mentions:
        after = [year for position, year in years if position >= start]
        year = after[0] if after else years[-1][1]
        try:
            found.append(date(year, month, day))
        except ValueError:
            raise ValueError(f"the query names an impossible date: {year}-{month:02d}-{day:02d}") from None
    first, last = min(found), max(found)
    if first == last:
        if days is None:
            raise ValueError(f"the query names one date ({first}) and no trip length")
        last = first + timedelta(days=days - 1)
    return [(first + timedelta(days=offset)).isoformat() for offset in range((last - first).days + 1)]


@functools.lru_cache(maxsize=8)
def _names_pattern(names: frozenset[str]) -> re.Pattern[str]:
    """Any of ``names`` as a whole word, the longest first (``Kansas City`` before ``Kansas``)."""
    ordered = sorted(names, key=lambda name: (-len(name), name))
    return re.compile(r"(?<![\w'])(" + "|".join(re.escape(name) for name in ordered) + r")(?![\w'])")


def _mentions(text: str, city_states: Mapping[str, str]) -> list[_Mention]:
    states = set(city_states.values())
    names = frozenset(set(city_states) | states)
    if not names:
        raise ValueError("no city names to recognise the origin and destination with (city_states is empty)")
    pattern = _names_pattern(names)
    return [_Mention(match[1], match.start(), match.end(), match[1] in city_states, match[1] in states)
            for match in pattern.finditer(text)]


def _places(text: str, days: int, city_states: Mapping[str, str], reference: ReferenceKeys) -> tuple[str, str]:
    mentions = _mentions(text, city_states)
    cities = [m for m in mentions if m.is_city]

    def cued(mention: _Mention, cue: re.Pattern[str]) -> bool:
        return bool(cue.search(text[max(0, mention.start - 60):mention.start]))

    origin_mention = next((m for m in cities if cued(m, _ORIGIN_CUE_RE)), cities[0] if cities else None)
    org = reference.org or (origin_mention.name if origin_mention else None)
    if not org:
        raise ValueError("the query names no origin city known to the sandbox")
    if origin_mention is not None and origin_mention.name != org:
        origin_mention = next((m for m in cities if m.name == org), None)

    if days <= 3:
        if reference.cities:
            return org, reference.cities[0]
        others = [m for m in cities if m.name != org]
        chosen = next((m for m in others if cued(m, _DESTINATION_CUE_RE)), others[0] if others else None)
        if chosen is None:
            raise ValueError(f"the query names no destination city known to the sandbox besides {org!r}")
        return org, chosen.name

    if reference.cities:
        visited_states = {city_states.get(city) for city in reference.cities}
        if len(visited_states) == 1 and None not in visited_states:
            return org, visited_states.pop()  # type: ignore[return-value]
    candidates = []
    for mention in mentions:
        if not mention.is_state or mention is origin_mention:
            continue
        if origin_mention is not None and mention.start > origin_mention.end \
                and re.fullmatch(r"\s*(?:,|in|in the state of)\s*", text[origin_mention.end:mention.start]):
            continue  # "Charlotte in North Carolina": the origin's own state
        if mention.name == org and origin_mention is None:
            continue
        candidates.append(mention)
    if not candidates:
        raise ValueError(f"a {days}-day query must name the destination state; none known to the sandbox found")
    for cue in (_STATE_CUE_RE, _DESTINATION_CUE_RE):
        preferred = {m.name for m in candidates if cued(m, cue)}
        if len(preferred) == 1:
            return org, preferred.pop()
    names = list(dict.fromkeys(m.name for m in candidates))
    if len(names) > 1:
        raise ValueError(f"the query names several destination states: {', '.join(names)}")
    return org, names[0]


def _city_count(text: str, days: int, reference: ReferenceKeys) -> int:
    if days <= 3:
        return 1
    found = {_number(match[1]) for match in _CITIES_RE.finditer(text)}
    if len(found) > 1:
        raise ValueError(f"the query names more than one number of cities: {sorted(found)}")
    if found:
        return found.pop()
    if reference.cities:
        return len(reference.cities)
    return 2 if days <= 5 else 3


def _people(text: str) -> int:
    for pattern in _PEOPLE_PATTERNS:
        found = {_number(next(group for group in match.groups() if group)) for match in pattern.finditer(text)}
        if len(found) > 1:
            raise ValueError(f"the query names more than one group size: {sorted(found)}")
        if found:
            return found.pop()
    if _PAIR_RE.search(text):
        return 2
    return 1  # "solo", "alone", "a single person" ... or nobody named: the benchmark's default of one traveller


def _budget(text: str) -> int | float:
    found = {float(match[1].replace(",", "")) for match in _BUDGET_RE.finditer(text)}
    if not found:
        raise ValueError("the query names no budget (a dollar amount such as '$1,700')")
    if len(found) > 1:
        raise ValueError(f"the query names more than one dollar amount: {sorted(found)}")
    budget = found.pop()
    return int(budget) if budget.is_integer() else budget


def _local_constraint(text: str) -> dict[str, Any]:
    rules = [rule for rule, pattern in _HOUSE_RULES if pattern.search(text)]
    if len(rules) > 1:
        raise ValueError(f"the query names more than one house rule: {', '.join(rules)}")

    cuisines = sorted({name: match.start() for name in CUISINES if (match := re.search(rf"\b{name}\b", text))}.items(),
                      key=lambda item: item[1])

    room_types = [room for room, pattern in _ROOM_TYPES if pattern.search(text)]
    if _NOT_SHARED_RE.search(text):
        room_types = [room for room in room_types if room != "shared room"] or ["not shared room"]
    if len(room_types) > 1:
        raise ValueError(f"the query names more than one room type: {', '.join(room_types)}")

    transportation = []
    for clause in _CLAUSE_SPLIT_RE.split(text):
        if not _NEGATION_RE.search(clause):
            continue
        if _FLIGHT_RE.search(clause) and "no flight" not in transportation:
            transportation.append("no flight")
        if _DRIVING_RE.search(clause) and "no self-driving" not in transportation:
            transportation.append("no self-driving")
    if len(transportation) > 1:
        raise ValueError("the query rules out both flights and self-driving")

    return {"house rule": rules[0] if rules else None,
            "cuisine": [name for name, _ in cuisines] or None,
            "room type": room_types[0] if room_types else None,
            "transportation": transportation[0] if transportation else None}
