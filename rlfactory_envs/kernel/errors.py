"""The errors a user's own mistake raises: ``ConfigError`` (the class is the reward layer's, the lowest that raises
it), and ``MissingExtra`` for a feature whose optional dependencies are not installed (``require_extra``)."""

from __future__ import annotations

import importlib.util

from rlfactory_reward_models.errors import ConfigError

__all__ = ["ConfigError", "MissingExtra", "require_extra"]


class MissingExtra(ModuleNotFoundError):
    """A feature needs a module of one of the package's extras that is not installed; the message names the extra
    to install, in one line."""


def require_extra(module: str, extra: str, feature: str) -> None:
    """``MissingExtra`` naming ``extra`` when ``module`` cannot be imported, before ``feature`` tries to."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module entry that is None
        found = False
    if not found:
        raise MissingExtra(f"{feature} needs {module}, which is not installed: pip install 'rlfactory-envs[{extra}]'",
                           name=module)
