"""The judge as an env reward: ``reward={"exact_match": ..., "judge": ...}`` with ``judge=`` over a real HTTP
endpoint, shared by every env of a batch (one cache: identical answers of a group are judged once)."""

from __future__ import annotations

import asyncio

import gymnasium as gym
import pytest

import rlfactory_envs  # noqa: F401 - registers the ids
from rlfactory_envs.kernel.batch import EnvBatch
from tests.reward_models.judge_endpoint import ScriptedJudge, serve
from rlfactory_envs.kernel.families import tooling_of


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
