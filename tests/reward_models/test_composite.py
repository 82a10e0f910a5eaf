"""Composed rewards: the weighted sum, its declared bounds, shared models scored once, failing terms, and the
``reward=``/``judge=`` settings of every family."""

from __future__ import annotations

import asyncio
import math

import gymnasium as gym
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rlfactory_envs  # noqa: F401 - registers the ids
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_reward_models.base import Reward, RewardInput, RewardModelBase
from rlfactory_reward_models.composite import RewardTerm, WeightedReward
from rlfactory_reward_models.function_reward import FunctionReward
from rlfactory_envs.kernel.families import tooling_of


class Fixed(RewardModelBase):
    """Scores every episode ``value`` with ``parts``; counts its calls."""

    def __init__(self, value, parts=None, reward_range=(0.0, 1.0), fail=False):
        self.value, self.parts, self.reward_range, self.fail, self.calls = value, parts or {}, reward_range, fail, 0

    async def score(self, item):
        self.calls += 1
        if self.fail:
            raise RuntimeError("down")
        return Reward(self.value, self.parts, None, {"seen": self.value})


ITEM = RewardInput(task=None, answer="a")


def score(model, item=ITEM):
    return asyncio.run(model.score(item))


unit = st.floats(0, 1, allow_nan=False)
weight = st.floats(-3, 3, allow_nan=False)


@given(st.lists(st.tuples(unit, weight), min_size=1, max_size=6))
def test_the_value_is_the_weighted_sum_and_lies_in_the_declared_range(terms):
    models = [Fixed(v) for v, _ in terms]
    reward = WeightedReward([RewardTerm(f"t{i}", m, w) for i, (m, (_, w)) in enumerate(zip(models, terms))])
    result = score(reward)
    expected = math.fsum(v * w for v, w in terms)
    assert result.value == pytest.approx(expected, abs=1e-9)
    low, high = reward.reward_range
    assert low <= result.value <= high
    assert low == pytest.approx(math.fsum(min(0, w) for _, w in terms))
    assert high == pytest.approx(math.fsum(max(0, w) for _, w in terms))
    assert {f"t{i}": v for i, (v, _) in enumerate(terms)}.items() <= result.parts.items()


def test_terms_that_share_a_model_score_it_once_and_read_its_parts():
    shared = Fixed(1.0, {"exact_match": 1.0, "f1": 0.5, "extra": 0.25})
    reward = WeightedReward([RewardTerm("exact_match", shared, 0.6, "exact_match"),
                             RewardTerm("f1", shared, 0.4, "f1")])
    result = score(reward)
    assert shared.calls == 1 and result.value == pytest.approx(0.8)
    assert result.parts == {"exact_match": 1.0, "f1": 0.5, "extra": 0.25} and result.info == {"seen": 1.0}


@pytest.mark.parametrize("model, part, why", [
    (Fixed(0.5, fail=True), None, "raised RuntimeError: down"),
    (Fixed(2.0), None, "outside [0, 1]"),
    (Fixed(float("nan")), None, "outside [0, 1]"),
    (Fixed(1.0), "missing", "no part 'missing'"),
])
def test_a_failing_term_counts_its_low_end_with_the_reason_and_the_others_still_count(model, part, why):
    reward = WeightedReward([RewardTerm("bad", model, 0.5, part), RewardTerm("good", Fixed(1.0), 0.5)])
    result = score(reward)
    assert result.value == pytest.approx(0.5) and result.parts["bad"] == 0.0
    assert result.reason.startswith("bad: ") and why in result.reason


class Flagged(RewardModelBase):
    """A model that gave no verdict: ``value`` marked ``reward_failed`` (a judge that could not be read)."""

    reward_range = (0.0, 1.0)

    async def score(self, item):
        return Reward(0.0, {}, "no verdict", {"reward_failed": True})


@pytest.mark.parametrize("model", [Fixed(0.0, fail=True), Fixed(2.0), Flagged()])
def test_a_failing_penalty_counts_its_worst_not_zero(model):
    """A policy that can make a penalty term fail must not escape the penalty: under a negative weight a failed
    term counts its model's high end."""
    reward = WeightedReward([RewardTerm("penalty", model, -0.5), RewardTerm("good", Fixed(1.0), 1.0)])
    result = score(reward)
    assert result.value == pytest.approx(0.5) and result.parts["penalty"] == 1.0
    assert result.info["failed_terms"] == ["penalty"]


def test_a_users_function_that_raises_is_a_failed_term():
    def broken(answer, ground_truth):
        raise TypeError("bug")

    from rlfactory_envs.search.task import SearchTask

    function = FunctionReward(broken, "broken")
    item = RewardInput(task=SearchTask("t", "q?", ("a",)), answer="a")
    alone = score(function, item)
    assert alone.value == 0.0 and alone.info == {"reward_failed": True} and "TypeError: bug" in alone.reason
    result = score(WeightedReward([RewardTerm("broken", function, 1.0), RewardTerm("good", Fixed(1.0), 1.0)]), item)
    assert result.info["failed_terms"] == ["broken"] and "reward_failed" not in result.info


def test_a_users_function_gets_the_familys_ground_truth():
    seen = []

    def spy(answer, ground_truth):
        seen.append(ground_truth)
        return 0.0

    for env_id, expected in (("rlf/Search-NQ-v0", lambda task: {"target": list(task.golden_answers)}),
                             ("rlf/NL2SQL-Spider-v0", lambda task: task.gold_sql)):
        env = gym.make(env_id, reward=spy).unwrapped
        try:
            env.reset(seed=0)
            env.step("<answer>x</answer>")
            assert seen[-1] == expected(env.task) and seen[-1], env_id
        finally:
            env.close()


def test_a_batch_is_scored_once_per_model():
    model = Fixed(1.0)
    reward = WeightedReward([RewardTerm("a", model, 1.0), RewardTerm("b", Fixed(0.0), 1.0)])
    results = asyncio.run(reward.score_batch([ITEM] * 5))
    assert [r.value for r in results] == [1.0] * 5 and model.calls == 5


def answer_length(answer, ground_truth):
    return min(len(answer or ""), 10) / 10


def test_every_family_takes_weights_over_its_named_rewards_and_the_shared_ones():
    env = gym.make("rlf/Search-NQ-v0", reward={"exact_match": 0.7, "f1": 0.2, "format": 0.1}).unwrapped
    try:
        env.reset(seed=0)
        golden = tooling_of(env).reference_answer(env, env.task)
        _, reward, terminated, _, info = env.step(f"<answer>{golden}</answer>")
        assert terminated and reward == pytest.approx(1.0)
        assert {"exact_match": 1.0, "f1": 1.0, "format": 1.0}.items() <= info["reward_parts"].items()
    finally:
        env.close()
    env = gym.make("rlf/NL2SQL-Spider-v0", reward={"execution_match": 1.0, f"{__name__}:answer_length": 0.5})
    try:
        assert env.unwrapped.reward_range == (0.0, 1.5)
        env.reset(seed=0)
        _, reward, *_, info = env.step(f"<answer>{env.unwrapped.task.gold_sql}</answer>")
        assert reward == pytest.approx(1.5) and info["reward_parts"]["execution_match"] == 1.0
    finally:
        env.close()


def test_the_default_rewards_are_unchanged():
    for env_id, expected in [("rlf/Search-NQ-v0", "QAExactMatchReward"), ("rlf/Travel-v0", "TravelPlanReward"),
                             ("rlf/NL2SQL-Spider-v0", "SqlExecutionReward"), ("rlf/MCP-v0", "FunctionReward")]:
        env = gym.make(env_id)
        try:
            assert type(env.unwrapped.reward_model).__name__ == expected
        finally:
            env.close()


def test_travel_weights_over_the_verdict_parts_share_one_verdict():
    env = gym.make("rlf/Travel-v0", reward={"final_pass": 0.5, "pass_rate": 0.5}).unwrapped
    try:
        [model] = env.reward_model.models
        assert type(model).__name__ == "TravelPlanReward"
    finally:
        env.close()


def test_a_users_env_checks_every_function_of_a_composed_reward_at_make():
    with pytest.raises(ConfigError, match="raised ZeroDivisionError"):
        gym.make("rlf/MCP-v0", reward={"exact_match": 0.5, f"{__name__}:divides_by_zero": 0.5})
    env = gym.make("rlf/MCP-v0", reward={"exact_match": 0.5, "contains": 0.5}).unwrapped
    try:
        assert all(isinstance(model, FunctionReward) for model in env.reward_model.models)
    finally:
        env.close()


def divides_by_zero(answer, ground_truth):
    return 1 / 0


@pytest.mark.parametrize("kwargs, message", [
    ({"reward": "judge"}, "judge= is not set"),
    ({"judge": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}, "does not use it"),
    ({"reward": {"f1": 1.0}, "judge": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}, "does not name 'judge'"),
    ({"reward": "no_such_reward"}, "unknown reward 'no_such_reward'"),
    ({"reward": {}}, "empty mapping"),
    ({"reward": {"f1": "high"}}, "finite number"),
    ({"reward": {"f1": float("inf")}}, "finite number"),
    ({"reward": "no_such_module_xyz:fn"}, "reward"),
])
def test_bad_reward_settings_are_one_line_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message) as failure:
        gym.make("rlf/Search-NQ-v0", **kwargs)
    assert "\n" not in str(failure.value)
