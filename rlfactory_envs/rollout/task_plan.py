"""Which task each episode of a rollout plays: every task once in the dataset's order by default, as an evaluation
protocol reports (Search-R1's exact match over the whole NQ test split), a seeded subset without repeats, or a random
draw with replacement only when asked for.

``plan_tasks(tasks, n, order, repeat, seed)`` gives the plan: episode ``i`` is reset with seed ``seed + i`` and,
unless the order is ``"random"``, its task pinned by id (``options={"task_id": ...}``). ``repeat`` plays each chosen
task that many times in a row (``K`` samples of a task, a GRPO-like group: what pass@k is computed from).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from rlfactory_envs.kernel.errors import ConfigError

TaskOrder = Literal["ordered", "shuffled", "random"]
TASK_ORDERS: tuple[str, ...] = ("ordered", "shuffled", "random")
ORDER_WORDS = {"ordered": "in the dataset's order", "shuffled": "a subset shuffled by the seed, without repeats",
               "random": "drawn at random with replacement"}


@dataclass(frozen=True)
class TaskPlan:
    """The episodes of a rollout: ``task_ids[i]`` is episode ``i``'s task (``None``: drawn by the env from its
    seed, the ``"random"`` order), ``seeds[i]`` its reset seed."""

    dataset: str
    dataset_size: int
    order: TaskOrder
    repeat: int
    task_ids: tuple[str | None, ...]
    seeds: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.seeds)

    def describe(self, played: Sequence[str]) -> dict[str, Any]:
        """What the summary says about the tasks: the dataset, how they were chosen, and which were played (in
        order of first play)."""
        distinct = list(dict.fromkeys(played))
        return {"dataset": self.dataset, "dataset_size": self.dataset_size, "order": self.order,
                "repeat": self.repeat, "distinct": len(distinct), "task_ids": distinct}


def plan_tasks(tasks: Sequence[Any], dataset: str, n: int | None = None, *, order: TaskOrder = "ordered",
               repeat: int = 1, seed: int = 0) -> TaskPlan:
    """The plan of ``n`` tasks of ``tasks`` (``None``: all of them), each played ``repeat`` times in a row.

    ``"ordered"``: the first ``n`` in the dataset's order; ``"shuffled"``: the first ``n`` of a permutation drawn
    with ``seed``; ``"random"``: ``n`` episodes (``None``: one per task) whose tasks the env draws from their
    seeds, repeats possible. A ``n`` above the dataset's size in the first two orders plays every task once, with a
    warning that says so."""
    if order not in TASK_ORDERS:
        raise ConfigError(f"unknown task order {order!r}; choose one of {', '.join(TASK_ORDERS)}")
    if repeat < 1 or (n is not None and n < 1):
        raise ConfigError(f"n and repeat must be at least 1, got n={n}, repeat={repeat}")
    size = len(tasks)
    if order == "random":
        chosen: list[str | None] = [None] * (size if n is None else n)
    else:
        if n is not None and n > size:
            warnings.warn(f"{n} tasks were asked for but dataset {dataset!r} has {size}: each is played once "
                          f"(--repeat K plays each K times; --order random draws with replacement)", stacklevel=2)
        positions = range(size) if order == "ordered" else np.random.default_rng(seed).permutation(size)
        chosen = [str(tasks[int(i)].task_id) for i in list(positions)[:n]]
    task_ids = tuple(task_id for task_id in chosen for _ in range(repeat))
    return TaskPlan(dataset, size, order, repeat, task_ids, tuple(range(seed, seed + len(task_ids))))


def pass_at_k(samples: int, correct: int, k: int) -> float:
    """The unbiased estimate of pass@k from ``samples`` draws of which ``correct`` passed (Chen et al., 2021):
    ``1 - C(n - c, k) / C(n, k)``; ``k`` above ``samples`` counts as ``samples``."""
    k = min(k, samples)
    if samples - correct < k:
        return 1.0
    return 1.0 - math.comb(samples - correct, k) / math.comb(samples, k)


def sampling_metrics(groups: Mapping[str, Sequence[tuple[float, bool]]], repeat: int) -> dict[str, float]:
    """pass@k for k = 1, 2, 4, ... up to ``repeat`` (and ``repeat`` itself), and mean@``repeat`` (the mean reward of
    a task's samples, averaged over tasks), from each task's ``(reward, solved)`` samples."""
    ks = sorted({2 ** i for i in range(repeat.bit_length()) if 2 ** i <= repeat} | {repeat})
    metrics = {f"pass@{k}": float(np.mean([pass_at_k(len(s), sum(ok for _, ok in s), k) for s in groups.values()]))
               for k in ks}
    metrics[f"mean@{repeat}"] = float(np.mean([np.mean([reward for reward, _ in s]) for s in groups.values()]))
    return metrics
