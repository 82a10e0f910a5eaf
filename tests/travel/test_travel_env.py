"""``rlf/Travel-v0`` end to end: the sandbox tools through the env, the plan as the answer, the official verdict in
``info``, the scripted baseline, the benchmark's table from ``rlf rollout``, ``rlf eval-plans``, and the env
semantics through ``rlfactory_envs.testing``."""

from __future__ import annotations

import asyncio
import json

import gymnasium as gym
import pytest

import rlfactory_envs  # noqa: F401
from rlfactory_envs import EnvBatch
from rlfactory_envs.rollout.runner import run_rollouts
from rlfactory_envs.travel.family import SAMPLE_PLANS_PATH, SAMPLE_QUERIES_PATH
from tests.conftest import shared_file
from tests.test_cli import rlf
from rlfactory_envs.kernel.families import tooling_of
from rlfactory_envs.kernel.tool_call import ToolCall

QUERIES = {row["idx"]: row for row in map(json.loads, SAMPLE_QUERIES_PATH.read_text().splitlines())}
PLANS = {row["idx"]: row["plan"] for row in map(json.loads, SAMPLE_PLANS_PATH.read_text().splitlines())}


def call(name, **arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def answer(plan) -> str:
    return "<answer>" + json.dumps(plan) + "</answer>"


def test_an_episode_gathers_with_the_tools_and_is_scored_by_the_official_constraints():
    env = gym.make("rlf/Travel-v0")
    try:
        obs, info = env.reset(options={"task_id": "1"})
        query = QUERIES[1]
        assert info["dataset"] == "rlf-travel-sample" and query["query"] in obs
        tools = {tool["function"]["name"]: tool["function"] for tool in info["tools"]}
        assert {"search_flights", "distance_matrix", "search_accommodations", "search_restaurants",
                "search_attractions", "search_cities", "notebook_write", "notebook_read"} <= set(tools)
        assert all("session" not in t["parameters"].get("properties", {}) for t in tools.values())
        obs, reward, terminated, truncated, info = env.step(
            call("search_flights", origin=query["org"], destination=query["dest"], date=query["date"][0]))
        assert "Flight Number" in obs and not (terminated or truncated)
        assert info["tool_results"][0]["arguments"] == {"origin": query["org"], "destination": query["dest"],
                                                        "date": query["date"][0]}
        obs, reward, terminated, truncated, info = env.step(call("notebook_write", description="outbound flights"))
        assert "index is 0" in obs
        obs, reward, terminated, truncated, info = env.step(answer(PLANS[1]))
        assert (reward, terminated, truncated) == (1.0, True, False)
        verdict = info["travel_eval"]
        assert verdict["final_pass"] and verdict["delivered"] and verdict["hard"]["valid_cost"] is True
        assert verdict["hard"]["valid_cuisine"] is None  # an easy query sets no cuisine
        assert info["reward_parts"]["pass_rate"] == 1.0
    finally:
        env.close()


def test_an_unreadable_plan_is_told_to_the_model_and_scores_zero_on_the_last_turn():
    env = gym.make("rlf/Travel-v0", max_turns=2)
    try:
        env.reset(options={"task_id": "2"})
        obs, reward, terminated, truncated, info = env.step("<answer>my plan: go there and back</answer>")
        assert not (terminated or truncated) and "Your plan could not be read" in obs
        obs, reward, terminated, truncated, info = env.step("<answer>{'days': </answer>")
        assert terminated and reward == 0.0
        assert info["travel_eval"]["delivered"] is False and "plan" in info["reward_reason"]
    finally:
        env.close()


def test_a_plan_breaking_the_budget_fails_exactly_that():
    query = dict(QUERIES[4], budget=100)
    env = gym.make("rlf/Travel-v0")
    try:
        env.reset(options={"task": query})
        *_, info = env.step(answer(PLANS[4]))
        verdict = info["travel_eval"]
        assert verdict["commonsense_pass"] and not verdict["final_pass"]
        assert [name for name, ok in verdict["hard"].items() if ok is False] == ["valid_cost"]
        assert info["reward_reason"].startswith("valid_cost: The plan costs")
    finally:
        env.close()


def test_the_pass_rate_reward_is_denser():
    env = gym.make("rlf/Travel-v0", reward="pass_rate")
    try:
        env.reset(options={"task": dict(QUERIES[4], budget=100)})
        _, reward, *_ = env.step(answer(PLANS[4]))
        assert reward == pytest.approx(8 / 9)  # eight commonsense passed, the budget failed
    finally:
        env.close()


def test_each_episode_has_its_own_notebook():
    async def run():
        batch = EnvBatch.make("rlf/Travel-v0", 2)
        try:
            await batch.areset(seeds=[0, 1])
            await batch.astep([call("search_cities", state="Veradon"), call("search_restaurants", city="Glenhallow")])
            await batch.astep([call("notebook_write", description="mine")] * 2)
            results = await batch.astep([call("notebook_read")] * 2)
            first, second = (r.info["tool_results"][0]["text"] for r in results)
            assert "The cities in Veradon" in first and "Glenhallow" not in first
            assert "Glenhallow" in second and "The cities in" not in second
        finally:
            batch.close()

    asyncio.run(run())


def test_an_episode_s_notebook_is_dropped_when_it_ends_and_the_model_never_sees_the_close():
    env = gym.make("rlf/Travel-v0").unwrapped
    try:
        _, info = env.reset(seed=0)
        assert "notebook_close" not in {tool["function"]["name"] for tool in info["tools"]}
        env.step(call("search_cities", state="Veradon"))
        env.step(call("notebook_write", description="cities"))
        ended = env.episode_id
        read = ToolCall("notebook_read", {}, episode=ended)
        assert "The cities in Veradon" in env.toolbox.call_many([read])[0].text
        *_, terminated, _, _ = env.step(answer(PLANS[1]))
        assert terminated and env.toolbox.call_many([read])[0].text == "The Notebook is empty."
    finally:
        env.close()


def test_the_scripted_baseline_passes_most_sample_queries_and_rollout_reports_the_official_table():
    summary, records = asyncio.run(run_rollouts("rlf/Travel-v0", lambda env: tooling_of(env).baseline_policy(env),
                                                len(QUERIES), batch_size=8, progress=False))
    assert summary.failed == 0 and summary.tool_calls > 10 * len(records)
    assert summary.report["rates"]["Final Pass Rate"] >= 0.7
    assert summary.report["rates"]["Delivery Rate"] == 1.0
    assert "Final Pass Rate" in summary.table() and "Commonsense Constraint Micro Pass Rate" in summary.table()
    assert all("travel_eval" in record.reward_info for record in records)


def test_rlf_rollout_and_eval_plans_from_the_command_line(tmp_path):
    result = rlf("rollout", "rlf/Travel-v0", "-n", "6", "--no-progress")
    assert result.returncode == 0, result.stderr
    assert "Hard Constraint Micro Pass Rate" in result.stdout and "Delivery Rate" in result.stdout
    details = tmp_path / "details.jsonl"
    result = rlf("eval-plans", str(SAMPLE_PLANS_PATH), "--queries", str(SAMPLE_QUERIES_PATH), "--details",
                 str(details), "--json", str(tmp_path / "rates.json"))
    assert result.returncode == 0, result.stderr
    assert "Final Pass Rate                         100.00%" in result.stdout
    assert len(details.read_text().splitlines()) == len(QUERIES)
    assert json.loads((tmp_path / "rates.json").read_text())["hard_total"] == 56
    result = rlf("eval-plans", str(tmp_path / "missing.jsonl"))
    assert result.returncode == 2 and "missing.jsonl" in result.stderr and "Traceback" not in result.stderr


def test_the_training_queries_play_with_the_reference_flights():
    data, database, flights = (shared_file(f"travelplanner/{name}") for name in
                               ("std_travelplanner.jsonl", "database", "train_ref_info.jsonl"))
    from rlfactory_envs.travel.tasks import load_gold_plans

    env = gym.make("rlf/Travel-v0", data_path=str(data), database_dir=str(database), flights_path=str(flights))
    try:
        obs, info = env.reset(options={"task_id": "0"})
        assert info["task"]["org"] == "St. Petersburg" and info["task"]["dest"] == "Rockford"
        obs, *_ = env.step(call("search_flights", origin="St. Petersburg", destination="Rockford",
                                date="2022-03-16"))
        assert "F3573659" in obs
        _, reward, terminated, _, info = env.step("<answer>" + repr(load_gold_plans(data)[0]) + "</answer>")
        assert terminated and reward == 1.0, info["travel_eval"]["messages"]
    finally:
        env.close()


def test_data_path_without_database_dir_is_one_clear_error():
    with pytest.raises(ValueError, match="database_dir"):
        gym.make("rlf/Travel-v0", data_path="queries.jsonl")


