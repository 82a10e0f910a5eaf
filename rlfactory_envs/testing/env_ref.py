"""What the semantics checks accept as "the env": a registered id, an env spec file, or a factory."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, Union

from rlfactory_envs.env_spec import make_env
from rlfactory_envs.kernel.env import ToolEnv

EnvRef = Union[str, os.PathLike[str], Callable[[], Any]]
"""A registered id (``"rlf/Search-NQ-v0"``), the path of an env spec file, or a zero-argument callable that returns
a ``ToolEnv`` or a Gymnasium env wrapping one."""


def env_factory(ref: EnvRef, env_kwargs: Mapping[str, Any] | None = None) -> Callable[[], ToolEnv]:
    """A callable that builds a new, unwrapped ``ToolEnv`` from ``ref`` on every call: ``make_env(ref,
    **env_kwargs)`` for an id or a spec path, ``ref().unwrapped`` for a factory (which takes no ``env_kwargs``)."""
    kwargs = dict(env_kwargs or {})
    if isinstance(ref, (str, os.PathLike)):
        return lambda: make_env(ref, **kwargs)
    if not callable(ref):
        raise TypeError(f"an env reference is a registered id, an env spec path or a zero-argument factory, "
                        f"got {type(ref).__name__}")
    if kwargs:
        raise TypeError("env_kwargs apply to a registered id or an env spec path; give a factory its settings "
                        "itself (a lambda or functools.partial)")

    def build() -> ToolEnv:
        env = ref()
        unwrapped = getattr(env, "unwrapped", env)
        if not isinstance(unwrapped, ToolEnv):
            close = getattr(env, "close", None)
            if callable(close):
                close()
            raise TypeError(f"the env factory {describe_ref(ref)} returned {type(unwrapped).__name__}, not a "
                            "ToolEnv (or a Gymnasium wrapper of one)")
        return unwrapped

    return build


def describe_ref(ref: EnvRef) -> str:
    """How failure messages name ``ref``: the id or path, or the factory's qualified name."""
    if isinstance(ref, (str, os.PathLike)):
        return os.fspath(ref)
    return getattr(ref, "__qualname__", None) or repr(ref)
