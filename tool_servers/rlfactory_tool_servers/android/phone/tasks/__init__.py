"""The task templates: every ``TEMPLATES`` list of the modules of this package (one module per app), found
without a list to edit, ordered by name."""

from __future__ import annotations

import functools
import importlib
import pkgutil

from rlfactory_tool_servers.android.phone.tasks.base import TaskTemplate


@functools.cache
def all_templates() -> tuple[TaskTemplate, ...]:
    found: list[TaskTemplate] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name != "base":
            found += getattr(importlib.import_module(f"{__name__}.{info.name}"), "TEMPLATES", [])
    names = [t.name for t in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"task templates defined twice: {', '.join(duplicates)}")
    return tuple(sorted(found, key=lambda t: t.name))


def template_named(name: str) -> TaskTemplate:
    """The template ``name``; ``KeyError`` listing the names when there is none."""
    for template in all_templates():
        if template.name == name:
            return template
    raise KeyError(f"no task template {str(name)[:60]!r}; the templates are "
                   f"{', '.join(t.name for t in all_templates())}")
