"""Hostile and broken model output: each case gets a clear observation, and a batch goes on."""

import json
import os
import signal
import time

import gymnasium as gym
import pytest

from rlfactory_envs import EnvBatch
from rlfactory_envs.search.env import search_server_config
from rlfactory_envs.search.tasks import SAMPLE_CORPUS_PATH
from tests.conftest import sleep_server_entry

SERVERS = {"mcpServers": {**search_server_config(str(SAMPLE_CORPUS_PATH))["mcpServers"],
                          "sleep": sleep_server_entry(timeout_s=0.5, retries=1)}}


def call(name, arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


@pytest.fixture(scope="module")
def env():
    env = gym.make("rlf/Search-NQ-v0", tool_servers=SERVERS, max_turns=50).unwrapped
    yield env
    env.close()


def step_fresh(env, action):
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert not terminated and not truncated and reward == 0.0
    return obs, info


def test_empty_response(env):
    obs, _ = step_fresh(env, "")
    assert "neither a tool call nor a final answer" in obs


def test_one_megabyte_response(env):
    obs, info = step_fresh(env, "a" * 1_000_000 + call("search", {"query": "x"}))
    assert "1,000,072 characters" in obs and "only the first 65,536 were read" in obs
    assert len(obs) <= env.runtime.max_observation_chars


def test_unknown_tool(env):
    obs, info = step_fresh(env, call("rm_rf", {"path": "/"}))
    assert "unknown tool 'rm_rf'" in obs and "search" in obs and info["tool_results"][0]["is_error"]


def test_invalid_json_arguments(env):
    obs, info = step_fresh(env, '<tool_call>\n{"name": "search", "arguments": [[[}\n</tool_call>')
    assert "Tool call 1 could not be read: it is not valid JSON (" in obs
    assert info["tool_calls"] == [] and len(info["parse_errors"]) == 1
    obs, info = step_fresh(env, '<tool_call>\n{"name": "search", "arguments": [1]}\n</tool_call>')
    assert "Tool call 1 could not be read: \"arguments\" of 'search' must be a JSON object." in obs
    obs, info = step_fresh(env, "<tool_call>\n" + "[{" * 3000 + "\n</tool_call>")
    assert "not valid JSON" in obs
    obs, info = step_fresh(env, "<tool_call>\n" + "[" * 50_000 + "\n</tool_call>")
    assert "could not be read" in obs


def test_repeated_tags_are_parsed_in_linear_time(env):
    started = time.perf_counter()
    for tag in ("<answer>", "<tool_call>", "</think>", "<search>"):
        obs, _ = step_fresh(env, tag * (env.limits.max_action_chars // len(tag)))
        assert obs
    assert time.perf_counter() - started < 5  # quadratic matching took seconds per response


def test_arguments_of_the_wrong_type(env):
    obs, info = step_fresh(env, call("search", {"query": ["a", "list"], "topk": "many"}))
    assert "invalid arguments for search" in obs and "query" in obs and "topk" in obs


def test_hundred_tool_calls_are_capped(env):
    obs, info = step_fresh(env, call("search", {"query": "mountain"}) * 100)
    assert len(info["tool_calls"]) == env.parser.max_tool_calls
    assert "100 tool calls" in obs and "ignored" in obs
    assert obs.count("<tool_response>") == env.parser.max_tool_calls


def test_tool_that_hangs_hits_the_deadline(env):
    obs, info = step_fresh(env, call("sleep", {"ms": 60_000}))
    assert "deadline" in obs and info["tool_results"][0]["is_error"]


@pytest.mark.integration
def test_server_killed_mid_episode(env):
    def pid_of(obs):
        return int(obs.split("<tool_response>\n")[1].split("\n")[0])

    env.reset(seed=0)
    obs, *_ = env.step(call("process_id", {}))
    pid = pid_of(obs)
    os.kill(pid, signal.SIGKILL)
    # The 0.5 s deadline covers the reconnect: the first call may get a deadline error while the server restarts
    # in the background; the episode goes on and the restarted server answers.
    obs, _, terminated, truncated, info = env.step(call("sleep", {"ms": 1}))
    assert not (terminated or truncated)
    assert "slept 1 ms" in obs or "deadline" in obs
    for _ in range(20):
        obs, *_ = env.step(call("sleep", {"ms": 1}))
        if "slept 1 ms" in obs:
            break
        time.sleep(0.25)
    assert "slept 1 ms" in obs
    obs, *_ = env.step(call("process_id", {}))
    assert pid_of(obs) != pid


def test_a_batch_goes_on_when_some_responses_are_hostile():
    batch = EnvBatch.make("rlf/Search-NQ-v0", 6, tool_servers=SERVERS, max_turns=5)
    try:
        resets = batch.reset(seeds=list(range(6)))
        actions = ["", "x" * 200_000, call("nope", {}), call("sleep", {"ms": 60_000}),
                   call("search", {"query": resets[4][1]["task"]["question"]}),
                   f"<answer>{resets[5][1]['task']['golden_answers'][0]}</answer>"]
        results = batch.step(actions)
        assert [r.terminated for r in results] == [False] * 5 + [True]
        assert results[5].reward == 1.0
        assert "Doc 1(Title:" in results[4].observation
        assert "deadline" in results[3].observation
    finally:
        batch.close()


def test_non_text_actions_are_a_caller_error(env):
    env.reset(seed=0)
    with pytest.raises(TypeError, match="str"):
        env.step(None)


def test_an_internal_failure_ends_one_episode_not_the_batch():
    def broken_parse(text):
        raise RuntimeError("parser bug")

    good = EnvBatch.make("rlf/Search-NQ-v0", 2).envs
    broken = type(good[0])(good[0].runtime.variant(parser=type("Broken", (), {"parse": staticmethod(broken_parse)})()))
    batch = EnvBatch([good[0], broken, good[1]])
    try:
        batch.reset(seeds=[0, 1, 2])
        results = batch.step(["hello", "hello", "hello"])
        assert results[1].truncated and results[1].info["error"] == "RuntimeError: parser bug"
        assert batch.envs[1].done and not batch.envs[0].done and not batch.envs[2].done
        assert "neither a tool call" in results[0].observation and "neither a tool call" in results[2].observation
    finally:
        batch.close()


def test_lone_surrogates_in_tool_output_become_replacement_characters():
    from rlfactory_envs.kernel.env import without_lone_surrogates
    from rlfactory_envs.kernel.tool_call import ToolResult

    lone = json.loads('"a\\ud800b \\ud83d\\ude00 c\\udfff"')  # what a tool's JSON can carry
    clean = without_lone_surrogates(lone)
    assert clean == "a\ufffdb \U0001F600 c\ufffd" and clean.encode("utf-8")
    assert without_lone_surrogates("plain é") == "plain é"
    env = gym.make("rlf/Search-NQ-v0").unwrapped
    try:
        clipped = env._clip_result(ToolResult("search", lone, False, 0.0, "search", 0))
        assert clipped.text == clean and clipped.name == "search"
    finally:
        env.close()


LONE_SURROGATE_CALL = ('<tool_call>\n{"name": "search", "arguments": {"query": "harn \\ud800", "\\udc00": ["\\udfff"]}}'
                       '\n</tool_call>')
"""A call whose JSON escapes decode to lone surrogates, which no UTF-8 request, file or tokenizer can hold."""


def test_lone_surrogate_escapes_in_a_tool_call_become_replacement_characters():
    from rlfactory_envs.kernel.dialects.base import make_call
    from rlfactory_envs.kernel.parsers import HermesToolCallParser

    (parsed,) = HermesToolCallParser().parse(LONE_SURROGATE_CALL).tool_calls
    assert parsed.arguments == {"query": "harn \ufffd", "\ufffd": ["\ufffd"]}
    paired = HermesToolCallParser().parse(
        '<tool_call>{"name": "s", "arguments": {"q": "\\ud83d\\ude00 é"}}</tool_call>')
    assert paired.tool_calls[0].arguments == {"q": "\U0001F600 é"}
    call, _ = make_call("search\ud800", {"query": ["a\udfff"]}, 0)
    assert (call.name, call.arguments) == ("search\ufffd", {"query": ["a\ufffd"]})


def test_one_calls_lone_surrogate_fails_no_other_call_merged_with_it():
    """Over stdio the merged request is encoded whole: one env's unencodable query failed every env's search."""
    batch = EnvBatch.make("rlf/Search-NQ-v0", 4, transport="stdio")
    try:
        batch.reset(seeds=[0, 1, 2, 3])
        good = call("search", {"query": "ysolde harn"})
        results = batch.step(['<tool_call>{"name": "search", "arguments": {"query": "harn \\ud800"}}</tool_call>', good,
                              good, good])
        assert [r.info["tool_results"][0]["is_error"] for r in results] == [False] * 4
        assert all("Ysolde Harn" in r.info["tool_results"][0]["text"] for r in results[1:])
        assert results[0].info["tool_calls"][0]["arguments"]["query"] == "harn \ufffd"
    finally:
        batch.close()


def test_a_number_past_pythons_digit_limit_is_named_as_such():
    from rlfactory_envs.kernel.parsers import HermesToolCallParser

    parsed = HermesToolCallParser(repair=False).parse(
        '<tool_call>{"name": "search", "arguments": {"topk": ' + "9" * 5000 + "}}</tool_call>")
    assert "4300 digits" in parsed.errors[0] and "nested" not in parsed.errors[0]


def test_a_rollout_writes_an_episode_whose_call_held_a_lone_surrogate(tmp_path):
    import asyncio

    from rlfactory_envs.rollout.runner import run_rollouts

    class Scripted:
        name = "scripted"

        async def act(self, env, observation):
            return LONE_SURROGATE_CALL if env.turn == 0 else "<answer>Corrow Pass</answer>"

    path = tmp_path / "trajectories.jsonl"
    with path.open("w", encoding="utf-8") as out:
        summary, _ = asyncio.run(run_rollouts("rlf/Search-NQ-v0", lambda env: Scripted(), 2, out=out, progress=False))
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert summary.episodes == 2 and len(lines) == 2 and "\ufffd" in lines[0]["transcript"] + json.dumps(lines[0])
