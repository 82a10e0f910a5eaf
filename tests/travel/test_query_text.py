"""Reading TravelPlanner's structured query fields from the query text: hand-written queries of each kind, and every
query of the shared training (45, chat layout) and validation (180, ``{idx, query, plan}``) files."""

from __future__ import annotations

import ast
import json
import re
from collections import Counter

import pytest

from rlfactory_envs.travel.query_text import level_of, parse_query_text, parse_reference_keys
from rlfactory_envs.travel.query import TravelQuery
from rlfactory_tool_servers.travel.store import open_sandbox
from tests.conftest import SHARED_DATA

TRAVEL_DATA = SHARED_DATA / "travelplanner"
needs_data = pytest.mark.skipif(not (TRAVEL_DATA / "std_travelplanner.jsonl").is_file(),
                                reason=f"TravelPlanner's files are not at {TRAVEL_DATA} (shared data absent)")

CITY_STATES = {
    "St. Petersburg": "Florida", "Rockford": "Illinois", "Charlotte": "North Carolina", "Pittsburgh": "Pennsylvania",
    "Philadelphia": "Pennsylvania", "Washington": "District of Columbia", "New York": "New York",
    "Buffalo": "New York", "Boston": "Massachusetts", "Kansas City": "Missouri", "Wichita": "Kansas",
    "Houston": "Texas", "Dallas": "Texas", "Austin": "Texas", "San Juan": "San Juan", "Seattle": "Washington",
    "Spokane": "Washington", "Fort Lauderdale": "Florida", "Milwaukee": "Wisconsin",
}


def parse(text: str, **kwargs) -> dict:
    row = parse_query_text(text, city_states=CITY_STATES, **kwargs)
    TravelQuery.from_dict(row)  # the row is in the official layout
    return row


def test_an_easy_three_day_query():
    text = ("Please help me plan a trip from St. Petersburg to Rockford spanning 3 days from March 16th to March "
            "18th, 2022. The travel should be planned for a single person with a budget of $1,700.")
    assert parse(text) == {
        "org": "St. Petersburg", "dest": "Rockford", "days": 3, "visiting_city_number": 1,
        "date": ["2022-03-16", "2022-03-17", "2022-03-18"], "people_number": 1,
        "local_constraint": {"house rule": None, "cuisine": None, "room type": None, "transportation": None},
        "budget": 1700, "query": text, "level": "easy"}


def test_a_medium_five_day_query_to_a_state():
    row = parse("Could you help create a 5-day travel itinerary for a group of 4, starting from New York and "
                "visiting 2 cities in Texas from March 15th to March 19th, 2022? We have a budget of $12,300. "
                "Please note that we require accommodations where smoking is permissible.")
    assert (row["org"], row["dest"], row["days"], row["visiting_city_number"], row["people_number"]) == \
        ("New York", "Texas", 5, 2, 4)
    assert row["date"] == ["2022-03-15", "2022-03-16", "2022-03-17", "2022-03-18", "2022-03-19"]
    assert row["local_constraint"]["house rule"] == "smoking"
    assert (row["budget"], row["level"]) == (12300, "medium")


def test_a_hard_week_long_query():
    row = parse("We're planning a week-long trip for two from Pittsburgh to New York with a budget of $5,300. "
                "We're set to travel from March 13th to March 19th, 2022, and plan to visit three different cities "
                "in New York. Please keep in mind that our lodgings must allow visitors. As for meals, we'd love "
                "to sample French, Italian, Chinese, and American cuisines. Also, note that we're planning to "
                "travel without taking any flights.")
    assert (row["org"], row["dest"], row["days"], row["visiting_city_number"], row["people_number"]) == \
        ("Pittsburgh", "New York", 7, 3, 2)
    assert row["local_constraint"] == {
        "house rule": "visitors", "cuisine": ["French", "Italian", "Chinese", "American"], "room type": None,
        "transportation": "no flight"}
    assert row["level"] == "hard"


@pytest.mark.parametrize(("text", "people"), [
    ("a 3-day trip for us 3 from Boston to Buffalo from March 1st to March 3rd, 2022, budget $900", 3),
    ("a 3-day trip for a couple from Boston to Buffalo from March 1st to March 3rd, 2022, budget $900", 2),
    ("a 3-day trip for a duo from Boston to Buffalo from March 1st to March 3rd, 2022, budget $900", 2),
    ("a 3-day solo trip from Boston to Buffalo from March 1st to March 3rd, 2022, budget $900", 1),
    ("a 3-day trip for two, from Boston to Buffalo from March 1st to March 3rd, 2022, budget $900", 2),
    ("a 3-day trip for 2 participants from Boston to Buffalo from March 1st to March 3rd, 2022, budget $900", 2),
    ("a 3-day trip for a party of 5 from Boston to Buffalo from March 1st to March 3rd, 2022, budget $900", 5),
    ("a 3-day trip from Boston to Buffalo from March 1st to March 3rd, 2022, budget $900", 1),
])
def test_the_group_size(text, people):
    assert parse(text)["people_number"] == people


@pytest.mark.parametrize(("phrase", "first", "last"), [
    ("from March 13th, 2022 to March 15th, 2022", "2022-03-13", "2022-03-15"),
    ("between March 9th and 11th, 2022", "2022-03-09", "2022-03-11"),
    ("from the 8th to the 10th of March, 2022", "2022-03-08", "2022-03-10"),
    ("starting on March 30th and ending on April 1st, 2022", "2022-03-30", "2022-04-01"),
    ("from March 20 to March 22, 2022", "2022-03-20", "2022-03-22"),
])
def test_the_dates(phrase, first, last):
    row = parse(f"Plan a 3-day trip from Dallas to Austin {phrase} with a budget of $1,000.")
    assert (row["date"][0], row["date"][-1], len(row["date"])) == (first, last, 3)


def test_the_trip_length_comes_from_the_dates_when_the_text_names_none():
    row = parse("Can you help me devise a travel plan that begins in Houston and covers 2 cities in Washington? "
                "The travel dates are from March 10th to March 14th, 2022, and the budget for the trip is $2,000.")
    assert (row["days"], row["dest"], row["visiting_city_number"]) == (5, "Washington", 2)


@pytest.mark.parametrize(("text", "org", "dest"), [
    (("Please help me craft a 7-day travel plan for one person departing from Charlotte in North Carolina, visiting "
      "3 cities in Pennsylvania from March 6th to March 12th, 2022, budget $5,100."), "Charlotte", "Pennsylvania"),
    (("Can you plan a 5-day travel itinerary from Boston to New York for two people, visiting 2 different cities "
      "between March 7th and March 11th, 2022? Our budget is $2,700."), "Boston", "New York"),
    (("A 5-day trip for a group of 7, starting our journey in Washington, planning to discover 2 cities in New York "
      "from March 23rd to March 27th, 2022, with $9,100."), "Washington", "New York"),
    (("Could you arrange a 3-day travel from Boston to San Juan, Puerto Rico, for one person between March 28th and "
      "March 30th, 2022? The budget is $1,400."), "Boston", "San Juan"),
    (("Can you provide a travel plan for 1 person departing from Kansas City to Wichita for 3 days, from March "
      "27th to March 29th, 2022, with a budget of $900?"), "Kansas City", "Wichita"),
    (("Could you help create a 5-day travel itinerary, starting from Wichita moving to 2 cities in Washington state "
      "between March 1st and March 5th, 2022? Budget: $2,300."), "Wichita", "Washington"),
])
def test_origin_and_destination(text, org, dest):
    row = parse(text)
    assert (row["org"], row["dest"]) == (org, dest)


@pytest.mark.parametrize(("sentence", "constraint"), [
    ("We require accommodations where parties are allowed.", {"house rule": "parties"}),
    ("We will be bringing our pets.", {"house rule": "pets"}),
    ("Our lodgings must accommodate children under the age of 10.", {"house rule": "children under 10"}),
    ("We need accommodations that do not restrict visitors.", {"house rule": "visitors"}),
    ("We'd love to try Indian and French cuisine.", {"cuisine": ["Indian", "French"]}),
    ("We'd like non-shared rooms.", {"room type": "not shared room"}),
    ("We prefer to stay in shared rooms.", {"room type": "shared room"}),
    ("Rooms that are neither shared nor restricted, and should be private rooms.", {"room type": "private room"}),
    ("We'd like entire rooms to ourselves.", {"room type": "entire room"}),
    ("We'll not be flying and will presumably drive there.", {"transportation": "no flight"}),
    ("We'd rather avoid air travel.", {"transportation": "no flight"}),
    ("Although we don't plan to self-drive, we'd like entire rooms.",
     {"transportation": "no self-driving", "room type": "entire room"}),
    ("We prefer not to drive ourselves.", {"transportation": "no self-driving"}),
    ("I have no specific preferences about house rules, cuisine, accommodations, or transportation.", {}),
])
def test_local_constraints_in_the_benchmark_vocabulary(sentence, constraint):
    row = parse(f"A 3-day trip from Dallas to Austin from March 1st to March 3rd, 2022, with $3,000. {sentence}")
    assert {key: value for key, value in row["local_constraint"].items() if value} == constraint
    assert row["level"] == ("easy", "medium", "hard")[min(len(constraint), 2)]


def test_the_level_counts_the_local_constraints():
    assert level_of({}) == "easy"
    assert level_of({"cuisine": ["Chinese"], "house rule": None}) == "medium"
    assert level_of({"room type": "entire room", "transportation": "no flight"}) == "hard"


def test_reference_keys_give_origin_cities_and_dates():
    keys = ["Attractions in Dallas", "Accommodations in Dallas", "Accommodations in Austin",
            "Flight from Boston to Dallas on 2022-03-10", "Self-driving from Boston to Dallas",
            "Flight from Dallas to Austin on 2022-03-12", "Flight from Austin to Boston on 2022-03-14"]
    reference = parse_reference_keys(keys)
    assert (reference.org, reference.cities) == ("Boston", ("Dallas", "Austin"))
    assert reference.flight_dates == ("2022-03-10", "2022-03-12", "2022-03-14")
    row = parse("Please plan a trip for me from Boston to Texas, budget $3,000.", reference_keys=keys)
    assert (row["org"], row["dest"], row["days"], row["visiting_city_number"]) == ("Boston", "Texas", 5, 2)
    assert row["date"] == ["2022-03-10", "2022-03-11", "2022-03-12", "2022-03-13", "2022-03-14"]


@pytest.mark.parametrize(("text", "message"), [
    ("A 3-day trip from Dallas to Austin from March 1st to March 3rd, 2022.", "budget"),
    ("A 3-day trip from Dallas to Austin, budget $900.", "dates"),
    ("A 3-day trip to somewhere from March 1st to March 3rd, 2022, budget $900.", "origin"),
    ("A 3-day trip from Dallas from March 1st to March 3rd, 2022, budget $900.", "destination"),
    ("A 5-day trip from Dallas to 2 cities from March 1st to March 5th, 2022, budget $900.", "destination state"),
    ("A 5-day trip from Dallas to Austin from March 1st to March 3rd, 2022, budget $900.", "5 days"),
    ("A 3-day trip from March 1st to March 3rd from Dallas to Austin, budget $900.", "year"),
    ("A 3-day trip from Dallas to Austin from March 1st to March 3rd, 2022, budget $900, with pets and smoking.",
     "house rule"),
    ("", "empty"),
])
def test_what_cannot_be_read_is_named(text, message):
    with pytest.raises(ValueError, match=message):
        parse_query_text(text, city_states=CITY_STATES)


# --- the shared TravelPlanner files ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def city_states() -> dict[str, str]:
    return dict(open_sandbox(TRAVEL_DATA / "database").city_state)


def _training_rows() -> list[tuple[str, list[str], list[dict]]]:
    """(query text, reference Descriptions, gold plan) of each std_travelplanner.jsonl row."""
    rows = []
    for line in (TRAVEL_DATA / "std_travelplanner.jsonl").read_text(encoding="utf-8").splitlines():
        messages = json.loads(line)["messages"]
        messages = ast.literal_eval(messages) if isinstance(messages, str) else messages
        user = next(m["content"] for m in messages if m["role"] == "user")
        information, _, query = user.rpartition("Query:")
        blocks = ast.literal_eval(information.partition("Given Information:")[2].strip())
        plan = ast.literal_eval(next(m["content"] for m in messages if m["role"] == "assistant"))
        rows.append((query.strip(), [block["Description"] for block in blocks], plan))
    return rows


def _plan_cities(plan: list[dict]) -> set[str]:
    """The cities a gold plan's days are in (``"from A to B"`` gives both; ``"Houston(Texas)"`` is Houston)."""
    cities = set()
    for day in plan:
        if not day:
            continue
        current = day["current_city"]
        parts = current[len("from "):].split(" to ") if current.startswith("from ") else [current]
        cities |= {re.sub(r"\(.*\)$", "", part).strip() for part in parts}
    return cities


@needs_data
def test_every_training_query_parses_and_agrees_with_its_gold_plan_and_references(city_states):
    rows = _training_rows()
    assert len(rows) == 45
    levels: Counter[str] = Counter()
    for index, (text, keys, plan) in enumerate(rows):
        row = parse_query_text(text, city_states=city_states, reference_keys=keys)
        assert parse_query_text(text, city_states=city_states) == row, index  # the text alone says the same
        query = TravelQuery.from_dict(row)
        assert query.days == sum(1 for day in plan if day), index
        visited = _plan_cities(plan) - {query.org}
        assert len(visited) == query.visiting_city_number, index
        if query.days == 3:
            assert visited == {query.dest}, index
        else:
            assert {city_states[city] for city in visited} == {query.dest}, index
        flight_dates = parse_reference_keys(keys).flight_dates
        assert flight_dates[0] == query.date[0] and flight_dates[-1] == query.date[-1], index
        assert set(flight_dates) <= set(query.date), index
        levels[query.level] += 1
    assert levels == {"easy": 15, "medium": 15, "hard": 15}  # the benchmark's train split


@needs_data
def test_every_validation_query_parses(city_states):
    lines = (TRAVEL_DATA / "example_evaluation.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 180
    levels: Counter[str] = Counter()
    for line in lines:
        item = json.loads(line)
        query = TravelQuery.from_dict(parse_query_text(item["query"], city_states=city_states))
        # the file is ordered as the benchmark's validation split: 60 easy, 60 medium, 60 hard, each as 20
        # queries of 3, 5 and 7 days; easy queries are for one person
        block, length = divmod(item["idx"] - 1, 60)
        assert (query.level, query.days) == (("easy", "medium", "hard")[block], (3, 5, 7)[length // 20]), item["idx"]
        assert query.people_number == 1 or query.level != "easy", item["idx"]
        assert query.visiting_city_number == {3: 1, 5: 2, 7: 3}[query.days], item["idx"]
        assert query.dest in (city_states if query.days == 3 else set(city_states.values())), item["idx"]
        assert query.org in city_states, item["idx"]
        levels[query.level] += 1
    assert levels == {"easy": 60, "medium": 60, "hard": 60}

