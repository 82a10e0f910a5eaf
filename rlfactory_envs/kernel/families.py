"""The family contract: what a family of environments declares, whole, and how the registry, the CLI, the audit,
``rlf bench``, the adapters and the semantics tests find it.

A family is one folder in each area: ``rlfactory_envs/<name>/`` (its envs, tasks, prompt, tooling and page),
usually ``tool_servers/rlfactory_tool_servers/<name>/`` (its server and sandbox) and
``reward_models/rlfactory_reward_models/<name>/`` (its reward), and ``tests/<name>/``. Its ``family.py`` holds one
``FAMILY = Family(...)``: the ids it registers, the environment variables that stand in for its data settings, the
embedded sample each of its servers serves when ``rlf serve <server>`` is given no data, and, by reference (loaded
on first use), what tooling needs of it: its ``FamilyTooling`` (a baseline policy, reward hacks and the reference
answer they need, a report table, the ground truth a trainer's data file shows), the options of its semantics
test, its own ``rlf`` commands and its benchmarks. ``import rlfactory_envs`` registers every family it finds
(``discover_families``), and ``rlf serve`` finds every tool server package the same way (``discover_servers``):
adding a family edits nothing outside its folders.

``family.py`` is imported at ``import rlfactory_envs``, so it stays cheap: no env module, no dataset, no server.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from rlfactory_envs.kernel.errors import ConfigError

if TYPE_CHECKING:
    from rlfactory_envs.kernel.env import ToolEnv


@dataclass(frozen=True)
class EnvEntry:
    """One registered id: ``entry_point`` (``"package.module:Class"``) and the ``kwargs`` it is made with by default
    (``gym.make(id, **overrides)`` overrides them)."""

    entry_point: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""


@dataclass(frozen=True)
class BenchEntry:
    """One measurement a family declares: ``function`` is ``"module:name"``; ``default``: run without ``--only``."""

    function: str
    default: bool = True


class FamilyTooling:
    """What the tools around the envs need of a family; each method has a default for a family that has nothing to
    say. ``env`` is an env of the family (reset when a task is asked about)."""

    def baseline_policy(self, env: ToolEnv) -> Any:
        """An offline policy that really uses the env's tools (``rlf rollout --policy scripted``): a
        ``rollout.policy.Policy``, whose ``description`` says in one sentence what it is (a baseline, or an oracle
        that reads the reference answer; ``rlf rollout`` prints it)."""
        raise ConfigError(f"{type(env).__name__} has no scripted baseline policy; without a model, pass --policy "
                          "reference (answers each task's ground truth) or --policy replay --replay FILE; with one, "
                          "--policy openai")

    def reward_hacks(self, env: ToolEnv) -> list[Any]:
        """The family's own reward hacks (``kernel.reward_hacks``), run by ``rlf audit`` after the generic ones
        (one of the same name replaces the generic one)."""
        return []

    def reference_answer(self, env: ToolEnv, task: Any) -> str | None:
        """The text of a correct final answer to ``task`` (what goes between the answer tags), or ``None`` when the
        family cannot give one. ``rlf audit`` sends it as its control and hides or stuffs it in its hacks."""
        return None

    def report(self, env: ToolEnv, episodes: Sequence[tuple[dict[str, Any], Mapping[str, Any]]]) -> Any:
        """A summary of finished episodes, given each one's ``info["task"]`` and its reward's ``info`` (a
        benchmark's official rates): an object with ``table()`` and ``to_dict()``, or ``None`` for none."""
        return None

    def ground_truth(self, env: ToolEnv, task: Any) -> Any:
        """What a trainer's data file shows as the reference (verl's ``reward_model.ground_truth``); JSON-ready."""
        return env.task_to_dict(task)


@dataclass(frozen=True)
class FamilyCommand:
    """An ``rlf`` subcommand a family brings: ``rlf NAME ...`` parses with ``add_arguments`` and runs ``run``."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


@dataclass(frozen=True)
class Family:
    """A family's declaration.

    - ``environments``: the ids it registers.
    - ``env_vars``: for a data setting (a keyword argument such as ``data_path``), the environment variable read when
      the setting is not given (``with_env_vars``): an explicit argument, then the variable, then the embedded
      sample.
    - ``serve_defaults``: per tool server, options ``rlf serve <server>`` adds when the user gives none of them,
      pointing the server at the family's embedded sample (``{"search": {"--corpus": "/.../sample.jsonl"}}``).
    - ``tooling``: ``"module:name"`` of its ``FamilyTooling`` (a class or an instance), loaded on first use.
    - ``commands``: ``"module:name"`` of each ``FamilyCommand`` it adds to ``rlf``.
    - ``semantics``: ``"module:name"`` of ``semantics_options(env_id) -> Mapping``, the options of each of its ids'
      env-semantics test (``testing.EnvSemantics``' fields: ``env_kwargs``, ``actions``, ``check_step``, ...); it
      may import hypothesis (the ``testing`` extra).
    - ``benches``: its measurements for ``rlf bench``, by name (``BenchEntry``: the
      ``"module:function"`` that measures, ``function(context) -> (rows, notes)``, and whether it runs without
      ``--only``).
    """

    name: str
    environments: Mapping[str, EnvEntry]
    env_vars: Mapping[str, str] = field(default_factory=dict)
    serve_defaults: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    tooling: str = ""
    commands: Sequence[str] = ()
    semantics: str = ""
    benches: Mapping[str, BenchEntry] = field(default_factory=dict)

    def with_env_vars(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """``settings`` with each data setting not given (absent, ``None`` or ``""``) taken from its environment
        variable when that is set."""
        found = {name: os.environ.get(variable) for name, variable in self.env_vars.items()
                 if settings.get(name) in (None, "")}
        return {**settings, **{name: value for name, value in found.items() if value}}

    def env_ids(self, env_class: type) -> list[str]:
        """The ids it registers with ``env_class``."""
        return [env_id for env_id, entry in self.environments.items()
                if entry.entry_point.rpartition(":")[2] == env_class.__name__]

    @functools.cached_property
    def loaded_tooling(self) -> FamilyTooling:
        """The family's ``FamilyTooling`` (the defaults when it declares none)."""
        if not self.tooling:
            return FamilyTooling()
        found = load_ref(self.tooling)
        return found() if isinstance(found, type) else found

    def loaded_commands(self) -> list[FamilyCommand]:
        return [load_ref(ref) for ref in self.commands]

    def semantics_options(self, env_id: str) -> Mapping[str, Any]:
        """The options of ``env_id``'s env-semantics test (none: the defaults)."""
        return load_ref(self.semantics)(env_id) if self.semantics else {}


DEFAULT_TOOLING = FamilyTooling()


def tooling_of(env: ToolEnv) -> FamilyTooling:
    """The tooling of ``env``: its class's own (``ToolEnv.tooling``), else its family's (``ToolEnv.family``), else
    the defaults."""
    own = getattr(type(env), "tooling", None)
    if isinstance(own, FamilyTooling):
        return own
    family = getattr(type(env), "family", None)
    return family.loaded_tooling if isinstance(family, Family) else DEFAULT_TOOLING


def load_ref(ref: str) -> Any:
    """The object ``"package.module:name"`` names."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def _subpackages_with(package: ModuleType, module: str) -> list[str]:
    """Names of ``package``'s subpackages whose folder holds ``module``.py (found without importing them)."""
    names = []
    for info in pkgutil.iter_modules(package.__path__):
        folder = Path(getattr(info.module_finder, "path", ""), info.name)
        if info.ispkg and (folder / f"{module}.py").is_file():
            names.append(info.name)
    return sorted(names)


def discover_families(package: str = "rlfactory_envs") -> list[Family]:
    """Every ``FAMILY`` declared in a ``family.py`` of a subpackage of ``package``, by folder name."""
    root = importlib.import_module(package)
    families = []
    for name in _subpackages_with(root, "family"):
        family = getattr(importlib.import_module(f"{package}.{name}.family"), "FAMILY", None)
        if not isinstance(family, Family):
            raise TypeError(f"{package}.{name}.family must define FAMILY = Family(...)")
        families.append(family)
    return families


def discover_servers(package: str) -> list[str]:
    """The tool servers of ``package``: its subpackages that run on their own (they have a ``__main__``)."""
    return _subpackages_with(importlib.import_module(package), "__main__")
