"""Loading NL2SQL tasks: Spider's layout (the real dev set when present), BIRD's layout (a tiny fixture written
here), JSONL, the embedded sample, and the errors a bad file gives."""

from __future__ import annotations

import json
import shutil
import sqlite3

import gymnasium as gym
import pytest

import rlfactory_envs  # noqa: F401
from rlfactory_envs.sql.task import SqlTask
from rlfactory_envs.sql.tasks import SAMPLE_DB_DIR, SAMPLE_NAME, default_db_dir, load_sql_tasks, sample_tasks
from tests.conftest import shared_file


def make_db(path, rows=(("Ada", 3), ("Bo", 5))):
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE frpm (`School Name` TEXT, `Free Meal Count` INTEGER)")
        db.executemany("INSERT INTO frpm VALUES (?, ?)", rows)
    db.close()


@pytest.fixture
def bird_dir(tmp_path):
    """BIRD's layout: dev.json beside dev_databases/<db_id>/<db_id>.sqlite."""
    make_db(tmp_path / "dev_databases" / "california_schools" / "california_schools.sqlite")
    rows = [
        {"question_id": 0, "db_id": "california_schools", "question": "Which school has the most free meals?",
         "evidence": "most free meals refers to MAX(`Free Meal Count`)",
         "SQL": "SELECT `School Name` FROM frpm ORDER BY `Free Meal Count` DESC LIMIT 1", "difficulty": "simple"},
        {"question_id": 1, "db_id": "california_schools", "question": "How many schools?", "evidence": "",
         "SQL": "SELECT count(*) FROM frpm", "difficulty": "simple"},
        {"question_id": 2, "db_id": "debit_card_specializing", "question": "q", "evidence": "", "SQL": "SELECT 1",
         "difficulty": "moderate"},
    ]
    (tmp_path / "dev.json").write_text(json.dumps(rows), encoding="utf-8")
    return tmp_path


def test_bird_layout(bird_dir, caplog):
    tasks = load_sql_tasks(bird_dir / "dev.json", dataset="bird")
    assert tasks.name == "bird-dev" and [t.task_id for t in tasks] == ["0", "1"]
    first = tasks.by_id("0")
    assert first == SqlTask("0", "california_schools", "Which school has the most free meals?",
                            "SELECT `School Name` FROM frpm ORDER BY `Free Meal Count` DESC LIMIT 1",
                            "most free meals refers to MAX(`Free Meal Count`)", "bird")
    assert "1 questions left out" in caplog.text and "debit_card_specializing: 1" in caplog.text
    assert default_db_dir(bird_dir / "dev.json") == (bird_dir / "dev_databases").resolve()


def test_bird_env_on_the_fixture_uses_evidence_and_set_comparison(bird_dir):
    env = gym.make("rlf/NL2SQL-BIRD-v0", data_path=str(bird_dir / "dev.json"), test_suite="off").unwrapped
    try:  # one database: BIRD's set comparison is what is tested here (a constant would fail a test suite)
        obs, info = env.reset(options={"task_id": "0"})
        assert "External knowledge: most free meals" in obs and info["dataset"] == "bird-dev"
        obs, *_ = env.step('<tool_call>{"name": "list_tables", "arguments": {}}</tool_call>')
        assert '"School Name"' in obs and "frpm (2 rows)" in obs
        _, reward, *_ = env.step("<answer>SELECT `School Name` FROM frpm WHERE `Free Meal Count` = 5</answer>")
        assert reward == 1.0
        env.reset(options={"task_id": "1"})
        assert env.step("<answer>SELECT 2.0</answer>")[1] == 1.0
    finally:
        env.close()


def test_spider_layout_and_jsonl(tmp_path):
    make_db(tmp_path / "database" / "schools" / "schools.sqlite")
    rows = [{"db_id": "schools", "question": "How many?", "query": "SELECT count(*) FROM frpm",
             "query_toks": ["SELECT"], "sql": {}}]
    (tmp_path / "dev.json").write_text(json.dumps(rows), encoding="utf-8")
    (tmp_path / "extra.jsonl").write_text("\n".join(json.dumps(r) for r in rows * 2) + "\n\n", encoding="utf-8")
    tasks = load_sql_tasks(tmp_path / "dev.json")
    assert tasks.name == "spider-dev" and tasks[0] == SqlTask("0", "schools", "How many?", "SELECT count(*) FROM frpm")
    assert [t.task_id for t in load_sql_tasks(tmp_path / "extra.jsonl", tmp_path / "database")] == ["0", "1"]


def test_real_spider_dev():
    dev = shared_file("spider/dev.json")
    tasks = load_sql_tasks(dev)
    assert len(tasks) == 972 and tasks[0].db_id == "concert_singer"
    assert tasks[0].gold_sql == "SELECT count(*) FROM singer"
    assert all(t.task_id.isdigit() for t in tasks) and "wta_1" not in {t.db_id for t in tasks}


@pytest.mark.parametrize("content,message", [
    ("{not json", "not valid JSON"),
    ('{"a": 1}', "expected a JSON list"),
    ('[1]', "item 1: expected a JSON object"),
    ('[{"db_id": "schools", "question": "q"}]', "item 1: an SQL task needs its gold query"),
    ('[{"db_id": "schools", "query": "SELECT 1"}]', "item 1: an SQL task needs a non-empty string 'question'"),
    ('[{"db_id": "elsewhere", "question": "q", "query": "SELECT 1"}]', "no question has its database"),
])
def test_bad_files_say_what_is_wrong(tmp_path, content, message):
    make_db(tmp_path / "database" / "schools" / "schools.sqlite")
    (tmp_path / "dev.json").write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_sql_tasks(tmp_path / "dev.json")


def test_missing_files_and_folders(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_sql_tasks(tmp_path / "none.json")
    (tmp_path / "dev.json").write_text("[]", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="pass db_dir"):
        load_sql_tasks(tmp_path / "dev.json")


def test_embedded_sample():
    spider, bird = sample_tasks(), sample_tasks("bird")
    assert spider.name == bird.name == SAMPLE_NAME and len(spider) == 25
    assert {t.db_id for t in spider} == {"bookshop", "school", "tramways"}
    assert {t.data_source for t in bird} == {"bird"} and any(t.evidence for t in bird)


def test_sample_databases_are_what_the_generator_writes(tmp_path):
    from rlfactory_envs.sql import sample_data

    sample_data.write_sample(tmp_path)
    for db_id in sample_data.schemas():
        fresh, committed = tmp_path / "database" / db_id / f"{db_id}.sqlite", SAMPLE_DB_DIR / db_id / f"{db_id}.sqlite"
        dumps = []
        for path in (fresh, committed):
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
            dumps.append(list(db.iterdump()))
            db.close()
        assert dumps[0] == dumps[1], f"{db_id}: run python -m rlfactory_envs.sql.sample_data"
    assert (tmp_path / "questions.json").read_text() == (SAMPLE_DB_DIR.parent / "questions.json").read_text()


def test_every_sample_gold_query_returns_rows():
    from rlfactory_reward_models.sql.execution import SqlExecutionReward

    reward = SqlExecutionReward(SAMPLE_DB_DIR)
    try:
        for task in sample_tasks():
            db = reward.catalog.get(task.db_id)
            assert db.execute(task.gold_sql).rows, task
            assert reward.verify(task.db_id, task.gold_sql, task.gold_sql).value == 1.0
    finally:
        reward.close()


def test_a_copied_sample_folder_works_as_data(tmp_path):
    shutil.copytree(SAMPLE_DB_DIR.parent, tmp_path / "sample")
    tasks = load_sql_tasks(tmp_path / "sample" / "questions.json")
    assert len(tasks) == 25
