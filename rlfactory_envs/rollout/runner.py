"""The rollout loop: run the episodes of a task plan (``task_plan``: every task once, in order, by default) with a
policy, batch by batch, and summarise them.

Within a batch every env steps together (``EnvBatch``): the policy answers all live episodes concurrently, then
every tool call of the batch is in flight at once. Each episode is one line of the trajectory file
(``EpisodeRecord``, its fields written down in docs/cli.md, "Trajectory file format"), written and flushed as the
episode ends: a run killed midway keeps every episode it finished.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np
from tqdm import tqdm

from rlfactory_envs.env_spec import make_env
from rlfactory_envs.kernel.batch import EnvBatch
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.families import tooling_of
from rlfactory_envs.kernel.unicode_text import without_lone_surrogates
from rlfactory_envs.rollout.policy import EndpointPolicy, Policy, PolicyError
from rlfactory_envs.rollout.step_details import step_details
from rlfactory_envs.rollout.task_plan import ORDER_WORDS, TaskOrder, TaskPlan, plan_tasks, sampling_metrics


MAX_FAILURE_REASONS = 5
"""Distinct failure reasons the summary lists."""
TRAJECTORY_FORMAT_VERSION = 1
"""The ``format_version`` every trajectory line starts with; raised when a field changes meaning or goes away (a
field added keeps it)."""


@dataclass
class EpisodeRecord:
    """One finished episode, as written to the trajectories file (docs/cli.md, "Trajectory file format")."""

    env_id: str
    seed: int
    dataset: str
    task: dict[str, Any]
    messages: list[dict[str, Any]]
    transcript: str
    reward: float
    reward_parts: dict[str, float]
    answer: str | None
    terminated: bool
    truncated: bool
    turns: int
    tool_calls: int
    tool_errors: int
    tool_latency_s: list[float] = field(default_factory=list)
    error: str | None = None
    reward_info: dict[str, Any] = field(default_factory=dict)
    failed_tool_calls: int = 0
    task_id: str | None = None
    reward_reason: str | None = None
    """Why the reward is what it is, in words (the reward model's ``Reward.reason``), when it says."""
    solved: bool = False
    """The outcome reward reached the top of the reward model's range (what pass@k counts)."""
    format_errors: int = 0
    """Responses' problems the parser reported (an unreadable or repaired tool call, calls over the cap)."""
    truncation_reason: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    """Each step's tool calls, latencies, errors and process reward (``rollout.step_details``)."""

    def to_json(self) -> str:
        """One JSON line; a lone surrogate (a Python caller's action may hold one) is written as U+FFFD, which a
        UTF-8 file can hold."""
        record = {"format_version": TRAJECTORY_FORMAT_VERSION, **self.__dict__}
        return without_lone_surrogates(json.dumps(record, ensure_ascii=False))


@dataclass
class RolloutSummary:
    episodes: int
    mean_reward: float
    mean_turns: float
    tool_calls: int
    tool_errors: int
    tool_latency_ms: dict[str, float]
    steps: int
    seconds: float
    steps_per_s: float
    episodes_per_s: float
    truncated: int
    failed: int
    rewards_failed: int = 0
    """Episodes whose reward model raised or timed out (scored the range's low end)."""
    rewards_after_failed_calls: int = 0
    """Episodes scored after a tool call hit a deadline or a dead server: rewards a sick server may have biased."""
    failures: dict[str, int] = field(default_factory=dict)
    """Why episodes failed (the policy's endpoint, a tool server, the env), most frequent first, with counts."""
    reward_terms_failed: dict[str, int] = field(default_factory=dict)
    """For a weighted reward: episodes in which each term failed (a judge that gave no verdict), by term."""
    reward_failures: dict[str, int] = field(default_factory=dict)
    """Why rewards failed (in whole or in part), most frequent first, with counts."""
    report: dict[str, Any] | None = None
    report_table: str | None = None
    format_errors: int = 0
    """Problems the parser reported in responses, over all episodes (``EpisodeRecord.format_errors``)."""
    policy: dict[str, str] = field(default_factory=dict)
    """The policy's name and, for a scripted one, what it is (``description``)."""
    tasks: dict[str, Any] = field(default_factory=dict)
    """Which tasks were played: the dataset and its size, the order, the repeats, the distinct tasks and their ids
    (``TaskPlan.describe``)."""
    sampling: dict[str, float] = field(default_factory=dict)
    """With ``repeat`` K > 1: pass@k (k = 1, 2, 4, ..., K; unbiased estimate) and mean@K."""

    @property
    def rewards_unusable(self) -> str | None:
        """Why no reward of the run can be trusted (every episode's reward, or one term of it, failed), or
        ``None``."""
        if not self.episodes:
            return None
        broken = [name for name, count in self.reward_terms_failed.items() if count == self.episodes]
        if self.rewards_failed == self.episodes:
            broken = ["the reward"]
        if not broken:
            return None
        reason = next(iter(self.reward_failures), "no reason given")
        return f"{' and '.join(broken)} failed in every episode ({reason})"

    def table(self) -> str:
        rows = [("policy", " - ".join(filter(None, (self.policy.get("name"), self.policy.get("description")))))] \
            if self.policy else []
        rows += [("tasks", _tasks_line(self.tasks))] if self.tasks else []
        rows += [
            ("episodes", f"{self.episodes}"),
            ("mean reward", f"{self.mean_reward:.4f}"),
        ]
        rows += [(" / ".join(self.sampling), " / ".join(f"{v:.4f}" for v in self.sampling.values()))] \
            if self.sampling else []
        rows += [
            ("mean turns", f"{self.mean_turns:.2f}"),
            ("tool calls", f"{self.tool_calls} ({self.tool_errors} errors)"),
            ("format errors", f"{self.format_errors}"),
            ("tool latency ms p50/p90/p99", "/".join(f"{self.tool_latency_ms[k]:.2f}" for k in ("p50", "p90", "p99"))),
            ("truncated / failed", f"{self.truncated} / {self.failed}"),
            ("rewards failed / at risk", f"{self.rewards_failed} / {self.rewards_after_failed_calls}"),
            ("env steps", f"{self.steps}"),
            ("wall seconds", f"{self.seconds:.2f}"),
            ("steps/s", f"{self.steps_per_s:.1f}"),
            ("episodes/s", f"{self.episodes_per_s:.1f}"),
        ]
        terms = ", ".join(f"{name} {count}" for name, count in self.reward_terms_failed.items())
        rows += [("reward terms failed", terms)] if terms else []
        rows += [("failed because", f"{count} x {reason}") for reason, count in self.failures.items()]
        rows += [("reward failed because", f"{count} x {reason}") for reason, count in self.reward_failures.items()]
        width = max(len(name) for name, _ in rows)
        table = "\n".join(f"{name:<{width}}  {value}" for name, value in rows)
        return f"{table}\n\n{self.report_table}" if self.report_table else table


def _tasks_line(tasks: dict[str, Any]) -> str:
    """``60 of 60 in rlf-search-sample (in the dataset's order), each 4 times``."""
    repeat = tasks.get("repeat", 1)
    times = f", each {repeat} times" if repeat > 1 else ""
    return (f"{tasks['distinct']} of {tasks['dataset_size']} in {tasks['dataset']} ({ORDER_WORDS[tasks['order']]})"
            f"{times}")


def summarise(records: list[EpisodeRecord], seconds: float) -> RolloutSummary:
    latencies = np.array([x for r in records for x in r.tool_latency_s], dtype=float) * 1000.0
    pct = {f"p{q}": float(np.percentile(latencies, q)) if latencies.size else 0.0 for q in (50, 90, 99)}
    steps = sum(r.turns for r in records)
    n = max(len(records), 1)
    return RolloutSummary(
        episodes=len(records),
        mean_reward=sum(r.reward for r in records) / n,
        mean_turns=steps / n,
        tool_calls=sum(r.tool_calls for r in records),
        tool_errors=sum(r.tool_errors for r in records),
        tool_latency_ms=pct,
        steps=steps,
        seconds=seconds,
        steps_per_s=steps / seconds if seconds > 0 else 0.0,
        episodes_per_s=len(records) / seconds if seconds > 0 else 0.0,
        truncated=sum(r.truncated for r in records),
        failed=sum(r.error is not None for r in records),
        rewards_failed=sum(bool(r.reward_info.get("reward_failed")) for r in records),
        rewards_after_failed_calls=sum(r.failed_tool_calls > 0 for r in records),
        failures=dict(Counter(r.error for r in records if r.error is not None).most_common(MAX_FAILURE_REASONS)),
        reward_terms_failed=dict(Counter(name for r in records for name in r.reward_info.get("failed_terms", ()))),
        reward_failures=dict(Counter(r.reward_reason or "no reason given" for r in records if _reward_failed(r))
                             .most_common(MAX_FAILURE_REASONS)),
        format_errors=sum(r.format_errors for r in records),
    )


def _reward_failed(record: EpisodeRecord) -> bool:
    """Whether the episode's reward, or a term of it, failed (rather than scored the answer)."""
    return bool(record.reward_info.get("reward_failed") or record.reward_info.get("failed_terms"))


def describe_run(summary: RolloutSummary, records: list[EpisodeRecord], plan: TaskPlan, policy: Policy) -> None:
    """Add to ``summary`` what was played: the policy, the tasks, and pass@k / mean@k when tasks were repeated."""
    summary.policy = {"name": policy.name, "description": str(getattr(policy, "description", ""))}
    summary.tasks = plan.describe([str(r.task_id) for r in records])
    if plan.repeat > 1 and plan.order != "random":
        groups: dict[str, list[tuple[float, bool]]] = {}
        for record in records:
            groups.setdefault(str(record.task_id), []).append((record.reward, record.solved))
        summary.sampling = sampling_metrics(groups, plan.repeat)


async def run_episodes(env_id: str, envs: list[ToolEnv], seeds: list[int], policy: Policy,
                       task_ids: list[str | None] | None = None,
                       on_finished: Callable[[EpisodeRecord], None] | None = None) -> list[EpisodeRecord]:
    """One episode on each of ``envs`` (reset with ``seeds``, and the task of ``task_ids`` pinned where given),
    stepped together with ``policy`` to their ends; the envs stay open (``run_rollouts`` makes and closes its own; a
    soak keeps one set for hours). ``on_finished(record)`` is called as each episode ends, in the order they end
    (``run_rollouts`` writes the trajectory line then, so a killed run keeps every finished episode)."""
    batch = EnvBatch(envs)
    options = [None if task_id is None else {"task_id": task_id} for task_id in (task_ids or [None] * len(envs))]
    resets = await batch.areset(seeds=seeds, options=options)
    observations = [obs for obs, _ in resets]
    records = [EpisodeRecord(env_id=env_id, seed=seed, dataset=info["dataset"], task=info["task"], messages=[],
                             transcript="", reward=0.0, reward_parts={}, answer=None, terminated=False,
                             truncated=False, turns=0, tool_calls=0, tool_errors=0, task_id=info.get("task_id"))
               for seed, (_, info) in zip(seeds, resets)]
    live = list(range(len(envs)))
    while live:
        responses = await asyncio.gather(*(policy.act(envs[i], observations[i]) for i in live),
                                         return_exceptions=True)
        actions: list[str | None] = [None] * len(envs)
        for i, response in zip(live, responses):
            if isinstance(response, BaseException):
                reason = f"policy failed: {response}" if isinstance(response, PolicyError) else \
                    f"policy failed: {response!r}"
                envs[i].abort(reason)
                records[i].truncated, records[i].error = True, reason
            else:
                actions[i] = response
        for i, result in enumerate(await batch.astep(actions)):
            if result is not None:
                observations[i] = result.observation
                _add_step(records[i], result)
        for i in live:
            if envs[i].done:
                _finish_record(records[i], envs[i])
                if on_finished is not None:
                    on_finished(records[i])
        live = [i for i in live if not envs[i].done]
    return records


def _finish_record(record: EpisodeRecord, env: ToolEnv) -> None:
    """The episode's messages, transcript and outcome, from its env once it ended."""
    record.messages, record.transcript, record.turns = env.messages, env.transcript, env.turn
    outcome = env.last_reward
    record.reward_info = dict(outcome.info) if outcome is not None else {}
    record.solved = outcome is not None and outcome.value >= env.reward_model.reward_range[1]


def _write(out: TextIO | None, record: EpisodeRecord, bar: tqdm) -> None:
    """One finished episode's trajectory line, written and flushed at once."""
    if out is not None:
        out.write(record.to_json() + "\n")
        out.flush()
    bar.update(1)


def _add_step(record: EpisodeRecord, result: Any) -> None:
    """Count one step's calls, errors, latencies and reward into ``record``; at the episode's end, its outcome."""
    info = result.info
    executed = info.get("tool_results", [])  # the calls of a truncating response are never run
    record.tool_calls += len(executed)
    record.tool_errors += sum(r["is_error"] for r in executed)
    record.format_errors += len(info.get("parse_errors", ()))
    record.tool_latency_s += info.get("tool_latency_s", [])
    record.reward += result.reward
    record.steps.append(step_details(info))
    if result.terminated or result.truncated:
        record.terminated, record.truncated, record.answer = result.terminated, result.truncated, info.get("answer")
        record.reward_parts = info.get("reward_parts", {})
        record.reward_reason = info.get("reward_reason")
        record.truncation_reason = info.get("truncation_reason")
        record.error = info.get("error", record.error)
        record.failed_tool_calls = info.get("failed_tool_calls", 0)


async def run_rollouts(env_id: str, policy_factory: Callable[[ToolEnv], Policy], n: int | None = None, *,
                       order: TaskOrder = "ordered", repeat: int = 1, batch_size: int = 64, seed: int = 0,
                       env_kwargs: dict[str, Any] | None = None, out: TextIO | None = None,
                       progress: bool = True) -> tuple[RolloutSummary, list[EpisodeRecord]]:
    """Play the task plan ``plan_tasks(env.tasks, n, order=order, repeat=repeat, seed=seed)`` of ``env_id`` (a
    registered id or an env spec path): by default every task once, in the dataset's order; episode ``i`` is reset
    with seed ``seed + i``. Episodes run in batches; each record is written to ``out`` as a JSONL line (flushed) as its
    episode ends. A policy with an endpoint is checked first (``ConfigError`` when it cannot be reached or does not serve its model)."""
    kwargs = dict(env_kwargs or {})
    kwargs["record_timings"] = True
    envs = [make_env(env_id, **kwargs)]
    records: list[EpisodeRecord] = []
    started = time.perf_counter()
    try:
        plan = plan_tasks(envs[0].tasks, envs[0].tasks.name, n, order=order, repeat=repeat, seed=seed)
        policy = policy_factory(envs[0])
        if isinstance(policy, EndpointPolicy):  # a dead or wrong endpoint fails here, not as N failed episodes
            await policy.check_endpoint()
        await envs[0].toolbox.astart()  # a dead tool server too, before the progress bar shows
        envs += [envs[0].sibling() for _ in range(min(batch_size, len(plan)) - 1)]
        batch = EnvBatch(envs)
        with tqdm(total=len(plan), desc=f"{env_id} [{policy.name}]", unit="ep", disable=not progress) as bar:
            for first in range(0, len(plan), batch_size):
                seeds = list(plan.seeds[first:first + batch_size])
                task_ids = list(plan.task_ids[first:first + batch_size])
                chunk = await run_episodes(env_id, batch.envs[: len(seeds)], seeds, policy, task_ids,
                                           on_finished=lambda record: _write(out, record, bar))
                records += chunk
    finally:
        for env in envs:
            env.close()
    summary = summarise(records, time.perf_counter() - started)
    describe_run(summary, records, plan, policy)
    report = tooling_of(envs[0]).report(envs[0], [(r.task, r.reward_info) for r in records]) if records else None
    if report is not None:
        summary.report, summary.report_table = report.to_dict(), report.table()
    return summary, records
