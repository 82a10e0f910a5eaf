"""The env-semantics properties, one function each. ``prop(semantics)`` checks the env of a ``SemanticsOptions``
over hypothesis-generated seeds and actions and raises ``AssertionError`` when the env breaks the property (with
hypothesis' falsifying example in the error's notes and in the report).

Each property builds its own envs from ``semantics`` and closes them; one env stays open for the whole run, so
envs that share a toolbox do not start and stop their tool servers for every example.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from gymnasium.utils.env_checker import check_env
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from rlfactory_envs.kernel.batch import EnvBatch, StepResult
from rlfactory_envs.kernel.env import EpisodeOver, ToolEnv
from rlfactory_envs.kernel.mcp.stderr_tail import servers_quiet
from rlfactory_envs.testing.options import SemanticsOptions
from rlfactory_envs.testing.transitions import (
    check_transition,
    checked_reset,
    checked_step,
    comparable,
    expect_episode_over,
    expect_raises,
    first_difference,
    show,
)

SEEDS = st.integers(0, 2**32 - 1)
MAX_EPISODE_ACTIONS = 6
"""Generated episodes have at most ``min(max_turns + 1, MAX_EPISODE_ACTIONS)`` actions."""

non_str_actions: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.integers(), st.floats(), st.booleans(), st.binary(max_size=10),
    st.lists(st.text(max_size=5), max_size=2), st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2))


def check_env_passes(semantics: SemanticsOptions) -> None:
    """Gymnasium's ``gymnasium.utils.env_checker.check_env`` passes on the unwrapped env (spaces, reset and step
    signatures and types, seeded reset determinism, one seeded step's determinism, render and close)."""
    with _opened(semantics) as env:
        try:
            check_env(env)
        except Exception as exc:  # noqa: BLE001 - whatever check_env raises is the failure reported
            raise AssertionError(f"check_env on {semantics.name}: gymnasium's check_env failed: "
                                 f"{type(exc).__name__}: {exc}") from exc


def seeded_determinism(semantics: SemanticsOptions) -> None:
    """``reset(seed=s)`` twice returns equal ``(obs, info)``. With ``deterministic_tools``, also: a generated
    episode played after ``reset(seed=s)``, then a fresh ``reset(seed=s)`` (equal to the first) and the same actions
    again, gives equal step results, ``info`` compared without the timing keys."""
    where = f"seeded determinism of {semantics.name}"
    with _opened(semantics) as env:
        episodes = _episodes(semantics, env)

        @given(seed=SEEDS, episode=episodes)
        def same_seed_same_trajectory(seed: int, episode: list[str]) -> None:
            first = _reset_record(semantics, env, seed, where)
            second = _reset_record(semantics, env, seed, where)
            assert first == second, f"{where}: reset(seed={seed}) twice differs at {first_difference(first, second)}"
            if not semantics.deterministic_tools:
                return
            played = _play(semantics, env, episode, where)
            again = _reset_record(semantics, env, seed, where)
            assert again == first, \
                f"{where}: reset(seed={seed}) after an episode differs at {first_difference(first, again)}"
            replayed = _play(semantics, env, episode[:len(played)], where)
            for turn, (action, a, b) in enumerate(zip(episode, played, replayed), start=1):
                assert a == b, f"{where}: replaying step {turn} ({show(action)}) after reset(seed={seed}) gave a " \
                               f"different result at {first_difference(a, b)}"
            assert len(replayed) == len(played), \
                f"{where}: the replay after reset(seed={seed}) ran {len(replayed)} steps, the first run {len(played)}"

        _run(semantics, same_seed_same_trajectory)


def episode_semantics(semantics: SemanticsOptions) -> None:
    """Over generated episodes (``reset(seed=s)``, then the generated actions, then ``idle_action`` until the
    end): ``step`` never raises for a str; the reset and every step keep ``check_transition``'s rules (observation
    a str inside ``observation_space`` without a traceback, reward inside ``reward_range`` and 0.0 before the end
    with ``sparse_reward``, never both ``terminated`` and ``truncated``, tool results within
    ``max_tool_response_chars``, at the end ``""`` and ``info["reward_parts"]``); the episode ends by step
    ``max_turns``; a further ``step`` raises ``EpisodeOver``."""
    where = f"episode semantics of {semantics.name}"
    with _opened(semantics) as env:
        episodes = _episodes(semantics, env)

        @given(seed=SEEDS, episode=episodes)
        def every_step_keeps_the_rules(seed: int, episode: list[str]) -> None:
            checked_reset(env, seed, where)
            padded = [*episode, *[semantics.idle_action] * env.max_turns]
            for turn, action in enumerate(padded, start=1):
                assert turn <= env.max_turns, \
                    f"{where}: the episode did not end within max_turns={env.max_turns} steps"
                step_where = f"{where}, step {turn} ({show(action)})"
                result = checked_step(semantics, env, action, step_where)
                check_transition(semantics, env, turn, result, step_where)
                if result.terminated or result.truncated:
                    expect_episode_over(env, semantics.idle_action, f"{step_where}: step after the end")
                    return

        _run(semantics, every_step_keeps_the_rules)


def max_turns_truncates(semantics: SemanticsOptions) -> None:
    """After ``reset(seed=s)``, repeating ``idle_action`` (a response that neither answers nor ends) goes on for
    ``max_turns - 1`` steps, and step ``max_turns`` truncates: ``truncated`` and not ``terminated``,
    ``info["truncation_reason"] == "max_turns"``, the reward inside ``reward_range``."""
    where = f"max_turns of {semantics.name}"
    with _opened(semantics) as env:

        @given(seed=SEEDS)
        def idling_truncates_at_max_turns(seed: int) -> None:
            checked_reset(env, seed, where)
            for turn in range(1, env.max_turns + 1):
                step_where = f"{where}, step {turn} of {env.max_turns} ({show(semantics.idle_action)})"
                result = checked_step(semantics, env, semantics.idle_action, step_where)
                check_transition(semantics, env, turn, result, step_where)
                if turn < env.max_turns:
                    assert not (result.terminated or result.truncated), \
                        f"{step_where}: the episode ended before max_turns (terminated={result.terminated}, " \
                        f"truncated={result.truncated}, truncation_reason={result.info.get('truncation_reason')!r})"
            assert result.truncated and not result.terminated, \
                f"{where}: step max_turns={env.max_turns} did not truncate (terminated={result.terminated}, " \
                f"truncated={result.truncated})"
            reason = result.info.get("truncation_reason")
            assert reason == "max_turns", \
                f"{where}: the truncation at max_turns has info['truncation_reason'] {reason!r}, not 'max_turns'"
            low, high = env.reward_range
            assert low <= result.reward <= high, \
                f"{where}: the truncation's reward {result.reward!r} is outside reward_range {env.reward_range}"

        _run(semantics, idling_truncates_at_max_turns)


def batch_alignment(semantics: SemanticsOptions) -> None:
    """An ``EnvBatch`` of n fresh envs (n from 2 to 8), reset with distinct seeds and stepped for a few rounds of
    a generated plan mixing actions and ``None``, agrees one-to-one with n other fresh envs reset and stepped
    alone: each batch reset equals its solo reset; a skipped env's result is ``None`` and its turn unchanged;
    every other result is a ``StepResult`` with the ``info["task_id"]`` of that env's reset, no ``info["error"]``,
    keeping ``check_transition``'s rules, and equal to the solo step's result (``info`` without timing keys; with
    ``deterministic_tools=False`` only ``terminated`` and ``truncated`` must agree), so one env's odd action never
    changes another's result; an env is ``done`` exactly when its episode ended, and the batch refuses an action
    for an ended env with ``EpisodeOver``."""
    where = f"batch alignment of {semantics.name}"
    with _opened(semantics) as keeper:
        actions = _actions(semantics, keeper)

        @given(data=st.data())
        def batch_agrees_with_envs_alone(data: st.DataObject) -> None:
            n = data.draw(st.integers(2, 8), label="n")
            seeds = data.draw(st.lists(SEEDS, min_size=n, max_size=n, unique=True), label="seeds")
            rounds = data.draw(st.lists(st.lists(st.none() | actions, min_size=n, max_size=n), min_size=1,
                                        max_size=3), label="rounds")
            batched = [semantics.make_env() for _ in range(n)]
            alone = [semantics.make_env() for _ in range(n)]
            try:
                _check_batch(semantics, EnvBatch(batched), alone, seeds, rounds, where)
            finally:
                for env in batched + alone:
                    env.close()

        _run(semantics, batch_agrees_with_envs_alone)


def _check_batch(semantics: SemanticsOptions, batch: EnvBatch, alone: list[ToolEnv], seeds: list[int],
                 rounds: list[list[str | None]], where: str) -> None:
    resets = asyncio.run(batch.areset(seeds=seeds))
    task_ids = []
    for i, (env, seed, (obs, info)) in enumerate(zip(alone, seeds, resets)):
        solo = _reset_record(semantics, env, seed, where)
        batch_reset = comparable({"observation": obs, "info": info}, semantics.timing_keys)
        assert batch_reset == solo, f"{where}: env {i}'s batch reset (seed={seed}) differs from its reset alone at " \
                                    f"{first_difference(batch_reset, solo)}"
        assert "task_id" in resets[i][1], f"{where}: env {i}'s reset info has no 'task_id'"
        task_ids.append(resets[i][1]["task_id"])
    steps = [0] * len(alone)
    for number, planned in enumerate(rounds, start=1):
        sent = [None if env.done else action for env, action in zip(batch.envs, planned)]
        turns_before = [env.turn for env in batch.envs]
        results = asyncio.run(batch.astep(sent))
        assert len(results) == len(sent), \
            f"{where}: round {number} sent {len(sent)} actions, got {len(results)} results"
        for i, (action, result) in enumerate(zip(sent, results)):
            env_where = f"{where}, round {number}, env {i} ({show(action)})"
            if action is None:
                assert result is None, f"{env_where}: a skipped env's result is {show(result, 200)}, not None"
                assert batch.envs[i].turn == turns_before[i], f"{env_where}: a skipped env's turn changed"
                continue
            assert isinstance(result, StepResult), f"{env_where}: the result is {show(result, 200)}, not a StepResult"
            steps[i] += 1
            assert result.info.get("task_id") == task_ids[i], \
                f"{env_where}: the result's task_id {result.info.get('task_id')!r} is not that env's, {task_ids[i]!r}"
            assert "error" not in result.info, f"{env_where}: the step failed inside the batch: {result.info['error']}"
            check_transition(semantics, batch.envs[i], steps[i], result, env_where)
            solo = checked_step(semantics, alone[i], action, f"{env_where}, stepped alone")
            if semantics.deterministic_tools:
                a, b = comparable(result, semantics.timing_keys), comparable(solo, semantics.timing_keys)
                assert a == b, \
                    f"{env_where}: the batch result differs from the same step alone at {first_difference(a, b)}"
            else:
                assert (result.terminated, result.truncated) == (solo.terminated, solo.truncated), \
                    f"{env_where}: in the batch terminated={result.terminated}, truncated={result.truncated}; " \
                    f"alone terminated={solo.terminated}, truncated={solo.truncated}"
            ended = bool(result.terminated or result.truncated)
            assert batch.envs[i].done == ended, f"{env_where}: env.done is {batch.envs[i].done} after a step " \
                                                f"with terminated={result.terminated}, truncated={result.truncated}"
    over = [i for i, env in enumerate(batch.envs) if env.done]
    if over:
        late: list[str | None] = [None] * len(batch)
        late[over[0]] = semantics.idle_action
        expect_raises(EpisodeOver, lambda: asyncio.run(batch.astep(late)),
                      f"{where}: a batch step with an action for ended env {over[0]}")


def step_outside_episode(semantics: SemanticsOptions) -> None:
    """``step`` on a fresh env (before any ``reset``) raises ``EpisodeOver``; after ``reset(seed=s)`` a non-str
    action raises ``TypeError`` and leaves the episode running (a str action still steps); after the episode
    ended (``idle_action`` until the end) ``step`` raises ``EpisodeOver``."""
    where = f"step outside an episode of {semantics.name}"
    with _opened(semantics) as env:

        @given(seed=SEEDS, action=non_str_actions)
        def stepping_outside_raises(seed: int, action: Any) -> None:
            fresh = semantics.make_env()
            try:
                expect_episode_over(fresh, semantics.idle_action, f"{where}: step before reset")
            finally:
                fresh.close()
            checked_reset(env, seed, where)
            expect_raises(TypeError, lambda: env.step(action), f"{where}: step({show(action)}), a non-str action,")
            assert not env.done, f"{where}: the rejected non-str action {show(action)} ended the episode"
            for turn in range(1, env.max_turns + 1):
                step_where = f"{where}, step {turn} ({show(semantics.idle_action)}) after the rejected {show(action)}"
                result = checked_step(semantics, env, semantics.idle_action, step_where)
                if result.terminated or result.truncated:
                    break
            else:
                raise AssertionError(f"{where}: idle_action did not end the episode within max_turns={env.max_turns}")
            expect_episode_over(env, semantics.idle_action, f"{where}: step after the end")

        _run(semantics, stepping_outside_raises)


PROPERTIES: dict[str, Callable[[SemanticsOptions], None]] = {
    "check_env": check_env_passes,
    "seeded_determinism": seeded_determinism,
    "episode_semantics": episode_semantics,
    "max_turns": max_turns_truncates,
    "batch_alignment": batch_alignment,
    "step_outside_episode": step_outside_episode,
}
"""Every property by name, in the order ``check_env_semantics`` runs them."""


@contextmanager
def _opened(semantics: SemanticsOptions) -> Iterator[ToolEnv]:
    """An env of ``semantics``, closed at the end; with ``quiet_servers``, its stdio servers' stderr (thousands of
    calls' logs) is not shown meanwhile."""
    with servers_quiet() if semantics.quiet_servers else nullcontext():
        env = semantics.make_env()
        try:
            yield env
        finally:
            env.close()


def _actions(semantics: SemanticsOptions, env: ToolEnv) -> st.SearchStrategy[str]:
    """``semantics.actions_for(env)`` after a reset, so the tool schemas are those a task shows."""
    env.reset(seed=0)
    return semantics.actions_for(env)


def _episodes(semantics: SemanticsOptions, env: ToolEnv) -> st.SearchStrategy[list[str]]:
    return st.lists(_actions(semantics, env), min_size=1, max_size=min(env.max_turns + 1, MAX_EPISODE_ACTIONS))


def _reset_record(semantics: SemanticsOptions, env: ToolEnv, seed: int, where: str) -> dict[str, Any]:
    """``env.reset(seed=seed)`` (checked) as a comparable ``{"observation": ..., "info": ...}``."""
    obs, info = checked_reset(env, seed, where)
    return comparable({"observation": obs, "info": info}, semantics.timing_keys)


def _play(semantics: SemanticsOptions, env: ToolEnv, episode: list[str], where: str) -> list[Any]:
    """The comparable results of stepping ``episode`` from the env's current reset, up to the end."""
    results = []
    for turn, action in enumerate(episode, start=1):
        result = checked_step(semantics, env, action, f"{where}, step {turn} ({show(action)})")
        results.append(comparable(result, semantics.timing_keys))
        if result.terminated or result.truncated:
            break
    return results


def _run(semantics: SemanticsOptions, test: Callable[..., None]) -> None:
    """Run the ``@given`` ``test`` under ``semantics.settings()``; hypothesis' flakiness error (an example that
    failed once and passed when replayed) becomes an ``AssertionError`` too."""
    try:
        semantics.settings()(test)()
    except Flaky as exc:
        raise AssertionError(f"{test.__name__} on {semantics.name}: an example failed once and passed when "
                             f"replayed, so the env does not behave the same for the same seed and actions: {exc}") \
            from exc
