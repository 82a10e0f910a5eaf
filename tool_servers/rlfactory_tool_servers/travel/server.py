"""TravelPlanner's sandbox tools over its database, as an MCP server.

Tools (each with a batched form ``NAME_batch`` that the toolbox uses to merge concurrent calls), named after and
answering like TravelPlanner's own:

- ``search_flights(origin, destination, date)`` (FlightSearch): the flights of that day, as a table;
- ``distance_matrix(origin, destination, mode)`` (GoogleDistanceMatrix): duration, distance and cost of driving
  (``self-driving``, 0.05 per km) or a ``taxi`` (1 per km), the rule of ``store.route_cost``;
- ``search_accommodations(city)``, ``search_restaurants(city)``, ``search_attractions(city)``: every row of the
  city, as a table with the upstream columns;
- ``search_cities(state)`` (CitySearch): the cities of a state;
- ``notebook_write(description)`` (NotebookWrite): store the most recent result of the tools above under a short
  description; ``notebook_read()``: every entry (what upstream hands its Planner).

Differences from upstream, all in what a model reads: tables are compact text (``formatting``), not pandas'; the
accommodation tool says "There is no accommodation in this city." where upstream's says "attraction" by mistake;
cities, flights' included, go through ``before_parenthesis`` ("Buffalo(New York)" is Buffalo) and
arguments are stripped of surrounding spaces; an unknown mode, state or malformed date is an error.

The episode a call belongs to comes in the request's ``_meta`` (``toolset.Episode``), never as an argument, so each
episode has its own notebook (``notebook``); a call without one shares the ``"default"`` notebook. The tools are
written once, in ``tools``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from mcp.server.mcpserver import MCPServer

from rlfactory_tool_servers.toolset import publish_toolsets
from rlfactory_tool_servers.travel.store import open_sandbox
from rlfactory_tool_servers.travel.tools import TravelTools

__all__ = ["TravelTools", "build_server", "create_server", "describe_data", "options_parser"]

PROG = "python -m rlfactory_tool_servers.travel"


def create_server(tools: TravelTools) -> MCPServer:
    """An MCP server named "travel" publishing the eight tools and their batched forms for ``tools``."""
    return publish_toolsets("travel", [tools])



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
    return create_server(TravelTools(sandbox))
