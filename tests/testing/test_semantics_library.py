"""``rlfactory_envs.testing`` catches real violations: each deliberately broken env below breaks one rule of the
env semantics, and the property that owns the rule fails with an ``AssertionError`` naming it; a correct env, given
as a factory, a Gymnasium wrapper or an env spec file, passes."""

from __future__ import annotations

import itertools
import os
import random
from typing import Any, ClassVar

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, settings

import rlfactory_envs  # noqa: F401 - registers the ids
from rlfactory_envs.kernel.text_space import UnicodeText
from rlfactory_envs.search.env import SearchEnv
from rlfactory_envs.testing import PROPERTIES, EnvSemantics, check_env_semantics, semantics_test_class

SETTINGS = {"max_turns": 3, "max_action_chars": 4096}


def ended(result: tuple) -> bool:
    return bool(result[2] or result[3])


class BothEndings(SearchEnv):
    """Reports an ended episode as terminated and truncated at once."""

    async def astep(self, action: str) -> Any:
        obs, reward, terminated, truncated, info = await super().astep(action)
        end = terminated or truncated
        return obs, reward, end, end, info


class RewardAboveRange(SearchEnv):
    """Scores every ended episode 2.0, above its reward range (0.0, 1.0)."""

    async def astep(self, action: str) -> Any:
        result = await super().astep(action)
        return (*result[:1], 2.0, *result[2:]) if ended(result) else result


class DenseReward(SearchEnv):
    """Pays 0.5 on every step before the end."""

    async def astep(self, action: str) -> Any:
        result = await super().astep(action)
        return result if ended(result) else (*result[:1], 0.5, *result[2:])


class NoEpisodeOver(SearchEnv):
    """Answers a step after the end instead of raising ``EpisodeOver``."""

    def step(self, action: Any) -> Any:
        if self.done and self.task is not None:
            return "", 0.0, True, False, {"reward_parts": {}}
        return super().step(action)


class RaisesOnBraces(SearchEnv):
    """Raises for any response with a brace in it."""

    async def astep(self, action: str) -> Any:
        if "{" in action:
            raise ValueError("cannot read braces")
        return await super().astep(action)


class LeaksTraceback(SearchEnv):
    """Shows a Python traceback after every tool call."""

    async def astep(self, action: str) -> Any:
        obs, *rest = await super().astep(action)
        if "<tool_call>" in action and obs:
            obs += 'Traceback (most recent call last):\n  File "server.py", line 1\nKeyError: \'query\'\n'
        return (obs, *rest)


class OversizedToolResult(SearchEnv):
    """Reports a tool result one character over ``max_tool_response_chars``."""

    async def astep(self, action: str) -> Any:
        result = await super().astep(action)
        if not ended(result):
            result[4]["tool_results"].append({"name": "search", "arguments": {}, "is_error": False, "server": None,
                                              "text": "x" * (self.limits.max_tool_response_chars + 1)})
        return result


class OneTurnLate(SearchEnv):
    """Truncates at ``max_turns + 1``, one step after the limit it states."""

    late = False

    @property
    def max_turns(self) -> int:
        return self.limits.max_turns + self.late

    async def astep(self, action: str) -> Any:
        self.late = True
        try:
            return await super().astep(action)
        finally:
            self.late = False


class AcceptsAnything(SearchEnv):
    """Steps with ``str(action)`` instead of raising ``TypeError`` for a non-str action."""

    def step(self, action: Any) -> Any:
        return super().step(action if isinstance(action, str) else str(action))


class TinyObservationSpace(SearchEnv):
    """Declares observations of at most 16 characters, then returns whole prompts."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.observation_space = UnicodeText(16)


class UnseededReset(SearchEnv):
    """Numbers its resets in the prompt, so ``reset(seed=s)`` twice differs."""

    resets: ClassVar[itertools.count] = itertools.count()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        obs, info = super().reset(seed=seed, options=options)
        return f"{obs}\n(reset number {next(self.resets)})", info


class NondeterministicTools(SearchEnv):
    """Adds a random server load to every observation before the end (a tool that answers differently)."""

    async def astep(self, action: str) -> Any:
        obs, *rest = await super().astep(action)
        return (f"{obs}(load {random.random():.9f})" if obs else obs, *rest)


class SharedTaskId(SearchEnv):
    """Reports the task id of whichever env of the process reset last, not its own."""

    last_task_id: ClassVar[Any] = None

    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        obs, info = await super().areset(seed=seed, options=options)
        SharedTaskId.last_task_id = info["task_id"]
        return obs, info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        obs, info = super().reset(seed=seed, options=options)
        SharedTaskId.last_task_id = info["task_id"]
        return obs, info

    async def astep(self, action: str) -> Any:
        result = await super().astep(action)
        result[4]["task_id"] = SharedTaskId.last_task_id
        return result


def semantics(env_class: type[SearchEnv], **options: Any) -> EnvSemantics:
    return EnvSemantics(lambda: env_class(**SETTINGS), **{"max_examples": 20, **options})


VIOLATIONS = [
    (BothEndings, "episode_semantics", "terminated and truncated are both true"),
    (BothEndings, "max_turns", "terminated and truncated are both true"),
    (RewardAboveRange, "episode_semantics", r"the reward 2\.0 is outside reward_range \(0\.0, 1\.0\)"),
    (RewardAboveRange, "max_turns", r"the reward 2\.0 is outside reward_range"),
    (DenseReward, "episode_semantics", r"the reward is 0\.5 before the end of the episode"),
    (NoEpisodeOver, "episode_semantics", "step after the end returned .* instead of raising EpisodeOver"),
    (NoEpisodeOver, "step_outside_episode", "step after the end returned .* instead of raising EpisodeOver"),
    (RaisesOnBraces, "episode_semantics", "step raised ValueError: cannot read braces .* any str must be a legal"),
    (LeaksTraceback, "episode_semantics", "the observation shows a Python traceback"),
    (OversizedToolResult, "episode_semantics", r"has 8,193 characters, over max_tool_response_chars=8,192"),
    (OneTurnLate, "max_turns", "step max_turns=3 did not truncate"),
    (OneTurnLate, "episode_semantics", "did not end within max_turns=3 steps"),
    (AcceptsAnything, "step_outside_episode", "a non-str action, returned .* instead of raising TypeError"),
    (TinyObservationSpace, "episode_semantics", r"not a str inside UnicodeText\(0, 16\)"),
    (UnseededReset, "seeded_determinism", r"reset\(seed=\d+\) twice differs"),
    (TinyObservationSpace, "check_env", "gymnasium's check_env failed.*not within the observation space"),
    (NondeterministicTools, "seeded_determinism", r"replaying step 1 .* gave a different result at \['observation'\]"),
    (NondeterministicTools, "batch_alignment", "the batch result differs from the same step alone"),
    (SharedTaskId, "batch_alignment", "the result's task_id .* is not that env's"),
]


@pytest.mark.parametrize(("env_class", "prop", "message"), VIOLATIONS,
                         ids=[f"{cls.__name__}-{prop}" for cls, prop, _ in VIOLATIONS])
def test_a_broken_env_fails_the_property_that_owns_the_rule(env_class, prop, message):
    with pytest.raises(AssertionError, match=message):
        semantics(env_class).check(prop)


@pytest.mark.parametrize(("env_class", "prop", "options"), [
    (DenseReward, "episode_semantics", {"sparse_reward": False}),
    (NondeterministicTools, "seeded_determinism", {"deterministic_tools": False}),
    (NondeterministicTools, "batch_alignment", {"deterministic_tools": False}),
    (SharedTaskId, "episode_semantics", {}),
])
def test_an_env_that_says_so_or_breaks_another_rule_passes(env_class, prop, options):
    semantics(env_class, **options).check(prop)


def test_the_env_specific_check_runs_on_every_step():
    steps = []

    def no_answers_allowed(env, action, result):
        steps.append(action)
        assert not result.terminated, f"answered with {action!r}"

    with pytest.raises(AssertionError, match="answered with"):
        semantics(SearchEnv, check_step=no_answers_allowed).check("episode_semantics")
    assert steps


def test_an_example_that_fails_only_once_is_reported_as_flaky():
    calls = itertools.count()

    class GlitchesOnce(SearchEnv):
        async def astep(self, action: str) -> Any:
            if next(calls) == 4:
                raise RuntimeError("a one-off glitch")
            return await super().astep(action)

    with pytest.raises(AssertionError, match="failed once and passed when replayed"):
        semantics(GlitchesOnce).check("episode_semantics")


def test_a_correct_env_from_a_factory_passes_every_property():
    check_env_semantics(lambda: SearchEnv(**SETTINGS), max_examples=10)


def test_a_gym_wrapper_and_an_env_spec_file_are_accepted(tmp_path):
    EnvSemantics(lambda: gym.make("rlf/Search-NQ-v0", **SETTINGS), max_examples=10).check("batch_alignment")
    spec = tmp_path / "search.yaml"
    spec.write_text("env: rlf/Search-NQ-SearchR1-v0\nmax_turns: 2\n", encoding="utf-8")
    EnvSemantics(spec, env_kwargs={"max_action_chars": 4096}, max_examples=10).check("episode_semantics")
    EnvSemantics(str(spec), max_examples=5).check("max_turns")


def test_the_test_class_has_one_test_per_property():
    cls = semantics_test_class(lambda: SearchEnv(**SETTINGS), name="TestSearch", max_examples=5)
    assert cls.__name__ == "TestSearch"
    assert sorted(name for name in vars(cls) if name.startswith("test_")) == sorted(f"test_{p}" for p in PROPERTIES)
    cls().test_max_turns()
    broken = semantics_test_class(lambda: BothEndings(**SETTINGS), max_examples=5)
    with pytest.raises(AssertionError, match="terminated and truncated"):
        broken().test_episode_semantics()


def test_bad_references_are_refused_up_front():
    with pytest.raises(TypeError, match="env_kwargs apply to a registered id"):
        EnvSemantics(lambda: SearchEnv(), env_kwargs={"max_turns": 2})
    with pytest.raises(TypeError, match="zero-argument factory"):
        EnvSemantics(42)
    with pytest.raises(TypeError, match="not a ToolEnv"):
        EnvSemantics(lambda: gym.make("CartPole-v1")).make_env()
    with pytest.raises(ValueError, match="unknown property"):
        semantics(SearchEnv).check("no_such_property")


def test_settings_are_made_when_a_property_runs_over_the_loaded_profile():
    semantics = EnvSemantics(lambda: SearchEnv(**SETTINGS), max_examples=None)
    settings.register_profile("rlf-semantics-probe", derandomize=True, max_examples=3)
    try:
        settings.load_profile("rlf-semantics-probe")
        made = semantics.settings()
    finally:
        settings.load_profile(os.environ.get("RLF_HYPOTHESIS_PROFILE", "default"))
    assert made.derandomize and made.max_examples == 3 and made.deadline is None
    assert HealthCheck.function_scoped_fixture in made.suppress_health_check
    assert EnvSemantics(lambda: SearchEnv(**SETTINGS), max_examples=7).settings().max_examples == 7
