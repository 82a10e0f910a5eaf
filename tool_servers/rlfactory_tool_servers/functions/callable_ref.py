"""A function named in a setting: ``"package.module:function"`` (a dotted attribute path allowed after the colon)."""

from __future__ import annotations

import pkgutil
from collections.abc import Callable
from typing import Any


def resolve_callable(ref: str) -> Callable[..., Any]:
    """The function ``ref`` names; ``ValueError`` saying what is wrong (no colon, a module that does not import, a
    missing attribute, something not callable)."""
    module_name, sep, attribute = ref.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"{ref!r}: name a function as 'package.module:function'")
    try:
        target = pkgutil.resolve_name(ref)
    except ImportError as exc:
        raise ValueError(f"{ref!r}: cannot import module {module_name!r} ({exc})") from None
    except (AttributeError, ValueError):
        raise ValueError(f"{ref!r}: {module_name} has no attribute {attribute!r}") from None
    if not callable(target):
        raise ValueError(f"{ref!r} is not a function")
    return target
