"""The search family's own properties over the embedded sample, in both formats (the env semantics of both ids are in
``tests/test_semantics.py``)."""

import asyncio
import json

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlfactory_envs import EnvBatch

FORMATS = ["rlf/Search-NQ-v0", "rlf/Search-NQ-SearchR1-v0"]
ENV_KWARGS = {"max_turns": 3, "max_action_chars": 4096}


@pytest.fixture(scope="module", params=FORMATS)
def env(request):
    env = gym.make(request.param, **ENV_KWARGS).unwrapped
    yield env
    env.close()


def call(query, name="search"):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": {"query": query}}) + "\n</tool_call>"


@settings(max_examples=15, deadline=None)
@given(plan=st.lists(st.sampled_from(["search", "answer", "junk", "skip"]), min_size=2, max_size=12),
       seed=st.integers(0, 1000))
def test_batch_outputs_align_with_inputs(plan, seed):
    async def run():
        batch = EnvBatch.make("rlf/Search-NQ-v0", len(plan), max_turns=3)
        try:
            resets = await batch.areset(seeds=[seed + i for i in range(len(plan))])
            questions = [info["task"]["question"] for _, info in resets]
            answers = [info["task"]["golden_answers"][0] for _, info in resets]
            texts = {"search": lambda i: call(questions[i]), "answer": lambda i: f"<answer>{answers[i]}</answer>",
                     "junk": lambda i: f"junk {i}", "skip": lambda i: None}
            results = await batch.astep([texts[kind](i) for i, kind in enumerate(plan)])
            for i, (kind, result) in enumerate(zip(plan, results)):
                if kind == "skip":
                    assert result is None
                    continue
                assert result.info["task_id"] == resets[i][1]["task_id"]
                if kind == "answer":
                    assert result.terminated and result.reward == 1.0
                elif kind == "search":
                    assert result.info["tool_calls"][0]["arguments"]["query"] == questions[i]
                    assert "<tool_response>" in result.observation
                else:
                    assert "neither a tool call nor a final answer" in result.observation
        finally:
            batch.close()

    asyncio.run(run())


def test_options_pin_tasks(env):
    obs, info = env.reset(options={"task": {"question": "Who wrote Hamlet?", "golden_answers": ["Shakespeare"]}})
    assert "Who wrote Hamlet?" in obs and info["task"]["golden_answers"] == ["Shakespeare"]
    task_id = env.tasks[5].task_id
    _, info = env.reset(options={"task_id": task_id})
    assert info["task_id"] == task_id
    with pytest.raises(KeyError, match="no task with id"):
        env.reset(options={"task_id": "no-such-id"})
    with pytest.raises(ValueError, match="question"):
        env.reset(options={"task": {"golden_answers": ["x"]}})


def test_info_names_the_dataset_and_carries_messages_and_calls(env):
    obs, info = env.reset(seed=1)
    assert info["dataset"] == "rlf-search-sample"
    assert info["messages"][-1] == {"role": "user", "content": obs}
    # Search-R1's prompt describes its <search> protocol in words: no tool schemas for the chat template
    expected_tools = ["search"] if env.chat_format.name == "qwen3" else []
    assert [t["function"]["name"] for t in info["tools"]] == expected_tools
    action = call(info["task"]["question"]) if env.chat_format.name == "qwen3" else f"<search>{info['task']['question']}</search>"
    obs, _, _, _, info = env.step(action)
    assert info["tool_calls"] == [{"name": "search", "arguments": {"query": env.task.question}}]
    assert [m["role"] for m in info["messages"]] == ["assistant", "tool"]
    assert info["tool_results"][0]["text"].startswith("Doc 1(Title: ")
    assert env.transcript.endswith(action + obs)


def test_a_closed_env_says_so():
    env = gym.make("rlf/Search-NQ-v0").unwrapped
    env.reset(seed=0)
    env.close()
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.reset(seed=0)


def test_ansi_render_is_the_transcript():
    env = gym.make("rlf/Search-NQ-v0", render_mode="ansi").unwrapped
    try:
        obs, _ = env.reset(seed=0)
        step_obs, *_ = env.step("hello")
        assert env.render() == obs + "hello" + step_obs
    finally:
        env.close()


async def test_a_cancelled_step_leaves_no_trace():
    servers = {"mcpServers": {"sleep": {"module": "rlfactory_tool_servers.sleep"}}}
    env = gym.make("rlf/Search-NQ-v0", tool_servers=servers, max_turns=3).unwrapped
    try:
        await env.areset(seed=0)
        before = (env.turn, env.messages, env.transcript)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(env.astep('<tool_call>{"name": "sleep", "arguments": {"ms": 2000}}</tool_call>'), 0.2)
        assert (env.turn, env.messages, env.transcript) == before
        obs, _, _, _, info = await env.astep('<tool_call>{"name": "sleep", "arguments": {"ms": 1}}</tool_call>')
        assert info["turn"] == 1 and "slept 1 ms" in obs
    finally:
        env.close()
