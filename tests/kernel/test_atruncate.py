"""``ToolEnv.atruncate``: a trainer's token budget ends the episode as truncated, scored without an answer."""

from __future__ import annotations

import gymnasium as gym
import pytest

import rlfactory_envs  # noqa: F401
from rlfactory_envs import EpisodeOver


@pytest.fixture
def env():
    env = gym.make("rlf/Search-NQ-v0").unwrapped
    yield env
    env.close()


async def test_a_cut_response_is_recorded_not_run(env):
    await env.areset(seed=0)
    cut = '<tool_call>\n{"name": "search", "arguments": {"query": "Mount'
    obs, reward, terminated, truncated, info = await env.atruncate("response_length", cut)
    assert (obs, reward, terminated, truncated) == ("", 0.0, False, True)
    assert info["truncation_reason"] == "response_length" and info["tool_calls"] == [] and info["turn"] == 1
    assert env.done and env.turn == 1 and env.transcript.endswith(cut)
    assert env.messages[-1] == {"role": "assistant", "content": cut}
    with pytest.raises(EpisodeOver):
        await env.astep("more")


async def test_without_an_action_nothing_is_added_to_the_transcript(env):
    await env.areset(seed=0)
    await env.astep('<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>')
    before = env.transcript
    _, reward, terminated, truncated, info = await env.atruncate("response_length")
    assert (reward, terminated, truncated, info["turn"], info["messages"]) == (0.0, False, True, 1, [])
    assert env.transcript == before and env.done


async def test_an_answer_in_a_cut_response_is_not_scored(env):
    _, info = await env.areset(seed=0)
    gold = info["task"]["golden_answers"][0]
    _, reward, *_ = await env.atruncate("response_length", f"<answer>{gold}</answer> and more")
    assert reward == 0.0


async def test_truncating_before_reset_or_after_the_end_raises(env):
    with pytest.raises(EpisodeOver):
        await env.atruncate("response_length")
    await env.areset(seed=0)
    await env.atruncate("response_length")
    with pytest.raises(EpisodeOver):
        await env.atruncate("response_length")
