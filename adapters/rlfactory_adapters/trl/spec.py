"""``RlfEnvSpec``: any rlf env (an id or an env spec file) wired into TRL's ``GRPOTrainer``, the way TRL's own
``OpenRewardSpec`` wires an ORS environment: one object, three properties, each the trainer argument of its name.

    spec = RlfEnvSpec("rlf/Search-NQ-v0", n=64)
    trainer = GRPOTrainer(model, args=GRPOConfig(...), train_dataset=spec.train_dataset,
                          environment_factory=spec.environment_factory, reward_funcs=spec.reward_funcs)

- ``train_dataset``: one row per task (``n`` of them, or all), ``prompt`` the chat messages the env opens the task
  with and ``rlf_task`` the task (JSON), which each rollout's ``reset`` pins.
- ``environment_factory``: rollout slots (``environment.RlfEnvironment``) on one runtime (the first builds it,
  the others are light siblings), each with the env's tools as methods (``tool_methods``).
- ``reward_funcs``: the env's reward, one function named after the env: it ends each rollout's episode with its
  last message and gives the episode's reward; the reward parts go to the completions table (``log_extra``).
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import Callable
from typing import Any

from rlfactory_adapters.trl.environment import RlfEnvironment
from rlfactory_adapters.trl.tool_methods import can_be_a_method, tool_method
from rlfactory_envs.env_spec import make_env, resolve
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError


class RlfEnvSpec:
    """An rlf env for ``GRPOTrainer``: ``ref`` an id or an env spec path, ``env_kwargs`` its settings; ``n`` tasks
    in the dataset (default all), in the env's order, or shuffled by ``seed`` when given."""

    def __init__(self, ref: str, n: int | None = None, seed: int | None = None, **env_kwargs: Any):
        self.ref, self.n, self.seed = ref, n, seed
        self.env_id = resolve(ref, env_kwargs).env_id
        self.env_kwargs = env_kwargs
        self._prototype: ToolEnv | None = None

    @property
    def prototype(self) -> ToolEnv:
        """The env every rollout slot is a sibling of (built on first use, its toolbox started)."""
        if self._prototype is None:
            self._prototype = make_env(self.ref, **self.env_kwargs)
            self._prototype.toolbox.start()
        return self._prototype

    @functools.cached_property
    def environment_class(self) -> type[RlfEnvironment]:
        """``RlfEnvironment`` with one method per tool the model sees (``ConfigError`` for a tool whose name or
        argument names cannot be Python's)."""
        specs = self.prototype.tool_specs
        problems = [problem for spec in specs if (problem := can_be_a_method(spec))]
        if problems:
            raise ConfigError(f"{self.env_id}: TRL calls tools as Python methods; {'; '.join(problems)} (rename "
                              "it, or hide it with tools_denied)")
        methods = {spec.name: tool_method(spec, RlfEnvironment._call) for spec in specs}
        name = re.sub(r"\W", "", self.env_id.title()) or "Env"
        return type(f"{name}Environment", (RlfEnvironment,), methods)

    @property
    def environment_factory(self) -> Callable[[], RlfEnvironment]:
        """What ``GRPOTrainer(environment_factory=...)`` takes: each call, a new rollout slot."""
        cls, prototype = self.environment_class, self.prototype
        return lambda: cls(prototype.sibling())

    @functools.cached_property
    def train_dataset(self) -> Any:
        """A ``datasets.Dataset``: ``prompt`` (the env's opening messages for each task) and ``rlf_task``."""
        import datasets

        env, rows = self.prototype.sibling(), []
        try:
            order = list(range(len(env.tasks)))
            if self.seed is not None:
                env.reset(seed=self.seed)
                env.np_random.shuffle(order)
            for index in order[: self.n]:
                task = env.task_to_dict(env.tasks[index])
                _, info = env.reset(options={"task": task})
                rows.append({"prompt": info["messages"], "rlf_task": json.dumps(task, default=str)})
        finally:
            env.close()
        return datasets.Dataset.from_list(rows)

    @property
    def reward_funcs(self) -> list[Callable[..., Any]]:
        """The env's reward, as TRL's reward function (async: the rollouts' episodes end together)."""

        async def reward(completions: list[list[dict[str, Any]]], environments: list[RlfEnvironment],
                         log_extra: Callable[[str, list[Any]], None] | None = None, **_: Any) -> list[float]:
            rewards = list(await asyncio.gather(*(env._finish(completion)
                                                  for env, completion in zip(environments, completions))))
            if log_extra is not None:
                log_extra("rlf_reward_parts", [json.dumps(env.info.get("reward_parts", {})) for env in environments])
                log_extra("rlf_end", [env.info.get("truncation_reason") or "answered" for env in environments])
            return rewards

        reward.__name__ = re.sub(r"\W", "_", self.env_id)
        return [reward]

    def close(self) -> None:
        if self._prototype is not None:
            self._prototype.close()
            self._prototype = None
