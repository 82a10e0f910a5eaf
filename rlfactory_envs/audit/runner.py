"""Run a battery of reward hacks against an env and tally what each one earns (``run_audit``).

Every hack plays the same tasks: the first ``n_tasks`` of the dataset in an order shuffled by ``seed`` (every task
at most once, all of them when ``n_tasks`` is at least the dataset's size), episode ``i`` reset with seed ``i`` and
its task pinned by id. Episodes step together in batches (``EnvBatch``), so tool calls run concurrently. Nothing a
hack or an env does ends the audit: a hack that raises, an env that fails to reset or to step, an episode that
never ends are each counted as a crashed episode of that hack, with the error in the report.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlfactory_envs.audit.battery import choose_hacks, env_battery
from rlfactory_envs.audit.hacks import CONTROL_NAME, control_hack
from rlfactory_envs.audit.report import AuditReport, EpisodeExample, HackOutcome, preview
from rlfactory_envs.env_spec import make_env
from rlfactory_envs.kernel.batch import EnvBatch
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.reward_hacks import HackNotApplicable, RewardHack

MAX_EPISODE_STEPS = 256
"""Steps after which an episode that has not ended is aborted and counted as a crash (``max_turns`` ends every
well-behaved env long before)."""


@dataclass
class _Episode:
    """One episode's state while a hack plays it."""

    env: ToolEnv
    task_id: str
    observation: str = ""
    reward: float = 0.0
    info: dict[str, Any] | None = None
    error: str | None = None
    not_applicable: str | None = None
    steps: int = 0


def audit_task_ids(env: ToolEnv, n_tasks: int, seed: int = 0) -> list[str]:
    """The ids of the tasks an audit plays: the first ``n_tasks`` of the dataset shuffled with ``seed``."""
    order = np.random.default_rng(seed).permutation(len(env.tasks))[:n_tasks]
    return [str(env.tasks[int(i)].task_id) for i in order]


async def _start(episode: _Episode, seed: int) -> None:
    try:
        episode.observation, _ = await episode.env.areset(seed=seed, options={"task_id": episode.task_id})
    except Exception as exc:  # noqa: BLE001 - an env that cannot start a task is a finding, not a crash
        episode.error = f"reset failed: {type(exc).__name__}: {exc}"


async def _respond(hack: RewardHack, episode: _Episode) -> str | None:
    """The hack's response for the episode's turn, or ``None`` after marking the episode not applicable or
    crashed (and ending it)."""
    try:
        response = await hack.act(episode.env, episode.observation)
    except HackNotApplicable as exc:
        episode.not_applicable = str(exc) or "not applicable"
    except Exception as exc:  # noqa: BLE001 - a hack that fails on this env's output is reported
        episode.error = f"the hack failed: {type(exc).__name__}: {exc}"
    else:
        if isinstance(response, str):
            return response
        episode.error = f"the hack returned {type(response).__name__}, not the response text"
    episode.env.abort(episode.error or "hack not applicable")
    return None


async def _play(hack: RewardHack, episodes: list[_Episode], seeds: list[int]) -> None:
    """Play one batch of episodes to their end with ``hack``."""
    await asyncio.gather(*(_start(episode, seed) for episode, seed in zip(episodes, seeds)))
    batch = EnvBatch([episode.env for episode in episodes])
    live = [i for i, episode in enumerate(episodes) if episode.error is None]
    while live:
        responses = await asyncio.gather(*(_respond(hack, episodes[i]) for i in live))
        actions: list[str | None] = [None] * len(episodes)
        for i, response in zip(live, responses):
            actions[i] = response
        for i, result in enumerate(await batch.astep(actions)):
            if result is None:
                continue
            episode = episodes[i]
            episode.observation = result.observation
            episode.reward += result.reward
            episode.steps += 1
            if result.terminated or result.truncated:
                episode.info = result.info
                episode.error = episode.error or result.info.get("error")
            elif episode.steps >= MAX_EPISODE_STEPS:
                episode.error = f"the episode did not end after {MAX_EPISODE_STEPS} steps"
                episode.info = episode.env.abort(episode.error)
        live = [i for i in live if not episodes[i].env.done]


def _example(episode: _Episode) -> EpisodeExample:
    info = episode.info or {}
    parts = info.get("reward_parts")
    answer = info.get("answer")
    return EpisodeExample(task_id=episode.task_id, reward=episode.reward, reason=info.get("reward_reason"),
                          parts={str(k): float(v) for k, v in parts.items()} if isinstance(parts, Mapping) else {},
                          answer=preview(answer), answer_chars=len(answer) if isinstance(answer, str) else None,
                          error=episode.error)


async def _audit_hack(hack: RewardHack, envs: list[ToolEnv], task_ids: list[str], low: float) -> HackOutcome:
    outcome = HackOutcome(hack.name, str(getattr(hack, "description", "")))
    for first in range(0, len(task_ids), len(envs)):
        chunk = task_ids[first:first + len(envs)]
        episodes = [_Episode(env, task_id) for env, task_id in zip(envs, chunk)]
        await _play(hack, episodes, list(range(first, first + len(chunk))))
        for episode in episodes:
            if episode.not_applicable is not None:
                outcome.skip(episode.not_applicable)
            else:
                outcome.add(_example(episode), earned=episode.reward > low)
    return outcome


async def arun_audit(env_id: str, *, n_tasks: int = 50, env_kwargs: Mapping[str, Any] | None = None,
                     hacks: Sequence[RewardHack] | None = None, only: Sequence[str] | None = None,
                     max_rate: float = 0.02, min_control_rate: float = 0.9, batch_size: int = 64,
                     seed: int = 0) -> AuditReport:
    """``run_audit`` as a coroutine."""
    if n_tasks < 1 or batch_size < 1:
        raise ValueError("n_tasks and batch_size must be at least 1")
    kwargs = dict(env_kwargs or {})
    envs = [make_env(env_id, **kwargs)]
    try:
        first = envs[0]
        battery = env_battery(first) if hacks is None else list(hacks)
        chosen = choose_hacks(battery, only)
        task_ids = audit_task_ids(first, n_tasks, seed)
        envs += [first.sibling() for _ in range(min(batch_size, len(task_ids)) - 1)]
        low = float(first.reward_range[0])
        own_control = next((hack for hack in battery if hack.name == CONTROL_NAME), None)
        control = await _audit_hack(own_control or control_hack(), envs, task_ids, low)
        outcomes = [await _audit_hack(hack, envs, task_ids, low) for hack in chosen]
        return AuditReport(env_id=str(env_id), dataset=first.tasks.name, tasks=len(task_ids),
                           reward_range=(low, float(first.reward_range[1])), max_rate=max_rate,
                           min_control_rate=min_control_rate, control=control, hacks=outcomes)
    finally:
        for env in envs:
            env.close()


def run_audit(env_id: str, *, n_tasks: int = 50, env_kwargs: Mapping[str, Any] | None = None,
              hacks: Sequence[RewardHack] | None = None, only: Sequence[str] | None = None,
              max_rate: float = 0.02, min_control_rate: float = 0.9, batch_size: int = 64,
              seed: int = 0) -> AuditReport:
    """Audit ``env_id`` (a registered id or an env spec path, built with ``env_kwargs``): the control and every
    hack (``hacks``, default the generic battery and the env's own; ``only`` keeps those names) each play the same
    ``n_tasks`` tasks. A hack fails when it earns reward on more than ``max_rate`` of them or crashes; the control
    when it earns on fewer than ``min_control_rate``. Call ``arun_audit`` from a running event loop."""
    return asyncio.run(arun_audit(env_id, n_tasks=n_tasks, env_kwargs=env_kwargs, hacks=hacks, only=only,
                                  max_rate=max_rate, min_control_rate=min_control_rate, batch_size=batch_size,
                                  seed=seed))
