"""TravelPlanner's sandbox tools over its database, as an MCP server.

Tools (each with a batched form ``NAME_batch`` that the toolbox uses to merge concurrent calls), named after and
answering like TravelPlanner's own:

- ``search_flights(origin, destination, date)`` (FlightSearch): the flights of that day, as a table;
- ``distance_matrix(origin, destination, mode)`` (GoogleDistanceMatrix): duration, distance and cost of driving
  (``self-driving``, 0.05 per km) or a ``taxi`` (1 per km), the rule of ``travel_sandbox.store.route_cost``;
- ``search_accommodations(city)``, ``search_restaurants(city)``, ``search_attractions(city)``: every row of the
  city, as a table with the upstream columns;
- ``search_cities(state)`` (CitySearch): the cities of a state;
- ``notebook_write(description)`` (NotebookWrite): store the most recent result of the tools above under a short
  description; ``notebook_read()``: every entry (what upstream hands its Planner).

Differences from upstream, all in what a model reads: tables are compact text (``formatting``), not pandas'; the
accommodation tool says "There is no accommodation in this city." where upstream's says "attraction" by mistake;
cities, flights' included, go through ``before_parenthesis`` ("Buffalo(New York)" is Buffalo) and
arguments are stripped of surrounding spaces; an unknown mode, state or malformed date is an error.

Every tool takes a ``session`` (default ``"default"``): an env binds it to an id per episode and hides it from the
model, so each episode has its own notebook (``notebook``). A tool's answer becomes its session's most recent
result (an error does not), except the notebook's own tools: writing a notebook read back into it would nest
copies. The sandbox is read-only, so answers are memoized and equal lookups share one string.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import re
from collections.abc import Sequence
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from rlfactory_tool_servers.batched_tool import add_batched_tool
from rlfactory_tool_servers.travel.formatting import format_table
from rlfactory_tool_servers.travel.notebook import NotebookError, NotebookLimits, Notebooks
from rlfactory_tool_servers.travel.names import before_parenthesis
from rlfactory_tool_servers.travel.store import (
    ACCOMMODATIONS, ATTRACTIONS, FLIGHTS, RESTAURANTS, ROUTE_MODES, TravelSandbox, open_sandbox, route_cost)

__all__ = ["DEFAULT_SESSION", "MAX_ARGUMENT_CHARS", "TravelService", "build_server", "create_server", "describe_data",
           "options_parser"]

PROG = "python -m rlfactory_tool_servers.travel"

DEFAULT_SESSION = "default"
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

SEARCH_FLIGHTS_DESCRIPTION = """\
Search the flights from one city to another on a date. Returns a table (a header line, then one flight per line, \
cells separated by ` | `) with the columns Flight Number, Price, DepTime, ArrTime, ActualElapsedTime, FlightDate, \
OriginCityName, DestCityName, Distance; or a line saying there is no such flight. `date` is YYYY-MM-DD, e.g. \
2022-03-16. Example: search_flights("New York", "London", "2022-10-01")."""

DISTANCE_MATRIX_DESCRIPTION = """\
Estimate the duration, distance and cost of travelling between two cities by road. `mode` is "self-driving" or \
"taxi". Answers `<mode>, from <origin> to <destination>, duration: ..., distance: ..., cost: ...`, or says there \
is no valid information. Example: distance_matrix("Paris", "Lyon", "self-driving")."""

SEARCH_ACCOMMODATIONS_DESCRIPTION = """\
Find the accommodations in a city. Returns a table (a header line, then one accommodation per line, cells \
separated by ` | `) with the columns NAME, price, room type, house_rules, minimum nights, maximum occupancy, \
review rate number, city. Example: search_accommodations("Rome")."""

SEARCH_RESTAURANTS_DESCRIPTION = """\
Find the restaurants in a city. Returns a table (a header line, then one restaurant per line, cells separated by \
` | `) with the columns Name, Average Cost, Cuisines, Aggregate Rating, City. Example: \
search_restaurants("Tokyo")."""

SEARCH_ATTRACTIONS_DESCRIPTION = """\
Find the attractions in a city. Returns a table (a header line, then one attraction per line, cells separated by \
` | `) with the columns Name, Latitude, Longitude, Address, Phone, Website, City. Example: \
search_attractions("London")."""

SEARCH_CITIES_DESCRIPTION = """\
Find the cities of a state (write the state's full name). Example: search_cities("California") lists the cities \
in California."""

NOTEBOOK_WRITE_DESCRIPTION = """\
Record the result of your most recent search (search_flights, distance_matrix, search_accommodations, \
search_restaurants, search_attractions or search_cities) in the Notebook under a short description, and get its \
index. Use it right after each search whose information you need: the Notebook is what the plan is made from. \
Example: notebook_write("Flights from Rome to Paris on 2022-02-01"). At most {max_entries} entries; a \
description has at most {max_description_chars} characters."""

NOTEBOOK_READ_DESCRIPTION = """\
Read every entry of the Notebook: its index, its Short Description and its Content."""


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


class TravelService:
    """The tools' logic, with no MCP in it: each method checks its arguments (``ToolError`` with a message the
    model can act on), answers from the sandbox and records the answer as its session's most recent result."""

    def __init__(self, sandbox: TravelSandbox, notebook_limits: NotebookLimits = NotebookLimits()) -> None:
        self.sandbox = sandbox
        self.notebooks = Notebooks(notebook_limits)
        self._answer = functools.lru_cache(maxsize=ANSWER_CACHE_SIZE)(self._lookup)

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

    def _answered(self, session: str, text: str) -> str:
        self.notebooks.record(session, text)
        return text

    def search_flights(self, origin: str, destination: str, date: str, session: str = DEFAULT_SESSION) -> str:
        origin, destination, date = _city("origin", origin), _city("destination", destination), _date(date)
        session = _argument("session", session)
        return self._answered(session, self._answer("flights", origin, destination, date))

    def distance_matrix(self, origin: str, destination: str, mode: str = "self-driving",
                        session: str = DEFAULT_SESSION) -> str:
        origin, destination = _city("origin", origin), _city("destination", destination)
        mode = _argument("mode", mode).lower()
        if mode not in ROUTE_MODES:
            raise ToolError(f"mode must be \"self-driving\" or \"taxi\", got {mode!r}")
        session = _argument("session", session)
        return self._answered(session, self._answer("route", origin, destination, mode))

    def _city_search(self, kind: str, city: str, session: str) -> str:
        city = _city("city", city)
        session = _argument("session", session)
        return self._answered(session, self._answer(kind, city))

    def search_accommodations(self, city: str, session: str = DEFAULT_SESSION) -> str:
        return self._city_search("accommodations", city, session)

    def search_restaurants(self, city: str, session: str = DEFAULT_SESSION) -> str:
        return self._city_search("restaurants", city, session)

    def search_attractions(self, city: str, session: str = DEFAULT_SESSION) -> str:
        return self._city_search("attractions", city, session)

    def search_cities(self, state: str, session: str = DEFAULT_SESSION) -> str:
        state = _argument("state", state)
        session = _argument("session", session)
        cities = self.sandbox.cities(state)
        if cities is None:
            states = ", ".join(sorted(self.sandbox.state_cities))
            raise ToolError(f"{state!r} is not a state in the sandbox (write the state's full name); its states are: "
                            f"{states}")
        return self._answered(session, f"The cities in {state}: {', '.join(cities)}.")

    def notebook_write(self, description: str, session: str = DEFAULT_SESSION) -> str:
        description = _argument("description", description)
        session = _argument("session", session)
        try:
            index = self.notebooks.write(session, description)
        except NotebookError as exc:
            raise ToolError(str(exc)) from None
        return NOTEBOOK_WRITE_TEXT.format(index=index)

    def notebook_read(self, session: str = DEFAULT_SESSION) -> str:
        return self.notebooks.read(_argument("session", session))


def create_server(service: TravelService) -> MCPServer:
    """An MCP server named "travel" publishing the eight tools and their batched forms for ``service``."""
    limits = service.notebooks.limits

    async def search_flights(origin: str, destination: str, date: str, session: str = DEFAULT_SESSION) -> str:
        return service.search_flights(origin, destination, date, session)

    async def distance_matrix(origin: str, destination: str, mode: str = "self-driving",
                              session: str = DEFAULT_SESSION) -> str:
        return service.distance_matrix(origin, destination, mode, session)

    async def search_accommodations(city: str, session: str = DEFAULT_SESSION) -> str:
        return service.search_accommodations(city, session)

    async def search_restaurants(city: str, session: str = DEFAULT_SESSION) -> str:
        return service.search_restaurants(city, session)

    async def search_attractions(city: str, session: str = DEFAULT_SESSION) -> str:
        return service.search_attractions(city, session)

    async def search_cities(state: str, session: str = DEFAULT_SESSION) -> str:
        return service.search_cities(state, session)

    async def notebook_write(description: str, session: str = DEFAULT_SESSION) -> str:
        return service.notebook_write(description, session)

    async def notebook_read(session: str = DEFAULT_SESSION) -> str:
        return service.notebook_read(session)

    search_flights.__doc__ = SEARCH_FLIGHTS_DESCRIPTION
    distance_matrix.__doc__ = DISTANCE_MATRIX_DESCRIPTION
    search_accommodations.__doc__ = SEARCH_ACCOMMODATIONS_DESCRIPTION
    search_restaurants.__doc__ = SEARCH_RESTAURANTS_DESCRIPTION
    search_attractions.__doc__ = SEARCH_ATTRACTIONS_DESCRIPTION
    search_cities.__doc__ = SEARCH_CITIES_DESCRIPTION
    notebook_write.__doc__ = NOTEBOOK_WRITE_DESCRIPTION.format(max_entries=limits.max_entries,
                                                               max_description_chars=limits.max_description_chars)
    notebook_read.__doc__ = NOTEBOOK_READ_DESCRIPTION
    server = MCPServer("travel", log_level="WARNING")
    for fn in (search_flights, distance_matrix, search_accommodations, search_restaurants, search_attractions,
               search_cities, notebook_write, notebook_read):
        add_batched_tool(server, fn, name=fn.__name__, description=fn.__doc__)
    return server


def options_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The travel server's own options (the transport options are ``rlfactory_tool_servers.launch``'s)."""
    parser = argparse.ArgumentParser(prog=prog, description="MCP server: TravelPlanner's sandbox tools and notebook.")
    parser.add_argument("--database-dir", required=True, type=Path,
                        help="TravelPlanner's database/ folder (accommodations/, attractions/, restaurants/, "
                             "googleDistanceMatrix/, background/, and flights/ when you have it)")
    parser.add_argument("--flights-path", type=Path, default=None,
                        help="the flights: clean_Flights_2022.csv or a reference-information JSONL such as "
                             "train_ref_info.jsonl (default: <database-dir>/flights/clean_Flights_2022.csv if there)")
    return parser


def parse_options(argv: Sequence[str], prog: str = PROG) -> argparse.Namespace:
    """Parse and check the options; a bad one exits with a usage error, like argparse does."""
    parser = options_parser(prog)
    options = parser.parse_args(list(argv))
    if not options.database_dir.is_dir():
        parser.error(f"--database-dir {options.database_dir}: no such directory")
    if options.flights_path is not None and not options.flights_path.is_file():
        parser.error(f"--flights-path {options.flights_path}: no such file")
    return options


def describe_data(options: argparse.Namespace) -> str:
    """The sandbox ``options`` name, for the start message."""
    flights = f", flights from {options.flights_path}" if options.flights_path is not None else ""
    return f"the TravelPlanner sandbox in {options.database_dir}{flights}"


def build_server(argv: Sequence[str], prog: str = PROG) -> MCPServer:
    """Parse the options, load the sandbox and build the server."""
    options = parse_options(argv, prog)
    try:
        sandbox = open_sandbox(options.database_dir, options.flights_path)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"{prog}: {exc}") from None
    return create_server(TravelService(sandbox))
