"""Reading the options the commands share (``rlf`` and the servers the adapters run): numbers with bounds, a JSON
object given on the command line, and an env's settings from ``--env-kwargs`` and ``--set``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rlfactory_envs.env_spec import resolve, setting_from_text
from rlfactory_envs.kernel.errors import ConfigError


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


def unit_interval(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1], got {value}")
    return value


def json_object(option: str, text: str | None, example: str) -> dict[str, Any]:
    """The JSON object ``text`` given as ``option`` (``{}`` when not given); ``ConfigError`` naming the option."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{option} is not valid JSON ({exc}); give one object, e.g. '{example}'") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{option} must be a JSON object, e.g. '{example}'; got {type(value).__name__}")
    return value


def env_kwargs_from_options(ref: str, pairs: list[str], raw_json: str | None) -> dict[str, Any]:
    """The env keyword arguments of ``--env-kwargs JSON`` and ``--set key=value`` (each value read as the setting's
    type takes it), checked against the env ``ref`` names; ``ConfigError`` naming the first bad one."""
    env_id = resolve(ref).env_id
    kwargs = json_object("--env-kwargs", raw_json, example='{"max_turns": 6}')
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set expects key=value, got {pair!r}")
        kwargs[key] = setting_from_text(env_id, key, value)
    return resolve(ref, kwargs).kwargs
