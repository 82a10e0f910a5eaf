"""Which hacks an audit runs: the generic battery, then the env's own (``FamilyTooling.reward_hacks``), narrowed to the
names asked for. The control always runs: the reference answer, or the env's own hack named ``control`` (a
family whose right answer is a way of acting, not a text, plays its reference solution)."""

from __future__ import annotations

from collections.abc import Sequence

from rlfactory_envs.audit.hacks import CONTROL_NAME, generic_hacks
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.reward_hacks import RewardHack
from rlfactory_envs.kernel.families import tooling_of


def env_battery(env: ToolEnv) -> list[RewardHack]:
    """The generic hacks and the env's own, in that order; an env's hack replaces a generic one of the same name
    in place. ``ConfigError`` when the tooling's ``reward_hacks()`` raises."""
    by_name: dict[str, RewardHack] = {hack.name: hack for hack in generic_hacks()}
    tooling = tooling_of(env)
    try:
        own = list(tooling.reward_hacks(env))
    except Exception as exc:  # noqa: BLE001 - a user's env: one line, not a traceback
        raise ConfigError(f"{type(tooling).__name__}.reward_hacks() raised {type(exc).__name__}: {exc}") from None
    for hack in own:
        by_name[hack.name] = hack
    return list(by_name.values())


def choose_hacks(battery: Sequence[RewardHack], only: Sequence[str] | None) -> list[RewardHack]:
    """The hacks of ``battery`` named in ``only`` (all of them for ``None``), in battery order; ``ConfigError``
    for a name the battery lacks. The control's name is accepted and ignored (it always runs)."""
    hacks = [hack for hack in battery if hack.name != CONTROL_NAME]
    if only is None:
        return hacks
    names = {hack.name for hack in hacks}
    unknown = sorted(set(only) - names - {CONTROL_NAME})
    if unknown:
        raise ConfigError(f"no hack named {unknown[0]!r}; this env's hacks are {', '.join(sorted(names))}")
    return [hack for hack in hacks if hack.name in set(only)]
