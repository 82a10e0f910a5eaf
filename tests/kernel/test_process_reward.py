"""Process (per-turn) rewards: the built-ins, users' functions, the bounds over an episode and the env's steps."""

from __future__ import annotations

import gymnasium as gym
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rlfactory_envs  # noqa: F401 - registers the ids
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.process_reward import Turn, make_process_reward
from rlfactory_envs.kernel.families import tooling_of

SEARCH = '<tool_call>{"name": "search", "arguments": {"query": "moon landing"}}</tool_call>'
UNKNOWN_TOOL = '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>'


def turn_count(turn: Turn) -> float:
    return 0.5 if turn.tool_calls else -0.5


def out_of_range(turn: Turn) -> float:
    return 3.0


def broken(turn: Turn) -> float:
    raise RuntimeError("bug")


def test_off_by_default_and_for_an_empty_setting():
    assert make_process_reward(None, 4) is None and make_process_reward({}, 4) is None
    env = gym.make("rlf/Search-NQ-v0").unwrapped
    try:
        env.reset(seed=0)
        _, reward, *_, info = env.step(SEARCH)
        assert reward == 0.0 and "process_reward" not in info and env.reward_range == (0.0, 1.0)
    finally:
        env.close()


def test_each_step_pays_its_turn_and_the_last_step_adds_the_outcome():
    env = gym.make("rlf/Search-NQ-v0", process_reward={"format": 0.4, "tool_errors": 0.4}).unwrapped
    try:
        assert env.reward_range == (-0.4, 1.4)
        env.reset(seed=0)
        steps = [env.step(action) for action in (SEARCH, UNKNOWN_TOOL, "no action at all")]
        assert [s[1] for s in steps] == pytest.approx([0.1, 0.0, 0.0])
        assert [s[4]["process_reward_parts"] for s in steps] == [
            {"format": 1.0, "tool_errors": 0.0}, {"format": 1.0, "tool_errors": -1.0},
            {"format": 0.0, "tool_errors": 0.0}]
        answer = tooling_of(env).reference_answer(env, env.task)
        _, reward, terminated, _, info = env.step(f"<answer>{answer}</answer>")
        assert terminated and info["reward_parts"]["exact_match"] == 1.0
        assert reward == pytest.approx(1.0 + 0.1) and info["process_reward"] == pytest.approx(0.1)
    finally:
        env.close()


def test_a_users_function_by_name_and_its_failures_score_the_low_end_with_the_reason():
    here = __name__
    env = gym.make("rlf/Search-NQ-v0", process_reward={f"{here}:turn_count": 1.0, f"{here}:out_of_range": 1.0,
                                                       f"{here}:broken": 1.0}).unwrapped
    try:
        env.reset(seed=0)
        _, reward, *_, info = env.step(SEARCH)
        assert reward == pytest.approx((0.5 - 1.0 - 1.0) / 4)
        assert info["process_reward_parts"] == {f"{here}:turn_count": 0.5, f"{here}:out_of_range": -1.0,
                                                f"{here}:broken": -1.0}
        assert "outside [-1, 1]" in info["process_reward_reason"] and "RuntimeError: bug" in info[
            "process_reward_reason"]
    finally:
        env.close()


@pytest.mark.parametrize("setting, message", [
    ("no_such_score", "unknown score 'no_such_score'"),
    ({"format": float("nan")}, "finite number"),
    ({"format": True}, "finite number"),
    ("tests.kernel.test_process_reward:missing", "has no attribute"),
    (42, "neither a name nor a function"),
])
def test_bad_settings_are_one_line_config_errors(setting, message):
    with pytest.raises(ConfigError, match=message):
        make_process_reward(setting, 4)


@given(weights=st.dictionaries(st.sampled_from(["format", "tool_success", "tool_errors"]),
                               st.floats(-2, 2, allow_nan=False), min_size=1),
       max_turns=st.integers(1, 12),
       turns=st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8), st.integers(0, 2), st.booleans()),
                      min_size=1, max_size=12))
def test_an_episodes_process_rewards_stay_within_the_declared_range(weights, max_turns, turns):
    reward = make_process_reward(weights, max_turns)
    total = 0.0
    for index, (calls, errors, parse_errors, answered) in enumerate(turns[:max_turns], start=1):
        paid, scores, reason = reward.score(Turn(index, "", calls, min(errors, calls), parse_errors, answered))
        assert reason is None and set(scores) == set(weights)
        total += paid
    low, high = reward.episode_range
    assert low - 1e-9 <= total <= high + 1e-9


def test_a_penalty_that_fails_counts_its_worst_not_zero():
    """A policy that makes a penalty raise (non-ASCII text, say) must not escape it: under a negative weight a
    failure counts the range's high end."""
    from rlfactory_envs.kernel.process_reward import ProcessReward, Turn

    reward = ProcessReward({f"{__name__}:broken": -0.5, "format": 1.0}, max_turns=1)
    paid, scores, why = reward.score(Turn(1, "thinking", 0, 0, 0, False))
    assert scores == {f"{__name__}:broken": 1.0, "format": 0.0} and paid == pytest.approx(-0.5)
    assert "RuntimeError: bug" in why


def test_a_blank_answer_is_not_a_readable_response():
    env = gym.make("rlf/Search-NQ-v0", process_reward={"format": 1.0}).unwrapped
    try:
        for answer, paid in (("<answer></answer>", 0.0), ("<answer> \n </answer>", 0.0), ("<answer>x</answer>", 0.25)):
            env.reset(seed=0)
            *_, info = env.step(answer)
            assert info["process_reward"] == pytest.approx(paid), answer
    finally:
        env.close()
