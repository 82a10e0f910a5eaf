"""The kernel's per-episode hooks, on a user's env (``rlf/MCP-v0``): ``episode_argument`` (a fresh hidden id per
episode, kept out of ``info``), ``answer_problem`` (an unreadable answer is feedback, except on the last turn),
``Reward.info`` (structured detail merged into the last ``info``; ``tests/travel`` covers the ``FamilyTooling.report``
it feeds), ``aopen_episode`` / ``aclose_episode`` (once per episode, whatever ends it) and ``RewardInput.call_tool``
(a reward asking the episode's server)."""

from __future__ import annotations

import asyncio
import json

from rlfactory_envs import EnvBatch
from rlfactory_envs.generic.env import McpEnv
from rlfactory_reward_models.base import Reward, RewardInput

NOTES: dict[str, list[str]] = {}


def remember(text: str, session: str = "default") -> str:
    """Keep a note for this session and list the session's notes."""
    NOTES.setdefault(session, []).append(text)
    return " / ".join(NOTES[session])


class PickyEnv(McpEnv):
    """Reads only answers that are JSON lists."""

    def __init__(self, runtime=None, **kwargs):
        if runtime is not None:  # a runtime made from another PickyEnv's
            super().__init__(runtime, **kwargs)
        else:
            super().__init__(tools=[remember], data_path=None, episode_argument="session", check_reward=False,
                             max_turns=3, **kwargs)

    def answer_problem(self, answer):
        try:
            return None if isinstance(json.loads(answer), list) else "the answer must be a JSON list"
        except ValueError:
            return "the answer is not JSON"


class DetailReward:
    reward_range = (0.0, 1.0)

    async def score(self, item: RewardInput) -> Reward:
        return Reward(1.0, {}, None, info={"picked": item.answer, "turn": "not the env's"})

    async def score_batch(self, items):
        return [await self.score(item) for item in items]


def call(name, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def test_each_episode_gets_its_own_hidden_id_left_out_of_info():
    async def run():
        batch = EnvBatch([PickyEnv(), PickyEnv()])
        try:
            resets = await batch.areset(seeds=[0, 0])
            schema = resets[0][1]["tools"][0]["function"]["parameters"]
            assert "session" not in schema.get("properties", {})
            await batch.astep([call("remember", text="first a"), call("remember", text="first b")])
            results = await batch.astep([call("remember", text="second a", session="forged"),
                                         call("remember", text="second b")])
            texts = [r.info["tool_results"][0]["text"] for r in results]
            assert texts == ["first a / second a", "first b / second b"]
            assert results[0].info["tool_results"][0]["arguments"] == {"text": "second a"}
            ids = [env.episode_id for env in batch.envs]
            assert len(set(ids)) == 2 and set(ids) <= set(NOTES)
            await batch.areset(seeds=[0, 0])
            assert not {env.episode_id for env in batch.envs} & set(ids)
        finally:
            batch.close()

    asyncio.run(run())


def test_an_unreadable_answer_is_feedback_until_the_last_turn():
    env = PickyEnv()
    try:
        env.reset(seed=0)
        obs, reward, terminated, truncated, _ = env.step("<answer>not json</answer>")
        assert not (terminated or truncated) and "the answer is not JSON" in obs
        obs, reward, terminated, truncated, _ = env.step("<answer>{}</answer>")
        assert not (terminated or truncated) and "must be a JSON list" in obs
        obs, reward, terminated, truncated, info = env.step("<answer>still not json</answer>")
        assert terminated and not truncated and info["answer"] == "still not json"
        env.reset(seed=0)
        *_, terminated, truncated, info = env.step("<answer>[1, 2]</answer>")
        assert terminated and info["answer"] == "[1, 2]"
    finally:
        env.close()


def test_reward_info_reaches_the_last_info_without_replacing_the_envs_keys():
    picky = PickyEnv()
    env = PickyEnv(picky.runtime.variant(reward_model=DetailReward()))
    picky.close()
    try:
        env.reset(seed=0)
        *_, info = env.step("<answer>[3]</answer>")
        assert info["picked"] == "[3]" and info["turn"] == 1
        assert env.last_reward.info["picked"] == "[3]"
    finally:
        env.close()


class CountingEnv(PickyEnv):
    """Opens and closes a note per episode on the server, and counts both."""

    def __init__(self, runtime=None, fail_close: bool = False, **kwargs):
        super().__init__(runtime, **kwargs)
        self.opened: list[str] = []
        self.closed: list[str] = []
        self.fail_close = fail_close

    async def aopen_episode(self, task):
        result = await self.call_episode_tool("remember", {"text": "opened"}, task)
        assert not result.is_error
        self.opened.append(self.episode_id)

    async def aclose_episode(self):
        self.closed.append(self.episode_id)
        if self.fail_close:
            raise RuntimeError("the server is gone")


class ServerVerdict:
    """A reward the server computes: what the session's notes hold."""

    reward_range = (0.0, 1.0)

    async def score(self, item: RewardInput) -> Reward:
        result = await item.call_tool("remember", {"text": "verdict"})
        return Reward(1.0 if "opened / verdict" in result.text else 0.0, {}, result.text)

    async def score_batch(self, items):
        return [await self.score(item) for item in items]


def test_open_and_close_run_once_per_episode_however_it_ends():
    env = CountingEnv()
    try:
        env.reset(seed=0)
        first = env.episode_id
        assert NOTES[first] == ["opened"] and env.opened == [first]
        env.step("<answer>[1]</answer>")
        assert env.closed == [first]
        env.reset(seed=0)
        second = env.episode_id
        env.reset(seed=0)  # reset mid-episode: the running one is closed first
        assert env.closed == [first, second]
        third = env.episode_id
    finally:
        env.close()
    assert env.closed == [first, second, third] and env.opened == [first, second, third]
    env.close()
    assert len(env.closed) == 3


def test_a_failing_close_loses_nothing():
    env = CountingEnv(fail_close=True)
    try:
        env.reset(seed=0)
        *_, terminated, _, info = env.step("<answer>[1]</answer>")
        assert terminated and info["answer"] == "[1]"
        env.reset(seed=0)
    finally:
        env.close()


def test_a_reward_asks_the_episodes_server_through_call_tool():
    async def run():
        counting = CountingEnv()
        variant = counting.runtime.variant(reward_model=ServerVerdict())
        counting.close()
        batch = EnvBatch([CountingEnv(variant), CountingEnv(variant)])
        try:
            await batch.areset(seeds=[0, 1])
            results = await batch.astep(["<answer>[1]</answer>"] * 2)
            assert [r.reward for r in results] == [1.0, 1.0]
            assert all(r.info["reward_reason"] == "opened / verdict" for r in results)
        finally:
            batch.close()

    asyncio.run(run())
