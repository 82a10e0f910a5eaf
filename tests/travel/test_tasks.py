"""Loading TravelPlanner queries: the benchmark's rows (CSV with literal-text fields, JSON lines, JSON list,
parquet), chat rows (std_travelplanner.jsonl), text-only rows, malformed files, gold plans, the embedded sample."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rlfactory_envs.kernel.task_source import TaskSource
from rlfactory_envs.travel.tasks import SAMPLE_NAME, load_gold_plans, load_travel_tasks, sample_tasks
from rlfactory_envs.travel.query import TravelQuery
from tests.conftest import SHARED_DATA

TRAVEL_DATA = SHARED_DATA / "travelplanner"
CITY_STATES = {"St. Petersburg": "Florida", "Rockford": "Illinois", "Houston": "Texas", "Dallas": "Texas",
               "Austin": "Texas", "Boston": "Massachusetts"}

OFFICIAL_ROW = {
    "org": "St. Petersburg", "dest": "Rockford", "days": 3, "visiting_city_number": 1,
    "date": ["2022-03-16", "2022-03-17", "2022-03-18"], "people_number": 1,
    "local_constraint": {"house rule": None, "cuisine": None, "room type": None, "transportation": None},
    "budget": 1700, "query": "Please help me plan a trip from St. Petersburg to Rockford spanning 3 days ...",
    "level": "easy",
}
HARD_ROW = {
    "org": "Boston", "dest": "Texas", "days": 5, "visiting_city_number": 2,
    "date": ["2022-03-10", "2022-03-11", "2022-03-12", "2022-03-13", "2022-03-14"], "people_number": 2,
    "local_constraint": {"house rule": "pets", "cuisine": ["Chinese", "Indian"], "room type": "entire room",
                         "transportation": "no flight"},
    "budget": 4000, "query": "...", "level": "hard",
}
TEXT = ("Can you provide a travel plan for 2 people departing from Houston to Rockford for 3 days, from March 27th "
        "to March 29th, 2022, with a budget of $900? We require accommodations that allow parties.")


def _write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _write_released_csv(path: Path, rows: list[dict]) -> Path:
    """The released validation/test CSV layout: date and local_constraint as Python-literal text, extra columns."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=[*OFFICIAL_ROW, "reference_information"])
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "date": repr(row["date"]), "local_constraint": repr(row["local_constraint"]),
                             "reference_information": repr([{"Description": "x", "Content": "y" * 200_000}])})
    return path


def test_released_csv_with_literal_text_fields(tmp_path):
    source = load_travel_tasks(_write_released_csv(tmp_path / "validation.csv", [OFFICIAL_ROW, HARD_ROW]))
    assert isinstance(source, TaskSource) and source.name == "validation" and len(source) == 2
    first, second = source
    assert first == TravelQuery.from_dict(OFFICIAL_ROW, task_id="0")
    assert (second.task_id, second.dest, second.days, second.people_number, second.budget) == ("1", "Texas", 5, 2, 4000)
    assert second.date == tuple(HARD_ROW["date"])
    assert (second.house_rule, second.cuisines, second.room_type, second.transportation) == \
        ("pets", ("Chinese", "Indian"), "entire room", "no flight")


def test_official_rows_as_jsonl_json_list_and_parquet(tmp_path):
    jsonl = load_travel_tasks(_write_jsonl(tmp_path / "queries.jsonl", [OFFICIAL_ROW, {**HARD_ROW, "idx": 7}]))
    assert [task.task_id for task in jsonl] == ["0", "7"]
    listed = tmp_path / "queries.json"
    listed.write_text(json.dumps([OFFICIAL_ROW, HARD_ROW]), encoding="utf-8")
    assert [task.dest for task in load_travel_tasks(listed)] == ["Rockford", "Texas"]
    table = pa.Table.from_pylist([{**row, "date": repr(row["date"]), "local_constraint": repr(row["local_constraint"])}
                                  for row in (OFFICIAL_ROW, HARD_ROW)])
    pq.write_table(table, tmp_path / "queries.parquet")
    assert list(load_travel_tasks(tmp_path / "queries.parquet")) == list(load_travel_tasks(listed))


def test_chat_rows_are_read_from_the_query_text_and_reference_keys(tmp_path):
    information = [{"Description": "Accommodations in Rockford", "Content": "..."},
                   {"Description": "Flight from Houston to Rockford on 2022-03-27", "Content": "..."},
                   {"Description": "Flight from Rockford to Houston on 2022-03-29", "Content": "..."}]
    plan = [{"days": 1, "current_city": "from Houston to Rockford"}, {"days": 2, "current_city": "Rockford"},
            {"days": 3, "current_city": "from Rockford to Houston"}, {}, {}]
    messages = [{"role": "system", "content": "You are a proficient planner."},
                {"role": "user", "content": f"Given Information:{information!r}\nQuery:{TEXT}"},
                {"role": "assistant", "content": repr(plan)}]
    path = _write_jsonl(tmp_path / "std.jsonl", [{"messages": messages}, {"messages": repr(messages)}])
    first, second = load_travel_tasks(path, CITY_STATES)
    assert (first.task_id, second.task_id) == ("0", "1")
    assert (first.org, first.dest, first.days, first.people_number, first.budget) == ("Houston", "Rockford", 3, 2, 900)
    assert (first.house_rule, first.level, first.query) == ("parties", "medium", TEXT)
    assert second == TravelQuery(**{**first.__dict__, "task_id": "1"})
    assert load_gold_plans(path) == [plan, plan]


def test_text_only_rows_keep_their_idx(tmp_path):
    path = _write_jsonl(tmp_path / "submission.jsonl", [{"idx": 12, "query": TEXT, "plan": None}])
    (task,) = load_travel_tasks(path, CITY_STATES)
    assert (task.task_id, task.org, task.dest, task.date[0]) == ("12", "Houston", "Rockford", "2022-03-27")


@pytest.mark.parametrize(("rows", "message"), [
    ([OFFICIAL_ROW, {**OFFICIAL_ROW, "days": "three"}], r"bad\.jsonl: line 2: .*integer 'days'"),
    ([OFFICIAL_ROW, {**OFFICIAL_ROW, "local_constraint": {"room type": "castle"}}], r"line 2: .*room type"),
    ([{"idx": 1, "query": "A trip from Houston to Rockford, please."}], r"line 1: .*dates"),
    ([{"idx": 1, "query": TEXT}, {"idx": 1, "query": TEXT}], r"line 2: task id '1' repeats the one of line 1"),
    ([{"messages": [{"role": "user", "content": "no query marker here"}]}], r"line 1: .*'Query:'"),
    ([{"messages": "[not a literal"}], r"line 1: 'messages' is not a Python literal"),
    ([{"question": "where to?"}], r"line 1: a row needs the benchmark's fields"),
    (["a string"], r"line 1: expected a JSON object"),
])
def test_a_bad_row_is_named_with_its_file_and_line(tmp_path, rows, message):
    path = _write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(ValueError, match=message):
        load_travel_tasks(path, CITY_STATES)


def test_bad_files_say_what_is_wrong(tmp_path):
    bad_csv = _write_released_csv(tmp_path / "test.csv", [OFFICIAL_ROW, {**OFFICIAL_ROW, "date": ["2022-03-16"]}])
    text = bad_csv.read_text(encoding="utf-8").replace("['2022-03-16']", "[2022-03-16")
    bad_csv.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=r"test\.csv: row 2: date is not a Python literal"):
        load_travel_tasks(bad_csv)
    with pytest.raises(ValueError, match=r"line 1: .*needs city_states"):
        load_travel_tasks(_write_jsonl(tmp_path / "text.jsonl", [{"query": TEXT}]))
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match="holds no travel queries"):
        load_travel_tasks(tmp_path / "empty.jsonl")
    (tmp_path / "queries.txt").write_text(TEXT, encoding="utf-8")
    with pytest.raises(ValueError, match=r"\.csv"):
        load_travel_tasks(tmp_path / "queries.txt")
    with pytest.raises(FileNotFoundError):
        load_travel_tasks(tmp_path / "missing.csv")
    with pytest.raises(ValueError, match=r"line 1: .*assistant"):
        load_gold_plans(_write_jsonl(tmp_path / "no_plan.jsonl", [{"messages": [{"role": "user", "content": "x"}]}]))


@pytest.mark.skipif(not (TRAVEL_DATA / "std_travelplanner.jsonl").is_file(),
                    reason=f"TravelPlanner's files are not at {TRAVEL_DATA} (shared data absent)")
def test_the_shared_files_load_with_the_sandbox_city_names():
    database = TRAVEL_DATA / "database"
    train = load_travel_tasks(TRAVEL_DATA / "std_travelplanner.jsonl", database)
    assert (train.name, len(train), train[0].task_id, train[0].org, train[0].dest) == \
        ("std_travelplanner", 45, "0", "St. Petersburg", "Rockford")
    plans = load_gold_plans(TRAVEL_DATA / "std_travelplanner.jsonl")
    assert len(plans) == 45 and all(sum(1 for day in plan if day) == task.days for plan, task in zip(plans, train))
    assert all(plan[-1] == {} for plan in plans if len(plan) > sum(1 for day in plan if day))
    validation = load_travel_tasks(TRAVEL_DATA / "example_evaluation.jsonl", database)
    assert len(validation) == 180 and validation.by_id("180").dest == "Texas"


def test_the_embedded_sample():
    source = sample_tasks()
    assert source.name == SAMPLE_NAME == "rlf-travel-sample"
    assert load_travel_tasks(None).name == SAMPLE_NAME
    assert {task.level for task in source} == {"easy", "medium", "hard"}
