"""An env from a registered id or from a user's env spec file, the same way everywhere.

``make_env(ref, **kwargs)`` is what the ``rlf`` command, the data preparation for verl/OpenRLHF and both trainer
adapters call: ``ref`` is a registered id (``rlf/Search-NQ-v0``) or the path of an env spec file.

An env spec is a YAML or JSON object whose keys are the keyword arguments of an env, plus ``env``: the id to build
(default ``rlf/MCP-v0``, the generic env)::

    # calc.yaml
    tool_servers: {mcpServers: {calc: {command: python, args: [calc_server.py]}}}
    data_path: questions.jsonl
    reward: my_rewards:numeric_match
    max_turns: 4

Relative paths are relative to the spec's folder: the values of keys ending in ``_path`` or ``_dir``, a
``tool_servers`` given as a file path, and the working directory of a stdio server written inline (its ``cwd``,
by default the spec's folder itself: a spec that ships with its server script works from anywhere). For an env that imports the user's
modules by name (``rlf/MCP-v0``'s ``reward: my_rewards:score``), the spec's folder is on its ``python_path``.
Keyword arguments given to ``make_env`` override the spec's. An unknown key is a ``ConfigError`` naming it and the
env's settings.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import pydantic
import yaml

from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.settings import did_you_mean, is_plain

GENERIC_ENV_ID = "rlf/MCP-v0"
SPEC_SUFFIXES = (".yaml", ".yml", ".json")
GYM_MAKE_SETTINGS = frozenset(("max_episode_steps", "disable_env_checker"))
"""Keyword arguments ``gym.make`` takes itself rather than passing them to the env."""


@dataclass(frozen=True)
class EnvSpec:
    """A resolved env: the registered id and its keyword arguments (paths made absolute). ``source`` is the spec
    file it was read from, or ``None``."""

    env_id: str
    kwargs: dict[str, Any]
    source: Path | None = None


def is_spec_path(ref: str | os.PathLike[str]) -> bool:
    """Whether ``ref`` names an env spec file (by suffix) rather than a registered id."""
    return str(ref).lower().endswith(SPEC_SUFFIXES)


def load_spec(path: str | os.PathLike[str]) -> EnvSpec:
    """Read the env spec file at ``path``; ``ConfigError`` says what is wrong with it."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise ConfigError(f"env spec {path}: no such file")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"env spec {path}: not valid {path.suffix[1:].upper()}: {' '.join(str(exc).split())}") \
            from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"env spec {path}: expected an object of env settings, got {type(data).__name__}")
    kwargs = {str(key): value for key, value in data.items()}
    env_id = kwargs.pop("env", GENERIC_ENV_ID)
    if not isinstance(env_id, str) or env_id not in gym.registry:
        hint = did_you_mean(env_id, list(gym.registry)) if isinstance(env_id, str) else ""
        raise ConfigError(f"env spec {path}: 'env' must be a registered id (see `rlf list`), got {env_id!r}{hint}")
    folder = path.resolve().parent
    kwargs = _absolute_paths(kwargs, folder)
    if "python_path" in (settings_of(env_id) or ()):
        given = kwargs.get("python_path") or []
        given = [given] if isinstance(given, str) else list(given)
        kwargs["python_path"] = [str(folder / Path(p).expanduser()) for p in given] + [str(folder)]
    return EnvSpec(env_id, kwargs, path)


def resolve(ref: str | os.PathLike[str], overrides: Mapping[str, Any] | None = None) -> EnvSpec:
    """The id and keyword arguments ``ref`` stands for, with ``overrides`` applied; the settings are checked."""
    spec = load_spec(ref) if is_spec_path(ref) else EnvSpec(str(ref), {})
    if spec.env_id not in gym.registry:
        hint = did_you_mean(spec.env_id, list(gym.registry))
        raise ConfigError(f"unknown env {str(ref)!r}{hint}: give a registered id (see `rlf list`) or the path of an "
                          f"env spec file ({', '.join(SPEC_SUFFIXES)})")
    kwargs = {**spec.kwargs, **dict(overrides or {})}
    kwargs = check_settings(spec.env_id, kwargs, where=f"env spec {spec.source}" if spec.source else spec.env_id)
    return EnvSpec(spec.env_id, kwargs, spec.source)


def make_env(ref: str | os.PathLike[str], **kwargs: Any) -> ToolEnv:
    """The env ``ref`` names (a registered id or an env spec path), built with ``kwargs`` over its settings; the
    unwrapped ``ToolEnv`` (``gym.make(...).unwrapped``)."""
    spec = resolve(ref, kwargs)
    env = gym.make(spec.env_id, **spec.kwargs).unwrapped
    if not isinstance(env, ToolEnv):
        env.close()
        raise ConfigError(f"{spec.env_id!r} is not an rlf tool env")
    return env


def env_class(env_id: str) -> type | None:
    """The class ``env_id`` is registered with, or ``None`` when its entry point is no class."""
    entry_point = gym.spec(env_id).entry_point
    found = gym.envs.registration.load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    return found if isinstance(found, type) else None


def setting_types(env_id: str) -> Mapping[str, Any] | None:
    """The settings the env of ``env_id`` takes, each with its type (``ToolEnv.settings_model``'s, flat), or
    ``None`` when they cannot be known (an env that is no ``ToolEnv``)."""
    cls = env_class(env_id)
    if cls is None or not issubclass(cls, ToolEnv):
        return None
    return {**cls.settings_model.flat_types(), **ENV_OPTIONS}


ENV_OPTIONS: Mapping[str, Any] = {"render_mode": str | None, "record_timings": bool}
"""What every env takes beside its settings (they are the env's own, not its runtime's)."""


def settings_of(env_id: str) -> frozenset[str] | None:
    """The keyword arguments the env class of ``env_id`` takes, or ``None`` when they cannot be known."""
    annotations = setting_types(env_id)
    return None if annotations is None else frozenset(annotations)


def check_settings(env_id: str, kwargs: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``kwargs`` with each value of a plain type (numbers, booleans, strings, choices) converted to it as pydantic
    does (``"6"`` to ``6`` for an ``int``); ``ConfigError`` naming the first key ``env_id`` does not take, or the
    first value its type refuses."""
    cls = env_class(env_id)
    if cls is None or not issubclass(cls, ToolEnv):
        return dict(kwargs)
    settings, own = split_options(kwargs)
    flat = cls.settings_model.from_kwargs(settings, env_id, where).flat()
    return {**{key: flat[key] for key in settings}, **own,
            **{key: kwargs[key] for key in GYM_MAKE_SETTINGS if key in kwargs}}


def split_options(kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``kwargs`` as the runtime's settings and the env's own options (``ENV_OPTIONS``); what ``gym.make`` takes
    itself (``GYM_MAKE_SETTINGS``) is in neither."""
    settings = {key: value for key, value in kwargs.items() if key not in ENV_OPTIONS and key not in GYM_MAKE_SETTINGS}
    return settings, {key: kwargs[key] for key in ENV_OPTIONS if key in kwargs}


def setting_from_text(env_id: str, key: str, text: str) -> Any:
    """The value of ``--set key=text``: the JSON ``text`` stands for, or else ``text`` itself, whichever the
    setting's type takes (``max_turns=6`` is the number 6, ``data_path=2024`` the string ``"2024"``)."""
    try:
        candidates = [json.loads(text), text]
    except json.JSONDecodeError:
        candidates = [text]
    annotation = (setting_types(env_id) or {}).get(key, Any)
    if is_plain(annotation):
        for candidate in candidates:
            try:
                return pydantic.TypeAdapter(annotation).validate_python(candidate)
            except pydantic.ValidationError:
                continue
    return candidates[0]


def _absolute_paths(kwargs: dict[str, Any], folder: Path) -> dict[str, Any]:
    out = dict(kwargs)
    for key, value in kwargs.items():
        if (key.endswith(("_path", "_dir")) or key == "tool_servers") and isinstance(value, str) \
                and value.strip() and value.lstrip()[0] not in "{[":
            out[key] = str(folder / Path(value).expanduser())
    servers = out.get("tool_servers")
    if isinstance(servers, Mapping):
        out["tool_servers"] = _stdio_cwd(servers, folder)
    return out


def _stdio_cwd(config: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    """``config`` with every stdio server started in ``folder``, or in its own ``cwd`` taken relative to it."""
    config = copy.deepcopy(dict(config))
    servers = config.get("mcpServers")
    if isinstance(servers, Mapping):
        for entry in servers.values():
            if isinstance(entry, dict) and "command" in entry:
                entry["cwd"] = str(folder / Path(entry.get("cwd") or ".").expanduser())
    return config
