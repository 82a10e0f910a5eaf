"""Android task instances: a template and a seed (the parameters drawn from it), ``template/seed`` as id.

The source lists ``instances`` seeds of every template interleaved (position ``i`` is template ``i % T``, seed
``i // T``), so the env's seeded draw spreads over all templates evenly. Parameters and the optimal step count
(the reference plan played on the instance's phone) are computed when first asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.task_source import TaskSource
from rlfactory_tool_servers.android.phone.tasks import all_templates, template_named
from rlfactory_tool_servers.android.phone.tasks.base import TaskTemplate, instance_params, optimal_steps


@dataclass(frozen=True)
class AndroidTask:
    """One instance: ``template``'s name, ``seed``, and ``params`` when pinned (else drawn from the seed)."""

    template: str
    seed: int
    pinned_params: Mapping[str, Any] | None = None

    @property
    def task_id(self) -> str:
        return f"{self.template}/{self.seed}"

    @property
    def definition(self) -> TaskTemplate:
        return template_named(self.template)

    @property
    def params(self) -> dict[str, Any]:
        if self.pinned_params is not None:
            return dict(self.pinned_params)
        return instance_params(self.definition, self.seed)

    @property
    def goal(self) -> str:
        return self.definition.goal_text(self.params)

    @property
    def ground_truth(self) -> dict[str, Any]:
        """The instance, not its parameters: their types differ between templates, which a parquet column of a
        trainer's data file cannot hold (the row's task JSON keeps them). A user's reward function receives it."""
        return {"template": self.template, "seed": self.seed, "goal": self.goal}

    def to_dict(self) -> dict[str, Any]:
        definition, params = self.definition, self.params
        return {"template": self.template, "seed": self.seed, "params": params, "goal": definition.goal_text(params),
                "kind": definition.kind, "app": definition.app,
                "optimal_steps": optimal_steps(definition, self.seed, params)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AndroidTask:
        """``{"template": name, "seed": n}``, with ``"params"`` to pin them; ``ValueError`` says what is wrong."""
        name = data.get("template")
        try:
            template_named(str(name))
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
        seed = data.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        params = data.get("params")
        if params is not None and not isinstance(params, Mapping):
            raise ValueError("params must be a dict of the template's parameters")
        return cls(str(name), seed, params)


def load_android_tasks(_: str | None, templates: tuple[str, ...] | None, instances: int) -> TaskSource[AndroidTask]:
    """``instances`` seeds of each template named in ``templates`` (``None``: all), interleaved."""
    if instances < 1:
        raise ConfigError(f"instances_per_template must be at least 1, got {instances}")
    chosen = _templates(templates)
    tasks = [AndroidTask(t.name, seed) for seed in range(instances) for t in chosen]
    return TaskSource(tasks, "androidworld-sim")


def _templates(names: Sequence[str] | None) -> list[TaskTemplate]:
    if names is None:
        return list(all_templates())
    try:
        return [template_named(name) for name in names]
    except KeyError as exc:
        raise ConfigError(f"templates=: {exc.args[0]}") from None
