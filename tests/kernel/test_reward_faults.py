"""A reward that hangs, raises or whose judge endpoint is down ends its episode with the failure recorded, never a
stuck batch; an episode whose tool calls hit a deadline says so, and the rollout summary counts both."""

from __future__ import annotations

import asyncio
import socket
import time

import gymnasium as gym

import rlfactory_envs  # noqa: F401
from rlfactory_envs import EnvBatch
from rlfactory_reward_models.base import Reward, RewardInput
from rlfactory_envs.rollout.runner import EpisodeRecord, summarise


class HangingReward:
    reward_range = (0.0, 1.0)

    async def score(self, item: RewardInput) -> Reward:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def score_batch(self, items):
        return [await self.score(item) for item in items]


class RaisingReward(HangingReward):
    async def score(self, item: RewardInput) -> Reward:
        raise ConnectionError("judge endpoint down")


def answer_env(reward_model=None, **kwargs):
    """An ``rlf/MCP-v0`` env scored by ``reward_model`` (default: its own), on a runtime of its own."""
    env = gym.make("rlf/MCP-v0", **kwargs).unwrapped
    if reward_model is None:
        return env
    variant = env.runtime.variant(reward_model=reward_model)
    env.close()
    return type(env)(variant)


def test_a_hanging_reward_ends_the_episode_at_its_deadline_and_the_batch_goes_on():
    hanging, healthy = answer_env(HangingReward(), reward_timeout_s=0.5), answer_env()  # rlf/MCP-v0's own
    batch = EnvBatch([hanging, healthy])
    try:
        asyncio.run(batch.areset(seeds=[0, 0]))
        started = time.monotonic()
        stuck, fine = asyncio.run(batch.astep(["<answer>42</answer>"] * 2))
        assert time.monotonic() - started < 30
        assert stuck.terminated and stuck.reward == 0.0 and stuck.info["reward_failed"] is True
        assert "no score within reward_timeout_s=0.5" in stuck.info["reward_reason"]
        assert fine.terminated and "reward_failed" not in fine.info
    finally:
        batch.close()


def test_a_raising_reward_is_recorded_as_failed():
    env = answer_env(RaisingReward())
    try:
        env.reset(seed=0)
        *_, reward, terminated, _, info = env.step("<answer>42</answer>")
        assert terminated and reward == 0.0 and info["reward_failed"] is True
        assert "judge endpoint down" in info["reward_reason"]
    finally:
        env.close()


def test_a_judge_whose_endpoint_is_down_scores_zero_with_the_reason():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    judge = {"base_url": f"http://127.0.0.1:{port}/v1", "model": "m", "max_retries": 0, "timeout_s": 5}
    env = answer_env(reward="judge", judge=judge)
    try:
        env.reset(seed=0)
        started = time.monotonic()
        *_, reward, terminated, _, info = env.step("<answer>42</answer>")
        assert time.monotonic() - started < 30
        assert terminated and reward == 0.0 and info["reward_reason"]
    finally:
        env.close()


def test_failed_tool_calls_are_counted_in_info_and_the_summary():
    servers = {"mcpServers": {"faulty": {"module": "rlfactory_tool_servers.faulty", "timeout_s": 0.5,
                                         "retries": 0}}}
    env = answer_env(tool_servers=servers, check_reward=False)
    try:
        env.reset(seed=0)
        obs, *_ = env.step('<tool_call>{"name": "hang", "arguments": {}}</tool_call>')
        assert "answer within" in obs and "(deadline)" in obs
        *_, info = env.step("<answer>42</answer>")
        assert info["failed_tool_calls"] == 1
    finally:
        env.close()
    record = EpisodeRecord(env_id="e", seed=0, dataset="d", task={}, messages=[], transcript="", reward=0.0,
                           reward_parts={}, answer="42", terminated=True, truncated=False, turns=2, tool_calls=1,
                           tool_errors=1, failed_tool_calls=1, reward_info={"reward_failed": True})
    summary = summarise([record, EpisodeRecord(**{**record.__dict__, "failed_tool_calls": 0, "reward_info": {}})],
                        1.0)
    assert (summary.rewards_failed, summary.rewards_after_failed_calls) == (1, 1)
    assert "rewards failed / at risk" in summary.table()
