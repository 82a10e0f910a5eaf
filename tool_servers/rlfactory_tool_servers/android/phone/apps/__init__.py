"""The installed apps: every module of this package that defines ``APP`` (found without a list to edit), in the
order of their ``ORDER``; the launcher is one of them and shows the others."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from types import MappingProxyType
from typing import Mapping

from rlfactory_tool_servers.android.phone.device import App


@functools.cache
def default_apps() -> Mapping[str, App]:
    """Every app by display name, the launcher first (one shared, read-only mapping: apps keep no state)."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        app = getattr(module, "APP", None)
        if app is not None:
            found.append((getattr(module, "ORDER", 100), app.name, app))
    return MappingProxyType({name: app for _, name, app in sorted(found, key=lambda entry: entry[:2])})
