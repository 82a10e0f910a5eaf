"""The travel tool server: TravelPlanner's sandbox tools and notebook through a real MCP client, over a tiny sandbox
in the upstream layout, the cost rule, the notebook per episode and its bounds, the batched forms, a real stdio
subprocess, and the real database when it is there."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.server.mcpserver.exceptions import ToolError

from rlfactory_tool_servers import wire
from rlfactory_tool_servers.travel.formatting import format_cell, format_table
from rlfactory_tool_servers.travel.notebook import NotebookLimits
from rlfactory_tool_servers.travel.server import TravelTools, build_server, create_server
from rlfactory_tool_servers.travel.names import before_parenthesis
from rlfactory_tool_servers.travel.store import open_sandbox, route_cost
from tests.conftest import REPO_ROOT, shared_file

TOOLS = ("search_flights", "distance_matrix", "search_accommodations", "search_restaurants", "search_attractions",
         "search_cities", "notebook_write", "notebook_read", "notebook_close")

FILES = {
    "accommodations/clean_accommodations_2022.csv": [
        ["", "NAME", "room type", "price", "minimum nights", "review rate number", "house_rules", "maximum occupancy",
         "city"],
        ["0", "Cozy Loft", "Private room", "120.0", "1.0", "4.0", "No smoking", "2", "Rockford"],
        ["1", "Sonder | Riverside", "Entire home/apt", "310.0", "2.0", "5.0", "No parties & No pets", "4", "Rockford"],
        ["2", "Lake House", "Entire home/apt", "500.0", "3.0", "3.0", "No visitors", "6", "Buffalo"],
        ["3", "No Price Yet", "Private room", "", "1.0", "4.0", "No smoking", "2", "Rockford"],  # dropna drops it
    ],
    "attractions/attractions.csv": [
        ["Name", "Latitude", "Longitude", "Address", "Phone", "Website", "City"],
        ["Burpee Museum", "42.2773242", "-89.0881425", "737 N Main St, Rockford, IL 61103, USA", "(815) 965-3433",
         "http://www.burpee.org/", "Rockford"],
        ["Niagara Falls State Park", "43.0828", "-79.0742", "332 Prospect St, Niagara Falls, NY 14303, USA",
         "(716) 278-1794", "https://parks.ny.gov/", "Buffalo"],
    ],
    "restaurants/clean_restaurant_2022.csv": [
        ["", "Name", "City", "Cuisines", "Average Cost", "Aggregate Rating"],
        ["0", "Coco Bambu", "Rockford", "Tea, French, Bakery", "72", "4.9"],
        ["1", "Anchor Bar", "Buffalo", "American, Pizza", "35", "4.2"],
        ["2", "Flying Mango", "Rockford", "American, BBQ", "20", "4.5"],
    ],
    "googleDistanceMatrix/distance.csv": [
        ["origin", "destination", "cost", "duration", "distance"],
        ["Buffalo", "Rockford", "", "9 hours 30 mins", "1,020 km"],
        ["Rockford", "Chicago", "", "1 hour 25 mins", "139 km"],
        ["Buffalo", "Denver", "", "1 day 2 hours", "2,400 km"],
        ["Killeen", "Mission", "", "", ""],
    ],
    "flights/clean_Flights_2022.csv": [
        ["Flight Number", "Price", "DepTime", "ArrTime", "ActualElapsedTime", "FlightDate", "OriginCityName",
         "DestCityName", "Distance"],
        ["F0000001", "474", "15:40", "17:04", "2 hours 24 minutes", "2022-03-16", "Buffalo", "Rockford", "1049.0"],
        ["F0000002", "310", "08:05", "09:30", "2 hours 25 minutes", "2022-03-17", "Buffalo", "Rockford", "1049.0"],
        ["F0000003", "298", "06:10", "07:31", "2 hours 21 minutes", "2022-03-16", "Buffalo", "Rockford", "1049.0"],
        ["F0000004", "351", "19:00", "22:43", "2 hours 43 minutes", "2022-03-18", "Rockford", "Buffalo", "1049.0"],
    ],
}
CITIES = "Rockford\tIllinois\nChicago\tIllinois\nBuffalo\tNew York\n"

FLIGHTS_HEADER = ("Flight Number | Price | DepTime | ArrTime | ActualElapsedTime | FlightDate | OriginCityName | "
                  "DestCityName | Distance")


def write_sandbox(root: Path) -> Path:
    for relative, rows in FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows(rows)
    (root / "background").mkdir()
    (root / "background" / "citySet_with_states.txt").write_text(CITIES, encoding="utf-8")
    return root


@pytest.fixture
def database_dir(tmp_path: Path) -> Path:
    return write_sandbox(tmp_path / "database")


@pytest.fixture
def service(database_dir: Path) -> TravelTools:
    return TravelTools(open_sandbox(database_dir))


def text(result) -> str:
    return result.content[0].text


async def call(service: TravelTools, name: str, **arguments) -> str:
    async with Client(create_server(service)) as client:
        result = await client.call_tool(name, arguments)
    assert not result.is_error, text(result)
    return text(result)


# --- the tools -------------------------------------------------------------------------------------------------

async def test_tools_and_their_batched_forms_are_listed(service):
    async with Client(create_server(service)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools(meta={wire.SHOW_BATCH_FORMS: True})).tools}
    assert set(tools) == set(TOOLS) | {f"{name}_batch" for name in TOOLS}
    for name in TOOLS:
        assert tools[f"{name}_batch"].meta == {wire.BATCH_OF: name}
        assert "session" not in tools[name].input_schema["properties"]  # the episode comes in _meta
        assert tools[name].meta == {wire.EPISODE_STATE: True}
        assert tools[name].description
    assert tools["search_flights"].input_schema["required"] == ["origin", "destination", "date"]
    assert tools["distance_matrix"].input_schema["required"] == ["origin", "destination"]
    assert "YYYY-MM-DD" in tools["search_flights"].description
    assert "At most 64 entries" in tools["notebook_write"].description


async def test_search_flights(service):
    async with Client(create_server(service)) as client:
        found = text(await client.call_tool("search_flights", {"origin": "Buffalo", "destination": "Rockford",
                                                               "date": "2022-03-16"}))
        none = text(await client.call_tool("search_flights", {"origin": "Rockford", "destination": "Buffalo",
                                                              "date": "2022-03-16"}))
        parenthesised = text(await client.call_tool("search_flights", {"origin": " Buffalo(New York)",
                                                                       "destination": "Rockford",
                                                                       "date": "2022-03-17"}))
    assert found.splitlines() == [
        FLIGHTS_HEADER,
        "F0000001 | 474 | 15:40 | 17:04 | 2 hours 24 minutes | 2022-03-16 | Buffalo | Rockford | 1049.0",
        "F0000003 | 298 | 06:10 | 07:31 | 2 hours 21 minutes | 2022-03-16 | Buffalo | Rockford | 1049.0",
    ]
    assert none == "There is no flight from Rockford to Buffalo on 2022-03-16."
    assert parenthesised.splitlines()[1].startswith("F0000002 | 310 |")


@pytest.mark.parametrize("date", ["03/16/2022", "2022-3-16", "2022-02-30", "2022-03-16T10:00", "tomorrow"])
async def test_a_malformed_date_is_an_error(service, date):
    async with Client(create_server(service)) as client:
        result = await client.call_tool("search_flights", {"origin": "Buffalo", "destination": "Rockford",
                                                           "date": date})
    assert result.is_error and "YYYY-MM-DD" in text(result), text(result)


async def test_distance_matrix_answers_as_upstream(service):
    async with Client(create_server(service)) as client:
        async def ask(origin, destination, mode="self-driving"):
            result = await client.call_tool("distance_matrix", {"origin": origin, "destination": destination,
                                                                "mode": mode})
            return result.is_error, text(result)

        assert await ask("Buffalo", "Rockford") == (
            False, "self-driving, from Buffalo to Rockford, duration: 9 hours 30 mins, distance: 1,020 km, cost: 51")
        assert await ask("Buffalo(New York)", "Rockford(Illinois)", "taxi") == (
            False, "taxi, from Buffalo to Rockford, duration: 9 hours 30 mins, distance: 1,020 km, cost: 1020")
        assert await ask("Rockford", "Chicago") == (
            False, "self-driving, from Rockford to Chicago, duration: 1 hour 25 mins, distance: 139 km, cost: 6")
        assert await ask("Rockford", "Chicago", "taxi") == (
            False, "taxi, from Rockford to Chicago, duration: 1 hour 25 mins, distance: 139 km, cost: 139")
        assert await ask("Buffalo", "Denver") == (False, "No valid information.")  # a day or more
        assert await ask("Killeen", "Mission", "taxi") == (False, "No valid information.")  # no duration, distance
        assert await ask("Rockford", "Buffalo") == (False, ("self-driving, from Rockford to Buffalo, no valid "
                                                            "information."))
        is_error, message = await ask("Buffalo", "Rockford", "walking")
        assert is_error and 'mode must be "self-driving" or "taxi"' in message and "walking" in message
    # The default mode is self-driving.
    assert (await call(service, "distance_matrix", origin="Rockford", destination="Chicago")).endswith("cost: 6")


def test_route_cost_is_the_official_rule(service):
    sandbox = service.sandbox
    route = sandbox.route("Buffalo", "Rockford")
    assert route_cost(route, "self-driving") == 51 and route_cost(route, "taxi") == 1020
    assert route_cost(sandbox.route("Rockford", "Chicago"), "self-driving") == 6  # int(6.95)
    assert route_cost(sandbox.route("Buffalo", "Denver"), "taxi") is None  # "1 day 2 hours"
    assert route_cost(sandbox.route("Killeen", "Mission"), "self-driving") is None  # no duration, no distance
    assert route_cost(sandbox.route("Rockford", "Buffalo"), "taxi") is None  # no such row
    assert route_cost(None, "taxi") is None
    assert route_cost({"duration": "5 mins", "distance": "2.5 km"}, "taxi") == 2
    assert route_cost({"duration": "5 mins", "distance": "n/a"}, "taxi") is None
    with pytest.raises(ValueError, match="mode"):
        route_cost(route, "walking")


async def test_city_searches(service):
    accommodations = await call(service, "search_accommodations", city="Rockford")
    restaurants = await call(service, "search_restaurants", city="Rockford(Illinois)")
    attractions = await call(service, "search_attractions", city="Buffalo")
    assert accommodations.splitlines() == [
        "NAME | price | room type | house_rules | minimum nights | maximum occupancy | review rate number | city",
        "Cozy Loft | 120.0 | Private room | No smoking | 1.0 | 2 | 4.0 | Rockford",
        '"Sonder | Riverside" | 310.0 | Entire home/apt | No parties & No pets | 2.0 | 4 | 5.0 | Rockford',
    ]  # the row with a missing price is not in the sandbox, as with upstream's dropna()
    assert restaurants.splitlines() == [
        "Name | Average Cost | Cuisines | Aggregate Rating | City",
        "Coco Bambu | 72 | Tea, French, Bakery | 4.9 | Rockford",
        "Flying Mango | 20 | American, BBQ | 4.5 | Rockford",
    ]
    assert attractions.splitlines() == [
        "Name | Latitude | Longitude | Address | Phone | Website | City",
        ("Niagara Falls State Park | 43.0828 | -79.0742 | 332 Prospect St, Niagara Falls, NY 14303, USA | "
         "(716) 278-1794 | https://parks.ny.gov/ | Buffalo"),
    ]


@pytest.mark.parametrize(("tool", "answer"), [
    ("search_accommodations", "There is no accommodation in this city."),
    ("search_restaurants", "There is no restaurant in this city."),
    ("search_attractions", "There is no attraction in this city."),
])
async def test_city_searches_with_no_result(service, tool, answer):
    assert await call(service, tool, city="Chicago") == answer
    assert await call(service, tool, city="rockford") == answer  # names are matched exactly, as upstream


async def test_search_cities(service):
    assert await call(service, "search_cities", state="Illinois") == "The cities in Illinois: Rockford, Chicago."
    async with Client(create_server(service)) as client:
        unknown = await client.call_tool("search_cities", {"state": "IL"})
    assert unknown.is_error
    assert "'IL' is not a state in the sandbox" in text(unknown) and "Illinois, New York" in text(unknown)


def test_formatting():
    assert format_cell(None) == "NaN" and format_cell(4.0) == "4.0" and format_cell(72) == "72"
    assert format_cell("Great Room!\nCome see") == "Great Room! Come see"
    assert format_cell('a | "b"') == '"a | ""b"""' and format_cell('"Quoted" name') == '"""Quoted"" name"'
    assert format_table(["a", "b c"], [{"a": 1, "b c": "x"}, {"a": 2.5}]) == "a | b c\n1 | x\n2.5 | NaN"
    assert format_table(["a"], []) == "a"
    assert before_parenthesis("Buffalo(New York)") == "Buffalo"
    assert before_parenthesis("Buffalo") == "Buffalo"
    assert before_parenthesis("St. Louis (Missouri) x") == "St. Louis "


# --- arguments -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("tool", "arguments", "message"), [
    ("search_flights", {"origin": "", "destination": "Rockford", "date": "2022-03-16"}, "origin must not be empty"),
    ("search_flights", {"origin": "Buffalo", "destination": "  ", "date": "2022-03-16"},
     "destination must not be empty"),
    ("search_flights", {"origin": "Buffalo", "destination": "Rockford", "date": ""}, "date must not be empty"),
    ("distance_matrix", {"origin": "(New York)", "destination": "Rockford"}, "origin must be a city name"),
    ("distance_matrix", {"origin": "Buffalo", "destination": "Rockford", "mode": ""}, "mode must not be empty"),
    ("search_restaurants", {"city": "x" * 201}, "city is 201 characters long; the limit is 200"),
    ("search_cities", {"state": ""}, "state must not be empty"),
    ("notebook_write", {"description": ""}, "description must not be empty"),
    ("notebook_write", {"description": "d" * 201}, "description is 201 characters long"),
    ("search_restaurants", {}, "city"),
    ("search_restaurants", {"city": 3}, "city"),
])
async def test_bad_arguments_are_clear_errors(service, tool, arguments, message):
    async with Client(create_server(service)) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error and message in text(result), text(result)


@pytest.mark.parametrize(("tool", "arguments", "episode"), [
    ("search_attractions", {"city": "Rockford"}, ""),
    ("search_accommodations", {"city": "Rockford"}, "s" * 201),
    ("notebook_read", {}, ["not", "a", "string"]),
])
async def test_an_episode_that_is_no_short_string_is_a_clear_error(service, tool, arguments, episode):
    async with Client(create_server(service)) as client:
        result = await client.call_tool(tool, arguments, meta={wire.EPISODE: episode})
    assert result.is_error and "must be a non-empty string of at most 200 characters" in text(result), text(result)


# --- the notebook ----------------------------------------------------------------------------------------------

async def test_notebook_records_the_latest_result_per_episode(service):
    async with Client(create_server(service)) as client:
        async def run(tool, episode=None, **arguments):
            result = await client.call_tool(tool, arguments, meta={wire.EPISODE: episode} if episode else None)
            return result.is_error, text(result)

        is_error, message = await run("notebook_write", description="nothing yet")
        assert is_error and "nothing to record yet" in message
        assert await run("notebook_read") == (False, "The Notebook is empty.")

        flights = (await run("search_flights", origin="Buffalo", destination="Rockford", date="2022-03-16"))[1]
        assert await run("notebook_write", description="Flights Buffalo to Rockford") == (
            False, "The information has been recorded in Notebook, and its index is 0.")
        # An error is not a result: the flights stay the most recent one.
        assert (await run("search_cities", state="Nowhere"))[0]
        assert await run("notebook_write", description="Again") == (
            False, "The information has been recorded in Notebook, and its index is 1.")
        await run("distance_matrix", origin="Buffalo", destination="Denver", mode="taxi")
        await run("notebook_read")  # the notebook's own tools leave the most recent result alone
        assert (await run("notebook_write", description="Taxi"))[1].endswith("its index is 2.")

        # Another episode has its own notebook and its own most recent result.
        is_error, message = await run("notebook_write", description="x", episode="episode-2")
        assert is_error and "nothing to record yet" in message
        restaurants = (await run("search_restaurants", city="Buffalo", episode="episode-2"))[1]
        assert (await run("notebook_write", description="Food", episode="episode-2"))[1].endswith("index is 0.")

        read = (await run("notebook_read"))[1]
        other = (await run("notebook_read", episode="episode-2"))[1]
    assert read == (f"index: 0\nShort Description: Flights Buffalo to Rockford\nContent:\n{flights}\n\n"
                    f"index: 1\nShort Description: Again\nContent:\n{flights}\n\n"
                    "index: 2\nShort Description: Taxi\nContent:\nNo valid information.")
    assert other == f"index: 0\nShort Description: Food\nContent:\n{restaurants}"


def test_notebook_bounds(database_dir):
    service = TravelTools(open_sandbox(database_dir), NotebookLimits(max_entries=3, max_episodes=2))
    service.search_cities("Illinois", episode="a")
    for index in range(3):
        assert service.notebook_write(f"entry {index}", episode="a").endswith(f"its index is {index}.")
    with pytest.raises(ToolError, match="the Notebook is full: it holds at most 3 entries"):
        service.notebook_write("one too many", episode="a")
    # Episodes beyond max_episodes: the least recently used one is forgotten.
    service.search_cities("Illinois", episode="b")
    service.notebook_read(episode="a")  # a is now more recent than b
    service.search_cities("New York", episode="c")
    assert len(service.notebooks) == 2
    assert service.notebook_read(episode="a").count("index: ") == 3
    with pytest.raises(ToolError, match="nothing to record yet"):
        service.notebook_write("b was forgotten", episode="b")


def test_notebook_default_bounds(service):
    service.search_restaurants("Rockford")
    for index in range(64):
        service.notebook_write(f"entry {index}")
    with pytest.raises(ToolError, match="at most 64 entries"):
        service.notebook_write("entry 64")
    assert service.notebooks.limits == NotebookLimits(max_entries=64, max_description_chars=200, max_episodes=4096)


def test_equal_lookups_share_one_answer(service):
    first = service.search_restaurants("Rockford", episode="a")
    second = service.search_restaurants("Rockford(Illinois)", episode="b")
    assert first is second


# --- batched form, options, transports -------------------------------------------------------------------------

async def test_batch_is_aligned_and_equal_to_single_calls(service):
    calls = [{"origin": "Buffalo", "destination": "Rockford", "date": "2022-03-16"},
             {"origin": "Buffalo", "destination": "Rockford", "date": "16 March"},
             {"origin": "Rockford", "destination": "Buffalo", "date": "2022-03-18"},
             {"origin": "Rockford", "destination": "Buffalo", "date": "2022-03-19"},
             {"origin": "Buffalo"}]
    episodes = {wire.EPISODES: [None, None, "s2", None, None]}
    async with Client(create_server(service)) as client:
        batch = (await client.call_tool("search_flights_batch", {"calls": calls}, meta=episodes)).structured_content
        batch = batch["results"]
        singles = [await client.call_tool("search_flights", call) for call in calls[:4]]
        written = (await client.call_tool("notebook_write_batch", {"calls": [{"description": "d"}]},
                                          meta={wire.EPISODES: ["s2"]})).structured_content
    assert [entry["is_error"] for entry in batch] == [False, True, False, False, True]
    for entry, single in zip(batch, singles):
        assert entry["is_error"] == single.is_error and text(single) in entry["text"]
    assert batch[3]["text"] == "There is no flight from Rockford to Buffalo on 2022-03-19."
    assert "destination" in batch[4]["text"]
    assert written == {"results": [{"text": "The information has been recorded in Notebook, and its index is 0.",
                                    "is_error": False, "failure": None}], "ticket": None}
    assert service.notebooks.entries("s2") == [("d", batch[2]["text"])]


def test_bad_options_exit_with_usage(tmp_path, database_dir):
    for argv in ([], ["--database-dir", str(tmp_path / "none")],
                 ["--database-dir", str(database_dir), "--flights-path", str(tmp_path / "none.csv")],
                 ["--database-dir", str(tmp_path)]):  # a folder without the sandbox's files
        with pytest.raises(SystemExit):
            build_server(argv)


async def test_flights_from_a_reference_jsonl(database_dir, tmp_path):
    reference = tmp_path / "ref.jsonl"
    row = {"Flight Number": "F9", "Price": 99, "DepTime": "10:00", "ArrTime": "11:00",
           "ActualElapsedTime": "1 hours 0 minutes", "FlightDate": "2022-04-01", "OriginCityName": "Chicago",
           "DestCityName": "Rockford", "Distance": 80.0}
    reference.write_text(json.dumps({"Flight from Chicago to Rockford on 2022-04-01": [row]}) + "\n")
    server = build_server(["--database-dir", str(database_dir), "--flights-path", str(reference)])
    async with Client(server) as client:
        found = text(await client.call_tool("search_flights", {"origin": "Chicago", "destination": "Rockford",
                                                               "date": "2022-04-01"}))
    assert found.splitlines()[1] == ("F9 | 99 | 10:00 | 11:00 | 1 hours 0 minutes | 2022-04-01 | Chicago | Rockford | "
                                     "80.0")


@pytest.mark.integration
async def test_over_stdio_subprocess(database_dir):
    params = StdioServerParameters(command=sys.executable, cwd=str(REPO_ROOT),
                                   args=["-m", "rlfactory_tool_servers.travel", "--database-dir", str(database_dir)])
    with anyio.fail_after(60):
        async with Client(params) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            restaurants = text(await client.call_tool("search_restaurants", {"city": "Buffalo"}))
            written = text(await client.call_tool("notebook_write", {"description": "Food in Buffalo"}))
            refused = await client.call_tool("distance_matrix", {"origin": "Buffalo", "destination": "Rockford",
                                                                 "mode": "bike"})
    assert tools == set(TOOLS)  # the batched forms are hidden from a client that does not ask for them
    assert restaurants.splitlines()[1] == "Anchor Bar | 35 | American, Pizza | 4.2 | Buffalo"
    assert written.endswith("its index is 0.")
    assert refused.is_error and "mode" in text(refused)


# --- the real database -----------------------------------------------------------------------------------------

async def test_real_database():
    database = shared_file("travelplanner/database")
    reference = shared_file("travelplanner/train_ref_info.jsonl")
    service = TravelTools(open_sandbox(database, reference))
    async with Client(create_server(service)) as client:
        flights = text(await client.call_tool("search_flights", {"origin": "St. Petersburg", "destination": "Rockford",
                                                                 "date": "2022-03-16"}))
        restaurants = text(await client.call_tool("search_restaurants", {"city": "Rockford"}))
        accommodations = text(await client.call_tool("search_accommodations", {"city": "Rockford"}))
        driving = text(await client.call_tool("distance_matrix", {"origin": "Detroit", "destination": "Norfolk"}))
        cities = text(await client.call_tool("search_cities", {"state": "New York"}))
    assert flights.splitlines()[0] == FLIGHTS_HEADER
    assert "F3573659 | 474 | 15:40 | 17:04 | 2 hours 24 minutes | 2022-03-16 | St. Petersburg | Rockford | 1049.0" \
        in flights.splitlines()
    assert "Coco Bambu | 72 | Tea, French, Bakery, BBQ, Cafe | 4.9 | Rockford" in restaurants.splitlines()
    assert "Spacious 3BDR Prime Location! | 1030.0 | Entire home/apt | No smoking | 2.0 | 9 | 2.0 | Rockford" \
        in accommodations.splitlines()
    assert driving == ("self-driving, from Detroit to Norfolk, duration: 10 hours 55 mins, distance: 1,144 km, "
                       "cost: 57")
    assert cities.startswith("The cities in New York: Buffalo, ") and "Ithaca" in cities
