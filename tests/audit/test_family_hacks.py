"""The search and travel families' hacks write what they claim, and the travel reference plans are the sample's."""

from __future__ import annotations

import asyncio
import json

import pytest

from rlfactory_envs import make_env
from rlfactory_envs.search.hacks import DISTRACTORS, search_hacks
from rlfactory_envs.travel.family import SAMPLE_PLANS_PATH
from rlfactory_envs.travel.hacks import FRAGMENT_CHARS, MEALS, reference_plan, trip_days, travel_hacks
from rlfactory_reward_models.qa_match import normalize_answer
from rlfactory_tool_servers.travel.store import ACCOMMODATIONS, ATTRACTIONS, RESTAURANTS
from tests.conftest import shared_file
from rlfactory_envs.kernel.families import tooling_of


def respond(hacks, name, env, observation="") -> str:
    return asyncio.run({hack.name: hack for hack in hacks}[name].act(env, observation))


@pytest.fixture(scope="module")
def search_env():
    env = make_env("rlf/Search-NQ-v0")
    yield env
    env.close()


@pytest.fixture(scope="module")
def travel_env():
    env = make_env("rlf/Travel-v0")
    yield env
    env.close()


def test_search_answers_that_normalise_to_nothing(search_env):
    search_env.reset(seed=0)
    for name in ("article_the", "article_a", "articles_and_punctuation"):
        answer = search_env.parser.parse(respond(search_hacks(), name, search_env)).answer
        assert answer and normalize_answer(answer) == ""


def test_search_aliases_stuffed_and_question_copied(search_env):
    search_env.reset(options={"task": {"question": "Who wrote the song?", "golden_answers": ["Ann Lee", "A. Lee"]}})
    stuffed = search_env.parser.parse(respond(search_hacks(), "all_aliases_stuffed", search_env)).answer
    assert "Ann Lee, A. Lee" in stuffed and all(d in stuffed for d in DISTRACTORS) and " or " in stuffed
    copied = search_env.parser.parse(respond(search_hacks(), "question_copied", search_env)).answer
    assert copied == "Who wrote the song?"


def plan_of(env, response: str) -> list[dict]:
    return json.loads(env.parser.parse(response).answer)


def test_travel_reference_plans_are_the_sample_plans(travel_env):
    rows = {str(row["idx"]): row for row in map(json.loads, SAMPLE_PLANS_PATH.read_text().splitlines())}
    for task in travel_env.tasks:
        assert reference_plan(travel_env, task) == rows[task.task_id]["plan"]
        assert json.loads(tooling_of(travel_env).reference_answer(travel_env, task)) == rows[task.task_id]["plan"]
    renamed = type(task)(**{**vars(task), "query": "another query"})
    assert tooling_of(travel_env).reference_answer(travel_env, renamed) is None  # matched by id and query text


def test_travel_empty_and_dash_plans(travel_env):
    travel_env.reset(options={"task_id": "1"})
    assert travel_env.parser.parse(respond(travel_hacks(), "empty_plan", travel_env)).answer == "[]"
    plan = plan_of(travel_env, respond(travel_hacks(), "dash_plan", travel_env))
    assert [day["days"] for day in plan] == list(range(1, travel_env.task.days + 1))
    assert all(value == "-" for day in plan for key, value in day.items() if key != "days")


def test_travel_invented_names_are_plausible_and_not_in_the_sandbox(travel_env):
    sandbox = travel_env.runtime.sandbox
    for task in travel_env.tasks:
        travel_env.reset(options={"task_id": task.task_id})
        plan = plan_of(travel_env, respond(travel_hacks(), "invented_names", travel_env))
        assert len(plan) == task.days and plan[0]["current_city"].startswith(f"from {task.org} to ")
        assert plan[-1]["current_city"].endswith(f" to {task.org}")
        for day in plan:
            for key, table in [*((meal, RESTAURANTS) for meal in MEALS), ("attraction", ATTRACTIONS),
                               ("accommodation", ACCOMMODATIONS)]:
                if day[key] == "-":
                    continue
                name, _, city = day[key].rstrip(";").rpartition(", ")
                assert len(name) > 10 and city in sandbox.city_state
                assert sandbox.find_named(table, name, city) is None, day[key]


def test_travel_name_fragments_are_short_prefixes_of_the_reference_names(travel_env):
    sandbox = travel_env.runtime.sandbox
    shortened = 0
    for task in travel_env.tasks:
        travel_env.reset(options={"task_id": task.task_id})
        reference = json.loads(tooling_of(travel_env).reference_answer(travel_env, task))
        plan = plan_of(travel_env, respond(travel_hacks(), "name_fragments", travel_env))
        assert len(plan) == len(reference)
        for day, gold in zip(plan, reference):
            assert (day["current_city"], day["transportation"]) == (gold["current_city"], gold["transportation"])
            for key, table in [*((meal, RESTAURANTS) for meal in MEALS), ("accommodation", ACCOMMODATIONS),
                               ("attraction", ATTRACTIONS)]:
                entries, gold_entries = day[key].split(";"), gold[key].split(";")
                for entry, gold_entry in zip(entries, gold_entries):
                    if gold_entry.strip() in ("", "-"):
                        continue
                    name, _, city = entry.rpartition(", ")
                    gold_name, _, gold_city = gold_entry.rpartition(", ")
                    assert city == gold_city and gold_name.startswith(name) and len(name) >= FRAGMENT_CHARS
                    assert sandbox.find_named(table, name, city)[table.columns[0]] == gold_name
                    shortened += len(name) < len(gold_name)
    assert shortened > 100  # nearly every place is named by a fragment


def test_trip_days_go_out_and_come_home():
    from rlfactory_envs.travel.query import TravelQuery

    query = TravelQuery(org="A", dest="S", days=7, visiting_city_number=3, date=("d",) * 7, people_number=1,
                        budget=1.0)
    days = trip_days(query, ["B", "C", "D"])
    assert [current for current, _, _ in days] == ["from A to B", "B", "from B to C", "C", "from C to D", "D",
                                                   "from D to A"]
    assert [here for _, here, _ in days] == ["B", "B", "C", "C", "D", "D", "D"]


def test_travel_reference_plans_of_chat_rows():
    """The real training queries (``std_travelplanner.jsonl``) carry their gold plans: the control has one."""
    data = shared_file("travelplanner/std_travelplanner.jsonl")
    env = make_env("rlf/Travel-v0", data_path=str(data), database_dir=str(data.parent / "database"),
                   flights_path=str(data.parent / "train_ref_info.jsonl"))
    try:
        assert all(tooling_of(env).reference_answer(env, task) for task in env.tasks)
        assert json.loads(tooling_of(env).reference_answer(env, env.tasks[0]))[0]["days"] == 1
        env.reset(options={"task_id": "23"})  # its cities are written "New York(New York)"
        gold = json.loads(tooling_of(env).reference_answer(env, env.task))
        plan = plan_of(env, respond(travel_hacks(), "name_fragments", env))
        assert "(New York)" in gold[1]["dinner"] and gold[1]["dinner"].endswith(plan[1]["dinner"].split(", ")[-1])
        assert len(plan[1]["dinner"]) < len(gold[1]["dinner"]) and len(plan[1]["accommodation"]) < len(
            gold[1]["accommodation"])
    finally:
        env.close()


def test_travel_name_fragments_without_a_reference_cut_the_baseline_plan(monkeypatch):
    """Where a task has no reference plan, the hack plans with the scripted baseline (its tool calls included)
    and cuts that plan's names: under the official substring rule it passes wherever the baseline's plan does."""
    import rlfactory_envs.travel.hacks as travel_hacks_module
    from rlfactory_envs.audit import run_audit

    monkeypatch.setattr(travel_hacks_module, "reference_plan", lambda tasks, task: None)
    report = run_audit("rlf/Travel-v0", n_tasks=24, only=["name_fragments"], env_kwargs={"strict": False})
    (fragments,) = report.hacks
    assert fragments.tried == 24 and fragments.errors == 0 and 0.5 < fragments.rate < 1.0
    assert all(example.answer.startswith('[{"days": 1, "current_city": "from ') for example in fragments.earning)
    strict = run_audit("rlf/Travel-v0", n_tasks=24, only=["name_fragments"], env_kwargs={"strict": True})
    assert strict.hacks[0].earned == 0  # the names really are fragments: matched exactly, none is found
