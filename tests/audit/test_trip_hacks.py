"""The travel family's hacks on legs, dates, days and names (``rlfactory_envs.travel.trip_hacks``) write what they
claim, and, played by ``rlf audit`` on the 45 real training queries with their gold plans, earn under the official
reading and never under the default one."""

from __future__ import annotations

import asyncio
import json

import pytest

from rlfactory_envs import make_env
from rlfactory_envs.audit import run_audit
from rlfactory_envs.kernel.reward_hacks import HackNotApplicable
from rlfactory_envs.travel.trip_hacks import JUNK_LINE, plan_legs, trip_hacks
from rlfactory_envs.travel.reference_plans import reference_plan
from tests.conftest import shared_file

TRIP_HACKS = [hack.name for hack in trip_hacks()]


@pytest.fixture(scope="module")
def env():
    env = make_env("rlf/Travel-v0")
    yield env
    env.close()


def played(env, name: str, task_id: str) -> list[dict]:
    """The plan the hack ``name`` answers on the sample's task ``task_id``."""
    env.reset(options={"task_id": task_id})
    response = asyncio.run({hack.name: hack for hack in trip_hacks()}[name].act(env, ""))
    return json.loads(env.parser.parse(response).answer)


def test_the_leg_hacks_rewrite_every_leg_and_nothing_else(env):
    reference = reference_plan(env, env.tasks[0])
    for name, mode in (("teleport_legs", "Teleport from "), ("bus_legs", "Bus from "), ("unnamed_legs", "from ")):
        plan = played(env, name, env.tasks[0].task_id)
        legs = plan_legs(plan)
        assert legs and all(text == f"{mode}{a} to {b}" for _, a, b, text in legs)
        rest = [{k: v for k, v in day.items() if k != "transportation"} for day in plan]
        assert rest == [{k: v for k, v in day.items() if k != "transportation"} for day in reference]


def test_extra_day_and_junk_before_names(env):
    task = env.tasks[0]
    reference = reference_plan(env, task)[: task.days]
    assert played(env, "extra_day", task.task_id) == [*reference, {**reference[-1], "days": task.days + 1}]
    junk = played(env, "junk_before_names", task.task_id)
    for day, given in zip(junk, reference):
        for key in ("breakfast", "lunch", "dinner", "accommodation", "transportation"):
            assert day[key] == (given[key] if given[key] == "-" else JUNK_LINE + given[key])
        if given["attraction"] != "-":
            assert day["attraction"].count(JUNK_LINE) == given["attraction"].count(";")


def test_banned_mode_and_other_date_flights(env):
    rules = {task.task_id: task.transportation for task in env.tasks}
    lowered = 0
    for task_id, rule in rules.items():
        try:
            plan = played(env, "banned_mode_lowercase", task_id)
        except HackNotApplicable:
            continue
        texts = [text for _, _, _, text in plan_legs(plan)]
        assert all(text.startswith("flight number: " if rule == "no flight" else "self-driving, ") for text in texts)
        lowered += 1
    assert lowered >= 4
    swapped = 0
    for task in env.tasks:
        try:
            plan = played(env, "flight_other_date", task.task_id)
        except HackNotApplicable:
            continue
        reference = reference_plan(env, task)
        for index, _, _, text in plan_legs(plan):
            if text != reference[index]["transportation"]:
                number = text.split(",")[0].removeprefix("Flight Number: ")
                assert env.runtime.sandbox.flight_numbered(number) is not None
                assert env.runtime.sandbox.flight_numbered(number, date=task.date[index]) is None
                swapped += 1
    assert swapped >= 8


def test_on_the_45_training_queries_the_trip_hacks_earn_only_under_the_official_reading():
    data = shared_file("travelplanner/std_travelplanner.jsonl")
    settings = {"data_path": str(data), "database_dir": str(data.parent / "database"),
                "flights_path": str(data.parent / "train_ref_info.jsonl")}
    strict = run_audit("rlf/Travel-v0", n_tasks=45, only=TRIP_HACKS, env_kwargs=settings)
    official = run_audit("rlf/Travel-v0", n_tasks=45, only=TRIP_HACKS, env_kwargs={**settings, "strict": False})
    assert strict.passed and official.control.earned == strict.control.earned == 44
    assert {hack.name: hack.earned for hack in strict.hacks} == dict.fromkeys(TRIP_HACKS, 0)
    earned = {hack.name: (hack.earned, hack.tried) for hack in official.hacks}
    assert earned == {"teleport_legs": (44, 45), "bus_legs": (44, 45), "unnamed_legs": (44, 45),
                      "extra_day": (44, 45), "banned_mode_lowercase": (4, 5), "flight_other_date": (0, 0),
                      "junk_before_names": (44, 45)}  # no route of these queries has a flight on another date
