"""The two NL2SQL ids end to end: prompts, the db_id binding, pinned tasks, rewards, the scripted baseline, and
every Spider dev gold query scored against itself through the env's own reward."""

from __future__ import annotations

import asyncio
import json

import gymnasium as gym
import pytest

import rlfactory_envs  # noqa: F401 - registers the ids
from rlfactory_reward_models.base import RewardInput
from rlfactory_envs.rollout.runner import run_rollouts
from rlfactory_envs.sql.tasks import SAMPLE_NAME
from tests.conftest import shared_file
from rlfactory_envs.kernel.families import tooling_of

IDS = ["rlf/NL2SQL-Spider-v0", "rlf/NL2SQL-BIRD-v0"]
SPIDER_DEV_UNSCORED = (185, 186, 201, 202, 207, 208, 209, 210, 211, 212, 219, 220, 251, 252, 253, 254, 255, 256, 379,
                       380, 554, 700, 754, 786, 808, 809, 810, 811)
"""The Spider dev questions (indices in dev.json) whose gold result no default suite can score: the same on every
database (empty, or a count or sum over rows that match nothing anywhere), or rows on the original and none on any
variant (379, 380, 700: a constant gated on the original's data matches); listed in rlfactory_envs/sql/README.md."""


def call(name: str, **arguments) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


@pytest.fixture(scope="module", params=IDS)
def env(request):
    env = gym.make(request.param, max_turns=4).unwrapped
    yield env
    env.close()


def test_prompt_schemas_and_dataset(env):
    obs, info = env.reset(seed=0)
    assert info["dataset"] == SAMPLE_NAME and info["messages"][-1] == {"role": "user", "content": obs}
    task = info["task"]
    assert f"`{task['db_id']}`" in obs and obs.endswith(f"Question: {task['question']}")
    assert "<answer>" in obs
    names = [tool["function"]["name"] for tool in info["tools"]]
    assert names == ["list_tables", "describe_table", "run_query"]
    for tool in info["tools"]:  # the env binds db_id: the model never sees it
        assert "db_id" not in tool["function"]["parameters"]["properties"]
        assert "db_id" not in tool["function"]["parameters"].get("required", [])
    assert info["tools"] == [spec.openai_schema() for spec in env.tool_specs]


def test_evidence_is_shown_by_bird_only(env):
    pinned = {"db_id": "bookshop", "question": "How many novels?", "SQL": "SELECT count(*) FROM books WHERE "
              "genre = 'novel'", "evidence": "novels are books whose genre is 'novel'"}
    obs, info = env.reset(options={"task": pinned})
    assert ("External knowledge: novels are books" in obs) == (env.runtime.dataset == "bird")
    assert info["task"]["gold_sql"] == pinned["SQL"]


def test_a_model_reaches_only_its_own_database(env):
    env.reset(options={"task": {"db_id": "school", "question": "How many students?",
                                "query": "SELECT count(*) FROM students"}})
    obs, *_ = env.step(call("list_tables", db_id="bookshop") + call("run_query", sql="SELECT count(*) FROM books",
                                                                    db_id="bookshop"))
    assert "Database school has 3 tables" in obs and "no such table: books" in obs
    obs, *_ = env.step(call("run_query", sql="SELECT count(*) FROM students", db_id="../../etc/passwd"))
    assert "\n18\n" in obs


def test_pinned_tasks_in_spider_and_bird_layout_and_their_errors(env):
    _, info = env.reset(options={"task": {"db_id": "tramways", "question": "Zone 1?", "query": "SELECT 1"}})
    assert info["task"]["db_id"] == "tramways" and info["task_id"] == "pinned"
    _, info = env.reset(options={"task": {"question_id": 7, "db_id": "school", "question": "q", "SQL": "SELECT 1",
                                          "evidence": ""}})
    assert info["task_id"] == "7"
    with pytest.raises(ValueError, match="no database 'world_1'"):
        env.reset(options={"task": {"db_id": "world_1", "question": "q", "query": "SELECT 1"}})
    with pytest.raises(ValueError, match="gold query"):
        env.reset(options={"task": {"db_id": "school", "question": "q"}})
    task_id = env.tasks[3].task_id
    assert env.reset(options={"task_id": task_id})[1]["task_id"] == task_id


def test_the_answer_is_scored_by_execution(env):
    env.reset(options={"task_id": "0"})
    fenced = "<answer>\n```sql\nSELECT count(book_id) FROM books\n```\n</answer>"
    _, reward, terminated, truncated, info = env.step(fenced)
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["reward_parts"]["execution_match"] == 1.0 and info["reward_reason"] is None
    env.reset(options={"task_id": "0"})
    _, reward, terminated, _, info = env.step("<answer>SELECT 1; DROP TABLE books</answer>")
    assert reward == 0.0 and terminated and "exactly one statement" in info["reward_reason"]


def test_an_episode_without_an_answer_scores_zero(env):
    env.reset(seed=4)
    for _ in range(env.max_turns):
        _, reward, terminated, truncated, info = env.step(call("list_tables"))
    assert truncated and not terminated and reward == 0.0 and info["reward_reason"] == "no final answer"


def test_data_from_environment_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("RLF_SQL_DATA", str(shared_file("spider/dev.json")))
    env = gym.make("rlf/NL2SQL-Spider-v0").unwrapped
    try:
        assert env.tasks.name == "spider-dev" and len(env.tasks) == 972
        assert env.runtime.db_dir.endswith("database")
    finally:
        env.close()


def test_db_dir_without_questions_is_refused(tmp_path):
    with pytest.raises(ValueError, match="data_path"):
        gym.make("rlf/NL2SQL-Spider-v0", db_dir=str(tmp_path))


@pytest.mark.parametrize("env_id", IDS)
def test_scripted_baseline_shows_the_env_working_and_says_it_is_an_oracle(env_id):
    summary, records = asyncio.run(run_rollouts(env_id, lambda env: tooling_of(env).baseline_policy(env), batch_size=25,
                                                progress=False, env_kwargs={"max_turns": 5}))
    assert summary.episodes == 25 and summary.tasks["distinct"] == 25  # every task of the sample, once
    assert summary.failed == 0 and summary.tool_errors == 0 and summary.tool_calls == 3 * 25
    assert all(r.terminated for r in records)
    unscored = [r for r in records if not r.solved]
    assert all("unscored" in r.reward_reason for r in unscored) and len(unscored) <= 2, \
        [(r.task_id, r.reward_reason) for r in unscored]
    assert "oracle" in summary.policy["description"] and "oracle" in summary.table()


def test_every_spider_dev_gold_query_scores_one_against_itself():
    dev = shared_file("spider/dev.json")
    env = gym.make("rlf/NL2SQL-Spider-v0", data_path=str(dev)).unwrapped
    try:
        tasks = list(env.tasks)
        assert len(tasks) == 972  # 1,034 questions; wta_1's 62 have no database in the shared copy
        rewards = asyncio.run(env.reward_model.score_batch([RewardInput(task, task.gold_sql) for task in tasks]))
        failures = [(t.task_id, t.gold_sql, r.reason) for t, r in zip(tasks, rewards)
                    if r.value != 1.0 and "unscored" not in r.reason]
        assert not failures, failures[:5]
        unscored = {t.task_id: r.reason for t, r in zip(tasks, rewards) if r.value != 1.0}
        empty = [task_id for task_id, reason in unscored.items() if "empty_gold" in reason]
        assert len(unscored) == 28 and len(empty) == 13  # of the 49 empty on the original; 12 constants everywhere
        assert sorted(map(int, unscored)) == sorted(SPIDER_DEV_UNSCORED)
    finally:
        env.close()


def test_spider_dev_episode_through_the_tools():
    env = gym.make("rlf/NL2SQL-Spider-v0", data_path=str(shared_file("spider/dev.json"))).unwrapped
    try:
        obs, info = env.reset(options={"task_id": "0"})
        assert info["task"]["db_id"] == "concert_singer" and "How many singers" in obs
        obs, *_ = env.step(call("describe_table", table="singer"))
        assert "Table singer (6 rows)" in obs
        _, reward, terminated, _, _ = env.step("<answer>SELECT count(*) FROM singer</answer>")
        assert reward == 1.0 and terminated
    finally:
        env.close()


@pytest.mark.integration
def test_the_server_as_a_stdio_subprocess_behind_the_env():
    env = gym.make("rlf/NL2SQL-Spider-v0", transport="stdio").unwrapped
    try:
        env.reset(options={"task_id": "9"})
        obs, *_ = env.step(call("run_query", sql="SELECT count(*) FROM students WHERE city = 'Orlanne'"))
        assert "count(*)\n4\n(1 row)" in obs
    finally:
        env.close()


@pytest.mark.integration
def test_sql_server_over_streamable_http_with_the_db_id_bound(tmp_path):
    from rlfactory_envs.sql.tasks import SAMPLE_DB_DIR
    from tests.server_process import http_tool_server

    with http_tool_server("rlfactory_tool_servers.sql", "--db-dir", str(SAMPLE_DB_DIR)) as url:
        env = gym.make("rlf/NL2SQL-Spider-v0", tool_servers={"mcpServers": {"sql": {"url": url}}}).unwrapped
        try:
            _, info = env.reset(seed=0)
            call = {"name": "run_query", "arguments": {"sql": "SELECT count(*) FROM sqlite_master",
                                                       "db_id": "someone_else"}}
            obs, *_ = env.step(f"<tool_call>\n{json.dumps(call)}\n</tool_call>")
            assert "<tool_response>\ncount(*)" in obs and "(1 row)" in obs
            tables = env.step('<tool_call>\n{"name": "list_tables", "arguments": {}}\n</tool_call>')[0]
            assert f"Database {info['task']['db_id']} has" in tables
        finally:
            env.close()
