"""The strict reading of a plan's legs, days and names (``rlfactory_reward_models.travel.legs``, the reward's
default): plans that are not trips (a made-up mode, a flight on another date or route, a banned mode in lower case,
days beyond the trip, a line of text before a name or a leg) fail it and pass the official reading, which
``rlf eval-plans`` keeps reproducing."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from rlfactory_envs.travel.family import SAMPLE_DATABASE_DIR, SAMPLE_PLANS_PATH
from rlfactory_envs.travel.query import TravelQuery
from rlfactory_envs.travel.tasks import sample_tasks
from rlfactory_reward_models.travel.evaluate import evaluate_plan
from rlfactory_reward_models.travel.legs import Leg, parse_leg
from rlfactory_reward_models.travel.lookup import PlanLookup
from rlfactory_reward_models.travel.plan_fields import NO_MORE_DAYS, from_to
from rlfactory_tool_servers.travel.names import before_parenthesis
from rlfactory_tool_servers.travel.store import open_sandbox

SANDBOX = open_sandbox(SAMPLE_DATABASE_DIR)
TASKS = {task.task_id: task for task in sample_tasks()}
PLANS = {str(row["idx"]): row["plan"] for row in map(json.loads, SAMPLE_PLANS_PATH.read_text().splitlines())}
JUNK = "Any of these will do.\n"


def judge(query: TravelQuery, plan: Any, *, strict: bool) -> dict[str, Any]:
    return evaluate_plan(query, plan, PlanLookup(SANDBOX, strict=strict))


def failed(verdict: dict[str, Any]) -> set[str]:
    return {name for part in ("commonsense", "hard") for name, value in verdict[part].items() if value is False}


def legs(plan: list[dict[str, Any]]) -> list[tuple[int, str, str]]:
    """(day index, A, B) of each day that travels."""
    return [(i, *pair) for i, day in enumerate(plan) if (pair := from_to(day["current_city"])) is not None]


def sandbox_failure(verdict: dict[str, Any]) -> str:
    assert "is_valid_information_in_sandbox" in failed(verdict) and not verdict["final_pass"]
    return verdict["messages"]["is_valid_information_in_sandbox"]


@pytest.mark.parametrize("write", [lambda a, b: f"Teleport from {a} to {b}", lambda a, b: f"Bus from {a} to {b}",
                                   lambda a, b: f"from {a} to {b}", lambda a, b: f"Walking, from {a} to {b}"],
                         ids=["teleport", "bus", "bare", "walking"])
def test_a_leg_in_a_made_up_mode_passes_only_the_official_reading(write):
    for task_id, query in TASKS.items():
        plan = copy.deepcopy(PLANS[task_id])
        for index, origin, destination in legs(plan):
            plan[index]["transportation"] = write(origin, destination)
        assert judge(query, plan, strict=False)["final_pass"], task_id  # free, and nothing looked up
        assert "not one of the benchmark's modes" in sandbox_failure(judge(query, plan, strict=True))


def test_a_flight_on_another_date_passes_only_the_official_reading():
    swapped = official_passes = 0
    for task_id, query in TASKS.items():
        plan = copy.deepcopy(PLANS[task_id])
        changed = False
        for index, origin, destination in legs(plan):
            if not plan[index]["transportation"].startswith("Flight Number: "):
                continue
            other = [f for f in SANDBOX.flights_between(before_parenthesis(origin), before_parenthesis(destination))
                     if f["FlightDate"] != query.date[index]]
            if other:
                plan[index]["transportation"] = f"Flight Number: {other[0]['Flight Number']}, from {origin} to " \
                                                f"{destination}, Departure Time: 08:00, Arrival Time: 10:00"
                changed = True
        if not changed:
            continue
        swapped += 1
        official_passes += judge(query, plan, strict=False)["final_pass"]
        assert "is not in the sandbox on 20" in sandbox_failure(judge(query, plan, strict=True)), task_id
    assert swapped == official_passes == 8  # the sample has flights on many dates


def test_a_leg_must_travel_its_days_route():
    query, plan = TASKS["21"], copy.deepcopy(PLANS["21"])
    assert judge(query, plan, strict=True)["final_pass"]
    first, last = plan[0]["transportation"], plan[query.days - 1]["transportation"]
    plan[0]["transportation"] = last  # a real flight of the trip, on another day and route
    assert "not the day's own 'from A to B'" in sandbox_failure(judge(query, plan, strict=True))
    plan[0]["transportation"], plan[1]["transportation"] = first, first  # and a leg on a day spent in town
    assert "not the day's own 'from A to B'" in sandbox_failure(judge(query, plan, strict=True))


def test_a_banned_mode_in_another_letter_case_breaks_the_rule_when_strict():
    for task_id, query in TASKS.items():
        plan = PLANS[task_id]
        modes = {day["transportation"].split(",")[0].split(":")[0] for day in plan[: query.days]} - {"-"}
        for mode, rule in (("Flight Number", "no flight"), ("Self-driving", "no self-driving")):
            if modes != {mode}:
                continue
            banned = TravelQuery.from_dict({**query.to_dict(), "local_constraint": {
                **query.to_dict()["local_constraint"], "transportation": rule}})
            assert failed(judge(banned, plan, strict=False)) == {"valid_transportation"}
            for case in (str.lower, str.upper):
                hidden = copy.deepcopy(plan)
                for day in hidden:
                    day["transportation"] = day["transportation"].replace(mode, case(mode))
                assert judge(banned, hidden, strict=False)["final_pass"], task_id  # upstream's case-sensitive test
                assert failed(judge(banned, hidden, strict=True)) == {"valid_transportation"}, task_id


@pytest.mark.parametrize("extra", [lambda plan: copy.deepcopy(plan[-1]),
                                   lambda plan: {"days": 99, "current_city": plan[0]["current_city"]},
                                   lambda plan: "another day"], ids=["last day again", "one field", "a text"])
def test_a_day_beyond_the_trip_fails_only_the_strict_reading(extra):
    for task_id, query in TASKS.items():
        plan = copy.deepcopy(PLANS[task_id])[: query.days]
        plan.append(extra(plan))
        assert judge(query, plan, strict=False)["final_pass"]  # upstream reads the first `days` days only
        verdict = judge(query, plan, strict=True)
        assert failed(verdict) - set(verdict["hard"]) == {"is_not_absent"}, task_id
        assert verdict["messages"]["is_not_absent"] == f"The plan has 1 day(s) more than the trip's {query.days}."


def test_padding_after_the_trip_is_no_day():
    query, plan = TASKS["24"], copy.deepcopy(PLANS["24"])[: TASKS["24"].days]
    dashes = {key: "-" for key in plan[0]} | {"days": 8}
    plan += [{}, dashes, {"days": 9, "current_city": NO_MORE_DAYS, "transportation": ""}, {}]
    assert judge(query, plan, strict=True)["final_pass"]


@pytest.mark.parametrize("key", ["breakfast", "lunch", "dinner", "accommodation", "attraction", "transportation"])
def test_a_line_of_text_before_a_name_or_leg_fails_only_the_strict_reading(key):
    for task_id, query in TASKS.items():
        plan = copy.deepcopy(PLANS[task_id])
        days = [day for day in plan[: query.days] if day[key] not in ("", "-")]
        for day in days:
            day[key] = JUNK + day[key]
        if not days:
            continue
        assert judge(query, plan, strict=False)["final_pass"], (task_id, key)  # upstream reads the last line
        assert "is_valid_information_in_sandbox" in failed(judge(query, plan, strict=True)), (task_id, key)


def test_a_travel_day_is_from_a_to_b_and_nothing_more():
    query, plan = TASKS["21"], copy.deepcopy(PLANS["21"])
    plan[0]["current_city"] = JUNK + plan[0]["current_city"]
    assert judge(query, plan, strict=False)["final_pass"]
    assert {"is_reasonable_visiting_city", "is_valid_information_in_sandbox"} <= failed(judge(query, plan,
                                                                                             strict=True))


@pytest.mark.parametrize("text, leg", [
    ("Flight Number: F0123, from A B to C(State), Departure Time: 08:00, Arrival Time: 10:00",
     Leg("flight", "A B", "C", "F0123")),
    ("flight number:F9 , from A to B", Leg("flight", "A", "B", "F9")),
    ("Self-driving, from A to B, duration: 1 hour, distance: 9 km, cost: 1", Leg("self-driving", "A", "B")),
    ("TAXI from A(X) to B", Leg("taxi", "A", "B")),
    ("  Taxi, from A to B  ", Leg("taxi", "A", "B")),
])
def test_parse_leg_reads_the_benchmarks_formats_in_any_case(text, leg):
    assert parse_leg(text) == leg


@pytest.mark.parametrize("text", [
    "Teleport from A to B", "Bus from A to B", "from A to B", "Flight from A to B", "Flight Number: , from A to B",
    "Note\nFlight Number: F1, from A to B", "Take a taxi, from A to B", "Self-driving to B", "Taxi, from A to B\nX",
    "Self-driving, from A to " + "B" * 600,
])
def test_parse_leg_refuses_anything_else(text):
    assert parse_leg(text) is None


def test_the_gold_plans_pass_the_strict_reading_and_the_trip_hacks_fail_it():
    from tests.conftest import shared_file
    from rlfactory_envs.travel.tasks import load_gold_plans, load_travel_tasks

    path = shared_file("travelplanner/std_travelplanner.jsonl")
    database = shared_file("travelplanner/database")
    sandbox = open_sandbox(database, shared_file("travelplanner/train_ref_info.jsonl"))
    for index, (query, plan) in enumerate(zip(load_travel_tasks(path, database), load_gold_plans(path))):
        verdict = evaluate_plan(query, plan, PlanLookup(sandbox, strict=True))
        assert verdict["final_pass"] or index == 41, (index, verdict["messages"])  # 41: the current-city fix
