"""The assertions on one reset or one step that the properties share, and how they compare two results.

Every assertion message starts with ``where`` (the property and, for a step, its number and action), so a failure
says which rule broke without reading the code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from typing import Any

import numpy as np

from rlfactory_envs.kernel.batch import StepResult
from rlfactory_envs.kernel.env import EpisodeOver, ToolEnv
from rlfactory_envs.testing.options import SemanticsOptions

TRACEBACK_MARKER = "Traceback (most recent call last)"


def show(value: object, limit: int = 80) -> str:
    """``repr(value)``, a long string cut to ``limit`` characters with its length said."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value):,} characters)"
    return repr(value)


def checked_reset(env: ToolEnv, seed: int, where: str) -> tuple[str, dict[str, Any]]:
    """``env.reset(seed=seed)``, asserting a str observation inside ``observation_space`` without a traceback,
    and a dict ``info``."""
    returned = env.reset(seed=seed)
    assert isinstance(returned, tuple) and len(returned) == 2, \
        f"{where}: reset(seed={seed}) returned {show(returned)}, not (observation, info)"
    obs, info = returned
    assert isinstance(obs, str) and env.observation_space.contains(obs), \
        f"{where}: reset(seed={seed}) returned an observation that is not a str inside {env.observation_space}: " \
        f"{show(obs)}"
    assert TRACEBACK_MARKER not in obs, \
        f"{where}: reset(seed={seed})'s observation shows a Python traceback: {show(obs, 400)}"
    assert isinstance(info, dict), f"{where}: reset(seed={seed}) returned info of type {type(info).__name__}, not dict"
    return obs, info


def checked_step(semantics: SemanticsOptions, env: ToolEnv, action: str, where: str) -> StepResult:
    """``env.step(action)``, asserting that it does not raise for a str and returns five values; then the env's
    own ``semantics.check_step``."""
    try:
        returned = env.step(action)
    except Exception as exc:  # noqa: BLE001 - any exception for a str action is the violation reported
        raise AssertionError(f"{where}: step raised {type(exc).__name__}: {exc} for the action {show(action)}; "
                             "any str must be a legal action") from exc
    assert isinstance(returned, tuple) and len(returned) == 5, \
        f"{where}: step returned {show(returned)}, not (observation, reward, terminated, truncated, info)"
    result = StepResult(*returned)
    if semantics.check_step is not None:
        semantics.check_step(env, action, result)
    return result


def check_transition(semantics: SemanticsOptions, env: ToolEnv, turn: int, result: StepResult, where: str) -> None:
    """The rules every step keeps; ``turn`` is the step's number in its episode (1 for the first step).

    The observation is a str inside ``observation_space`` without a Python traceback; the reward is a number
    inside ``reward_range`` (0.0 before the end with ``sparse_reward``); ``terminated`` and ``truncated`` are
    bools, never both true; ``info`` is a dict; ``turn`` is at most ``max_turns``; a step that ends the episode
    returns ``""`` and ``info["reward_parts"]``; every ``info["tool_results"]`` text is a str of at most
    ``max_tool_response_chars`` characters without a traceback."""
    obs, reward, terminated, truncated, info = result
    assert isinstance(obs, str) and env.observation_space.contains(obs), \
        f"{where}: the observation is not a str inside {env.observation_space}: {show(obs)}"
    assert TRACEBACK_MARKER not in obs, f"{where}: the observation shows a Python traceback: {show(obs, 400)}"
    assert isinstance(terminated, (bool, np.bool_)) and isinstance(truncated, (bool, np.bool_)), \
        f"{where}: terminated and truncated must be bools, got {show(terminated)} and {show(truncated)}"
    assert not (terminated and truncated), f"{where}: terminated and truncated are both true"
    assert isinstance(info, dict), f"{where}: info is a {type(info).__name__}, not a dict"
    low, high = env.reward_range
    assert isinstance(reward, (int, float, np.number)) and not isinstance(reward, bool), \
        f"{where}: the reward {show(reward)} is not a number"
    assert low <= reward <= high, f"{where}: the reward {reward!r} is outside reward_range {env.reward_range}"
    assert turn <= env.max_turns, \
        f"{where}: the episode is still running at step {turn}, past max_turns={env.max_turns}"
    if terminated or truncated:
        assert obs == "", f"{where}: the episode ended but the observation is {show(obs)}, not \"\""
        assert "reward_parts" in info, \
            f"{where}: the episode ended but info has no 'reward_parts' (keys: {sorted(info)})"
    elif semantics.sparse_reward:
        assert reward == 0.0, f"{where}: the reward is {reward!r} before the end of the episode (sparse_reward: 0.0)"
    for number, tool_result in enumerate(info.get("tool_results") or ()):
        text = tool_result.get("text") if isinstance(tool_result, Mapping) else None
        assert isinstance(text, str), f"{where}: info['tool_results'][{number}] has no str 'text': {show(tool_result)}"
        assert len(text) <= env.limits.max_tool_response_chars, \
            f"{where}: info['tool_results'][{number}]['text'] has {len(text):,} characters, over " \
            f"max_tool_response_chars={env.limits.max_tool_response_chars:,}"
        assert TRACEBACK_MARKER not in text, \
            f"{where}: info['tool_results'][{number}]['text'] shows a Python traceback: {show(text, 400)}"


def expect_raises(expected: type[BaseException], call: Callable[[], object], what: str) -> None:
    """Assert that ``call()`` raises ``expected``; ``what`` describes the call in the message."""
    try:
        returned = call()
    except expected:
        return
    except Exception as exc:  # noqa: BLE001 - a wrong exception type is the violation reported
        raise AssertionError(f"{what} raised {type(exc).__name__}: {exc}, not {expected.__name__}") from exc
    raise AssertionError(f"{what} returned {show(returned, 200)} instead of raising {expected.__name__}")


def expect_episode_over(env: ToolEnv, action: str, what: str) -> None:
    """Assert that ``env.step(action)`` raises ``EpisodeOver``."""
    expect_raises(EpisodeOver, lambda: env.step(action), what)


def comparable(value: Any, timing_keys: Collection[str] = ()) -> Any:
    """``value`` (a reset or step result, nested tuples, lists and dicts) in a form ``==`` compares as intended:
    NaN equal to NaN, tuples and lists alike, a named tuple (``StepResult``) as a dict of its fields, and the keys
    ``timing_keys`` left out of every dict (wall-clock timings differ from run to run)."""
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {name: comparable(getattr(value, name), timing_keys) for name in value._fields}
    if isinstance(value, Mapping):
        return {key: comparable(item, timing_keys) for key, item in value.items() if key not in timing_keys}
    if isinstance(value, (list, tuple)):
        return [comparable(item, timing_keys) for item in value]
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


def first_difference(left: Any, right: Any, path: str = "") -> str:
    """Where two ``comparable`` values first differ, as ``path: left != right``."""
    if isinstance(left, dict) and isinstance(right, dict):
        for key in sorted(set(left) | set(right), key=str):
            if key not in left or key not in right:
                return f"{path}[{key!r}]: present in only one of them"
            if left[key] != right[key]:
                return first_difference(left[key], right[key], f"{path}[{key!r}]")
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        for index, (a, b) in enumerate(zip(left, right)):
            if a != b:
                return first_difference(a, b, f"{path}[{index}]")
    if isinstance(left, str) and isinstance(right, str):
        at = next((i for i, (a, b) in enumerate(zip(left, right)) if a != b), min(len(left), len(right)))
        start = max(0, at - 20)
        return f"{path or 'value'}, character {at:,}: ...{left[start:at + 60]!r} != ...{right[start:at + 60]!r}"
    return f"{path or 'value'}: {show(left, 200)} != {show(right, 200)}"
