"""TravelPlanner's sandbox tools, written once (see ``server`` for what each answers and how it departs from
upstream). Each method checks its arguments (``ToolError`` with a message the model can act on), answers from the
sandbox and records the answer as its episode's most recent result, which ``notebook_write`` stores; an error is
not recorded, and neither are the notebook's own answers (writing a notebook read back into it would nest copies).
The sandbox is read-only, so answers are memoized and equal lookups share one string."""

from __future__ import annotations

import datetime
import functools
import re
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from rlfactory_tool_servers.toolset import DEFAULT_EPISODE, READ_ONLY, Episode, Toolset, tool
from rlfactory_tool_servers.travel.formatting import format_table
from rlfactory_tool_servers.travel.names import before_parenthesis
from rlfactory_tool_servers.travel.notebook import NotebookError, NotebookLimits, Notebooks
from rlfactory_tool_servers.travel.store import (
    ACCOMMODATIONS, ATTRACTIONS, FLIGHTS, RESTAURANTS, ROUTE_MODES, TravelSandbox, route_cost)

MAX_ARGUMENT_CHARS = 200
ANSWER_CACHE_SIZE = 4096
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

NO_FLIGHT_TEXT = "There is no flight from {origin} to {destination} on {date}."
NO_ROUTE_TEXT = "{mode}, from {origin} to {destination}, no valid information."
INVALID_ROUTE_TEXT = "No valid information."
ROUTE_TEXT = "{mode}, from {origin} to {destination}, duration: {duration}, distance: {distance}, cost: {cost}"
NO_ACCOMMODATION_TEXT = "There is no accommodation in this city."
NO_RESTAURANT_TEXT = "There is no restaurant in this city."
NO_ATTRACTION_TEXT = "There is no attraction in this city."
NOTEBOOK_WRITE_TEXT = "The information has been recorded in Notebook, and its index is {index}."


def _argument(name: str, value: str) -> str:
    """``value`` stripped of surrounding spaces, or ``ToolError`` when it is empty or too long."""
    if not isinstance(value, str):
        raise ToolError(f"{name} must be a string")
    if len(value) > MAX_ARGUMENT_CHARS:
        raise ToolError(f"{name} is {len(value)} characters long; the limit is {MAX_ARGUMENT_CHARS}")
    value = value.strip()
    if not value:
        raise ToolError(f"{name} must not be empty")
    return value


def _city(name: str, value: str) -> str:
    city = before_parenthesis(_argument(name, value)).strip()
    if not city:
        raise ToolError(f"{name} must be a city name, e.g. Buffalo (got {value.strip()!r})")
    return city


def _date(value: str) -> str:
    date = _argument("date", value)
    try:
        if not _DATE_RE.match(date):
            raise ValueError
        datetime.date.fromisoformat(date)
    except ValueError:
        raise ToolError(f"date must be a day in YYYY-MM-DD format, e.g. 2022-03-16; got {date!r}") from None
    return date


ENV_TOOLS = ("notebook_close",)
"""The tools an env calls itself and hides from the model."""

NOTEBOOK_CHANGE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
"""The notebook tools change the episode's own notebook only."""


class TravelTools(Toolset):
    """The eight tools over a sandbox, with a notebook per episode."""

    annotations = READ_ONLY  # the lookups (the notebook's tools say otherwise)

    def __init__(self, sandbox: TravelSandbox, notebook_limits: NotebookLimits = NotebookLimits()) -> None:
        self.sandbox = sandbox
        self.notebooks = Notebooks(notebook_limits)
        self._answer = functools.lru_cache(maxsize=ANSWER_CACHE_SIZE)(self._lookup)

    def description_values(self) -> Mapping[str, Any]:
        return asdict(self.notebooks.limits)

    @tool
    def search_flights(self, origin: str, destination: str, date: str, episode: Episode = DEFAULT_EPISODE) -> str:
        """Search the flights from one city to another on a date. Returns a table (a header line, then one flight
        per line, cells separated by ` | `) with the columns Flight Number, Price, DepTime, ArrTime,
        ActualElapsedTime, FlightDate, OriginCityName, DestCityName, Distance; or a line saying there is no such
        flight. `date` is YYYY-MM-DD, e.g. 2022-03-16. Example: search_flights("New York", "London", "2022-10-01")."""
        origin, destination, date = _city("origin", origin), _city("destination", destination), _date(date)
        return self._answered(episode, self._answer("flights", origin, destination, date))

    @tool
    def distance_matrix(self, origin: str, destination: str, mode: str = "self-driving",
                        episode: Episode = DEFAULT_EPISODE) -> str:
        """Estimate the duration, distance and cost of travelling between two cities by road. `mode` is
        "self-driving" or "taxi". Answers `<mode>, from <origin> to <destination>, duration: ..., distance: ...,
        cost: ...`, or says there is no valid information. Example: distance_matrix("Paris", "Lyon",
        "self-driving")."""
        origin, destination = _city("origin", origin), _city("destination", destination)
        mode = _argument("mode", mode).lower()
        if mode not in ROUTE_MODES:
            raise ToolError(f"mode must be \"self-driving\" or \"taxi\", got {mode!r}")
        return self._answered(episode, self._answer("route", origin, destination, mode))

    @tool
    def search_accommodations(self, city: str, episode: Episode = DEFAULT_EPISODE) -> str:
        """Find the accommodations in a city. Returns a table (a header line, then one accommodation per line, cells
        separated by ` | `) with the columns NAME, price, room type, house_rules, minimum nights, maximum
        occupancy, review rate number, city. Example: search_accommodations("Rome")."""
        return self._answered(episode, self._answer("accommodations", _city("city", city)))

    @tool
    def search_restaurants(self, city: str, episode: Episode = DEFAULT_EPISODE) -> str:
        """Find the restaurants in a city. Returns a table (a header line, then one restaurant per line, cells
        separated by ` | `) with the columns Name, Average Cost, Cuisines, Aggregate Rating, City. Example:
        search_restaurants("Tokyo")."""
        return self._answered(episode, self._answer("restaurants", _city("city", city)))

    @tool
    def search_attractions(self, city: str, episode: Episode = DEFAULT_EPISODE) -> str:
        """Find the attractions in a city. Returns a table (a header line, then one attraction per line, cells
        separated by ` | `) with the columns Name, Latitude, Longitude, Address, Phone, Website, City. Example:
        search_attractions("London")."""
        return self._answered(episode, self._answer("attractions", _city("city", city)))

    @tool
    def search_cities(self, state: str, episode: Episode = DEFAULT_EPISODE) -> str:
        """Find the cities of a state (write the state's full name). Example: search_cities("California") lists the
        cities in California."""
        state = _argument("state", state)
        cities = self.sandbox.cities(state)
        if cities is None:
            states = ", ".join(sorted(self.sandbox.state_cities))
            raise ToolError(f"{state!r} is not a state in the sandbox (write the state's full name); its states are: "
                            f"{states}")
        return self._answered(episode, f"The cities in {state}: {', '.join(cities)}.")

    @tool(annotations=NOTEBOOK_CHANGE)
    def notebook_write(self, description: str, episode: Episode = DEFAULT_EPISODE) -> str:
        """Record the result of your most recent search (search_flights, distance_matrix, search_accommodations,
        search_restaurants, search_attractions or search_cities) in the Notebook under a short description, and get
        its index. Use it right after each search whose information you need: the Notebook is what the plan is made
        from. Example: notebook_write("Flights from Rome to Paris on 2022-02-01"). At most {max_entries} entries; a
        description has at most {max_description_chars} characters."""
        description = _argument("description", description)
        try:
            index = self.notebooks.write(episode, description)
        except NotebookError as exc:
            raise ToolError(str(exc)) from None
        return NOTEBOOK_WRITE_TEXT.format(index=index)

    @tool
    def notebook_read(self, episode: Episode = DEFAULT_EPISODE) -> str:
        """Read every entry of the Notebook: its index, its Short Description and its Content."""
        return self.notebooks.read(episode)

    @tool(annotations=NOTEBOOK_CHANGE)
    def notebook_close(self, episode: Episode = DEFAULT_EPISODE) -> str:
        """Drop this episode's Notebook (the env calls it when the episode ends)."""
        return "closed" if self.notebooks.close(episode) else "no notebook"

    def _answered(self, episode: str, text: str) -> str:
        self.notebooks.record(episode, text)
        return text

    def _lookup(self, kind: str, *arguments: str) -> str:
        """The answer text of one lookup (memoized in ``_answer``: the sandbox never changes)."""
        sandbox = self.sandbox
        if kind == "flights":
            origin, destination, date = arguments
            rows = sandbox.flights(origin, destination, date)
            if not rows:
                return NO_FLIGHT_TEXT.format(origin=origin, destination=destination, date=date)
            return format_table(FLIGHTS.columns, rows)
        if kind == "route":
            origin, destination, mode = arguments
            route = sandbox.route(origin, destination)
            if route is None:
                return NO_ROUTE_TEXT.format(mode=mode, origin=origin, destination=destination)
            cost = route_cost(route, mode)
            if cost is None:
                return INVALID_ROUTE_TEXT
            return ROUTE_TEXT.format(mode=mode, origin=origin, destination=destination, duration=route["duration"],
                                     distance=route["distance"], cost=cost)
        (city,) = arguments
        table, lookup, none_text = {
            "accommodations": (ACCOMMODATIONS, sandbox.accommodations, NO_ACCOMMODATION_TEXT),
            "restaurants": (RESTAURANTS, sandbox.restaurants, NO_RESTAURANT_TEXT),
            "attractions": (ATTRACTIONS, sandbox.attractions, NO_ATTRACTION_TEXT),
        }[kind]
        rows = lookup(city)
        return format_table(table.columns, rows) if rows else none_text
