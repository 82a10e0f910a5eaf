"""The judge as an env reward: ``reward={"exact_match": ..., "judge": ...}`` with ``judge=`` over a real HTTP
endpoint, shared by every env of a batch (one cache: identical answers of a group are judged once)."""

from __future__ import annotations

import asyncio
import json
import re

import gymnasium as gym
import pytest

import rlfactory_envs  # noqa: F401 - registers the ids
from rlfactory_envs.kernel.batch import EnvBatch
from tests.reward_models.judge_endpoint import ScriptedJudge, serve
from rlfactory_envs.kernel.families import tooling_of
from rlfactory_envs.rollout.model_free import ReferencePolicy
from rlfactory_envs.rollout.runner import run_rollouts


def test_a_batch_of_envs_shares_one_judge_and_judges_each_distinct_answer_once():
    judge = ScriptedJudge()
    with serve(judge) as url:
        settings = {"reward": {"exact_match": 0.5, "judge": 0.5}, "judge": {"base_url": url, "model": judge.model}}

        async def run():
            batch = EnvBatch.make("rlf/Search-NQ-v0", 8, **settings)
            try:
                await batch.areset(options=[{"task_id": batch.envs[0].tasks[0].task_id}] * 8)
                golden = tooling_of(batch.envs[0]).reference_answer(batch.envs[0], batch.envs[0].task)
                answers = [golden] * 5 + ["surely wrong"] * 3   # a GRPO group: 8 samples, 2 distinct answers
                return await batch.astep([f"<answer>{a}</answer>" for a in answers]), batch.envs
            finally:
                batch.close()

        results, envs = asyncio.run(run())
    judges = {id(model) for env in envs for model in env.reward_model.models if type(model).__name__ == "JudgeReward"}
    assert len(judges) == 1
    assert judge.count == 2 and len(set(judge.answers())) == 2
    assert [r.reward for r in results] == [1.0] * 5 + [0.0] * 3
    assert all(r.info["reward_parts"]["judge"] == r.info["reward_parts"]["exact_match"] for r in results)


def test_a_judge_that_is_down_scores_its_term_zero_with_the_reason_and_the_episode_ends():
    env = gym.make("rlf/Search-NQ-v0", reward={"exact_match": 0.5, "judge": 0.5},
                   judge={"base_url": "http://127.0.0.1:9/v1", "model": "m", "max_retries": 0, "timeout_s": 5})
    try:
        env.reset(seed=0)
        golden = tooling_of(env.unwrapped).reference_answer(env.unwrapped, env.unwrapped.task)
        _, reward, terminated, _, info = env.step(f"<answer>{golden}</answer>")
        assert terminated and reward == pytest.approx(0.5) and info["reward_parts"]["judge"] == 0.0
        assert "judge" in info["reward_reason"]
    finally:
        env.close()


# -- a broken judge is a failure, not a wrong answer (issue 31) ------------------------------------------------------

DEAD_JUDGE = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "max_retries": 0, "timeout_s": 5}


def test_a_dead_judge_is_counted_shown_kept_in_the_file_and_fails_the_rollout(tmp_path, capsys):
    from rlfactory_envs.cli import main

    out, summary = tmp_path / "run.jsonl", tmp_path / "summary.json"
    status = main(["rollout", "rlf/Search-NQ-v0", "--policy", "reference", "-n", "2", "--no-progress",
                   "--out", str(out), "--summary-json", str(summary),
                   "--set", 'reward={"exact_match": 0.5, "judge": 0.5}', "--set", f"judge={json.dumps(DEAD_JUDGE)}"])
    printed = capsys.readouterr()
    assert status == 1 and "judge failed in every episode (judge: judge unreachable" in printed.err
    assert re.search(r"reward terms failed +judge 2\n", printed.out)
    assert re.search(r"reward failed because +2 x judge: judge unreachable", printed.out)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(line["reward_info"]["failed_terms"] == ["judge"] and line["reward_info"]["judge"]["failed"]
               and "connection refused" in line["reward_reason"] for line in lines)
    assert json.loads(summary.read_text())["reward_terms_failed"] == {"judge": 2}


def test_an_unreadable_judge_alone_counts_as_failed_rewards():
    judge = ScriptedJudge(default="I would rather not say.")
    with serve(judge) as url:
        summary, records = asyncio.run(run_rollouts(
            "rlf/Search-NQ-v0", lambda env: ReferencePolicy(), 2, progress=False,
            env_kwargs={"reward": "judge", "judge": {"base_url": url, "model": judge.model}}))
    assert summary.rewards_failed == 2 and summary.rewards_unusable.startswith("the reward failed in every episode")
    assert all("judge reply unreadable" in r.reward_reason and r.reward_info["reward_failed"] for r in records)


def test_the_judges_verdicts_outlive_the_envs_that_asked_for_them():
    judge = ScriptedJudge()
    with serve(judge) as url:
        settings = {"reward": {"exact_match": 0.5, "judge": 0.5}, "judge": {"base_url": url, "model": judge.model}}
        for _ in range(2):  # two rollouts in one process: every env of the first is closed before the second
            summary, _ = asyncio.run(run_rollouts("rlf/Search-NQ-v0", lambda env: ReferencePolicy(), 3,
                                                  progress=False, env_kwargs=settings))
            assert summary.mean_reward == 1.0
    assert judge.count == 3
