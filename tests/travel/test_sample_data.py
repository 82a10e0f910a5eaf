"""The embedded synthetic travel sample: the files equal the generator's output, the queries have TravelPlanner's
row layout, and each reference plan names real sandbox rows and stays within its budget."""

from __future__ import annotations

import csv
import json
import math
from datetime import date, timedelta
from pathlib import Path

import pytest

from rlfactory_envs.travel import sample_data
from rlfactory_envs.travel.family import (
    SAMPLE_DATABASE_DIR,
    SAMPLE_DIR,
    SAMPLE_PLANS_PATH,
    SAMPLE_QUERIES_PATH,
)

QUERY_KEYS = {"idx", "org", "dest", "days", "visiting_city_number", "date", "people_number", "local_constraint",
              "budget", "query", "level"}
PLAN_KEYS = ["days", "current_city", "transportation", "breakfast", "attraction", "lunch", "dinner", "accommodation"]
ALLOWED = {"house rule": {None, "parties", "smoking", "children under 10", "pets", "visitors"},
           "room type": {None, "entire room", "private room", "shared room", "not shared room"},
           "transportation": {None, "no flight", "no self-driving"}}


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _table(relative: str) -> list[dict[str, str]]:
    with (SAMPLE_DATABASE_DIR / relative).open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def sandbox() -> dict[str, object]:
    states = dict(line.split("\t") for line in
                  (SAMPLE_DATABASE_DIR / "background" / "citySet_with_states.txt").read_text().split("\n"))
    return {
        "states": states,
        "restaurants": {(r["Name"], r["City"]): r for r in _table("restaurants/clean_restaurant_2022.csv")},
        "attractions": {(r["Name"], r["City"]): r for r in _table("attractions/attractions.csv")},
        "accommodations": {(r["NAME"], r["city"]): r for r in _table("accommodations/clean_accommodations_2022.csv")},
        "flights": {r["Flight Number"]: r for r in _table("flights/clean_Flights_2022.csv")},
        "distances": {(r["origin"], r["destination"]): r for r in _table("googleDistanceMatrix/distance.csv")},
    }


@pytest.fixture(scope="module")
def pairs() -> list[tuple[dict, dict]]:
    queries, plans = _read_jsonl(SAMPLE_QUERIES_PATH), _read_jsonl(SAMPLE_PLANS_PATH)
    assert [q["idx"] for q in queries] == [p["idx"] for p in plans]
    return list(zip(queries, plans))


def test_committed_files_equal_the_generator_output(tmp_path):
    # If this fails, run `python -m rlfactory_envs.travel.sample_data` and commit the data files.
    sample_data.write_sample(tmp_path)
    fresh = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(SAMPLE_DIR) for p in SAMPLE_DIR.rglob("*") if p.is_file())
    assert fresh == committed
    for relative in fresh:
        assert (tmp_path / relative).read_bytes() == (SAMPLE_DIR / relative).read_bytes(), relative


def test_the_database_has_travelplanners_layout_and_headers():
    headers = {
        "accommodations/clean_accommodations_2022.csv":
            ",NAME,room type,price,minimum nights,review rate number,house_rules,maximum occupancy,city",
        "restaurants/clean_restaurant_2022.csv": ",Name,City,Cuisines,Average Cost,Aggregate Rating",
        "attractions/attractions.csv": "Name,Latitude,Longitude,Address,Phone,Website,City",
        "googleDistanceMatrix/distance.csv": "origin,destination,cost,duration,distance",
        "flights/clean_Flights_2022.csv":
            "Flight Number,Price,DepTime,ArrTime,ActualElapsedTime,FlightDate,OriginCityName,DestCityName,Distance",
    }
    for relative, header in headers.items():
        assert (SAMPLE_DATABASE_DIR / relative).read_text(encoding="utf-8").split("\n", 1)[0] == header
    for name in ("citySet.txt", "citySet_with_states.txt", "stateSet.txt"):
        text = (SAMPLE_DATABASE_DIR / "background" / name).read_text(encoding="utf-8")
        assert text and not text.endswith("\n") and "" not in text.split("\n")
    total = sum(p.stat().st_size for p in SAMPLE_DIR.rglob("*") if p.is_file())
    assert total < 300_000


def test_every_row_is_complete_and_names_are_unambiguous(sandbox):
    # The official tools drop rows with a missing field and match names and cities by substring.
    cities = list(sandbox["states"])
    for kind in ("restaurants", "attractions", "accommodations"):
        by_city: dict[str, list[str]] = {}
        for (name, city), row in sandbox[kind].items():
            assert all(str(value).strip() for value in row.values()), row
            assert not set(name) & set(",;()"), name
            assert not any(c in name for c in cities), name
            by_city.setdefault(city, []).append(name)
        for city, names in by_city.items():
            assert city in sandbox["states"]
            for name in names:
                assert sum(name in other for other in names) == 1, (city, name)
    for city in cities:
        assert sum(city in other for other in cities) == 1, city
    for row in list(sandbox["flights"].values()) + list(sandbox["distances"].values()):
        assert all(value.strip() for key, value in row.items() if key != "cost"), row


def test_query_rows_have_the_benchmark_layout(pairs, sandbox):
    states = sandbox["states"]
    seen = set()
    for query, _ in pairs:
        assert set(query) == QUERY_KEYS
        assert query["level"] in {"easy", "medium", "hard"}
        assert query["days"] in {3, 5, 7} and query["visiting_city_number"] == (query["days"] - 1) // 2
        assert query["org"] in states
        if query["days"] == 3:
            assert query["dest"] in states
        else:
            assert query["dest"] in set(states.values()) and states[query["org"]] != query["dest"]
        first = date.fromisoformat(query["date"][0])
        assert query["date"] == [(first + timedelta(days=i)).isoformat() for i in range(query["days"])]
        assert isinstance(query["budget"], int) and query["budget"] % 100 == 0
        assert f"${query['budget']:,}" in query["query"]
        constraint = query["local_constraint"]
        assert set(constraint) == {"house rule", "cuisine", "room type", "transportation"}
        for key, allowed in ALLOWED.items():
            assert constraint[key] in allowed
        assert constraint["cuisine"] is None or (isinstance(constraint["cuisine"], list) and constraint["cuisine"])
        given = sum(value is not None for value in constraint.values())
        people = query["people_number"]
        if query["level"] == "easy":
            assert given == 0 and people == 1
        elif query["level"] == "medium":
            assert given == 1 and constraint["transportation"] is None and 2 <= people <= 8
        else:
            assert given == 3 and 1 <= people <= 8
        seen.add((query["level"], query["days"]))
    assert seen == {(level, days) for level in ("easy", "medium", "hard") for days in (3, 5, 7)}
    assert 18 <= len(pairs) <= 27


def _entry(text: str) -> tuple[str, str]:
    name, city = text.rsplit(", ", 1)
    return name, city


def _plan_cost(query: dict, plan: list[dict], sandbox: dict) -> float:
    people, total = query["people_number"], 0.0
    for day in plan:
        move = day["transportation"]
        if move.startswith("Flight Number: "):
            total += float(sandbox["flights"][move.split("Flight Number: ")[1].split(",")[0]]["Price"]) * people
        elif move != "-":
            label, route = move.split(", ", 2)[:2]
            origin, destination = route.removeprefix("from ").split(" to ")
            km = float(sandbox["distances"][(origin, destination)]["distance"].replace("km", "").replace(",", ""))
            if label == "Self-driving":
                total += int(km * 0.05) * math.ceil(people / 5)
            else:
                assert label == "Taxi"
                total += int(km) * math.ceil(people / 4)
        for meal in ("breakfast", "lunch", "dinner"):
            if day[meal] != "-":
                total += float(sandbox["restaurants"][_entry(day[meal])]["Average Cost"]) * people
        if day["accommodation"] != "-":
            row = sandbox["accommodations"][_entry(day["accommodation"])]
            total += float(row["price"]) * math.ceil(people / int(row["maximum occupancy"]))
    return total


def test_reference_plans_name_rows_of_the_sandbox(pairs, sandbox):
    for query, plan in pairs:
        assert set(plan) == {"idx", "query", "plan"} and plan["query"] == query["query"]
        days = plan["plan"]
        assert [day["days"] for day in days] == list(range(1, query["days"] + 1))
        assert days[-1]["accommodation"] == "-" and days[-1]["current_city"].endswith(f" to {query['org']}")
        for number, day in enumerate(days):
            assert list(day) == PLAN_KEYS
            move = day["transportation"]
            if move.startswith("Flight Number: "):
                flight = sandbox["flights"][move.split("Flight Number: ")[1].split(",")[0]]
                route = f"from {flight['OriginCityName']} to {flight['DestCityName']}, "
                assert route in move and flight["FlightDate"] == query["date"][number]
                assert f"Departure Time: {flight['DepTime']}, Arrival Time: {flight['ArrTime']}" in move
            elif move != "-":
                origin, destination = move.split(", ")[1].removeprefix("from ").split(" to ")
                row = sandbox["distances"][(origin, destination)]
                assert f"duration: {row['duration']}, distance: {row['distance']}" in move
            for meal in ("breakfast", "lunch", "dinner"):
                if day[meal] != "-":
                    assert _entry(day[meal]) in sandbox["restaurants"], day[meal]
            if day["attraction"] != "-":
                assert day["attraction"].endswith(";")
                for item in day["attraction"].split(";")[:-1]:
                    assert _entry(item) in sandbox["attractions"], item
            if day["accommodation"] != "-":
                assert _entry(day["accommodation"]) in sandbox["accommodations"], day["accommodation"]


def test_reference_plans_stay_within_budget(pairs, sandbox):
    for query, plan in pairs:
        cost = _plan_cost(query, plan["plan"], sandbox)
        assert 0 < cost <= query["budget"], (query["idx"], cost, query["budget"])
