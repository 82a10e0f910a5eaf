"""The family contract: what a family of environments declares, and how the registry and the CLI find it.

A family is a folder ``rlfactory_envs/<name>/`` (its env, tasks, prompt and baseline) plus, usually, a tool
server folder ``tool_servers/<server>/``. Its ``family.py`` holds one ``FAMILY = Family(...)``: the ids it
registers, the environment variables that stand in for its data settings, and the embedded sample each of its
servers serves when ``rlf serve <server>`` is given no data. ``import rlfactory_envs`` registers every family it
finds (``discover_families``), and ``rlf serve`` finds every tool server package the same way
(``discover_servers``): adding a family edits nothing outside its folders.

``family.py`` is imported at ``import rlfactory_envs``, so it stays cheap: no env module, no dataset, no server.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class EnvEntry:
    """One registered id: ``entry_point`` (``"package.module:Class"``) and the ``kwargs`` it is made with by default
    (``gym.make(id, **overrides)`` overrides them)."""

    entry_point: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""


@dataclass(frozen=True)
class Family:
    """A family's declaration.

    - ``environments``: the ids it registers.
    - ``env_vars``: for a data setting (a keyword argument such as ``data_path``), the environment variable read when
      the setting is not given (``setting``): an explicit argument, then the variable, then the embedded sample.
    - ``serve_defaults``: per tool server, options ``rlf serve <server>`` adds when the user gives none of them,
      pointing the server at the family's embedded sample (``{"search": {"--corpus": "/.../sample.jsonl"}}``).
    """

    name: str
    environments: Mapping[str, EnvEntry]
    env_vars: Mapping[str, str] = field(default_factory=dict)
    serve_defaults: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def setting(self, name: str, value: Any) -> Any:
        """``value`` when given (not ``None`` or ``""``), else the environment variable declared for ``name``,
        else ``None``."""
        if value not in (None, ""):
            return value
        variable = self.env_vars.get(name)
        return (os.environ.get(variable) or None) if variable else None


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
