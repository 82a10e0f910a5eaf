"""``Runtime``: what every episode of one env id and settings shares, built once per process.

An env is light: it holds one episode's state and the runtime it plays on. The runtime holds the rest: the task set,
the toolbox and its catalog, the reward model, the chat format and its parser, the tool filter, the limits, and what
the family builds besides (a sandbox, a prompt). ``runtime_for`` gives the runtime of an env class and its settings,
built by the class's ``build_runtime`` the first time and shared through ``shared.SHARED`` until the last env that
holds it closes; the parts a runtime is built from are shared by their own keys (``Parts``), so two settings that
differ only in a limit share one task set and one toolbox.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import os
import warnings
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Protocol

from rlfactory_envs.kernel.chat_format import ChatFormat
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.config import load_mcp_config
from rlfactory_envs.kernel.mcp.toolbox import Toolbox, ToolSpec
from rlfactory_envs.kernel.parsers import ActionParser
from rlfactory_envs.kernel.process_reward import make_process_reward
from rlfactory_envs.kernel.settings import EnvSettings, EpisodeLimits
from rlfactory_envs.kernel.shared import SHARED
from rlfactory_envs.kernel.task_source import TaskSource, file_version
from rlfactory_envs.kernel.text_space import UnicodeText
from rlfactory_envs.kernel.tool_filter import ToolFilter
from rlfactory_reward_models.base import Reward, RewardInput, RewardModel

REWARD_FAILED = "reward model failed"
"""How the reason of a reward that raised or took too long starts."""
MAX_FEEDBACK_CHARS = 2048
_MARKUP_ALLOWANCE = 512  # chat-format markup around one turn's results (headers, tags, newlines)


class MissingToolWarning(UserWarning):
    """A tool the env's prompt tells the model to call is not among the tools the model sees."""


class Parts:
    """The shared parts one runtime holds (``shared.SHARED`` leases), given back together when it closes."""

    def __init__(self) -> None:
        self._keys: list[Hashable] = []

    def part(self, key: Hashable, build: Callable[[], Any], *, close_when_idle: bool = False) -> Any:
        """The shared part for ``key`` (built by ``build`` when no one has it), held until ``release``."""
        value = SHARED.acquire(key, build, close_when_idle=close_when_idle)
        self._keys.append(key)
        return value

    def tasks(self, load: Callable[..., TaskSource[Any]], path: str | os.PathLike[str] | None,
              *args: Hashable) -> TaskSource[Any]:
        """``load(path, *args)``, shared by loader, the file's version (a file changed on disk is read again) and
        ``args``; ``path`` may be ``None`` (a loader's embedded default). A missing file raises
        ``FileNotFoundError`` naming it."""
        if path and not os.path.exists(path):
            raise FileNotFoundError(f"no such file: {path}")
        key = ("tasks", load, str(path) if path else None, file_version(path), args)
        return self.part(key, lambda: load(str(path) if path else None, *args))

    def toolbox(self, config: Mapping[str, Any] | str) -> Toolbox:
        """The toolbox of ``config``, shared by every runtime with an equal config; its servers stop when the last
        runtime holding it closes."""
        parsed = load_mcp_config(config)
        return self.part(("toolbox", parsed.canonical_json()), lambda: Toolbox(parsed), close_when_idle=True)

    def again(self) -> Parts:
        """Another holder of the same parts (for a runtime built from this one's: ``Runtime.variant``)."""
        other = Parts()
        for key in self._keys:
            other.part(key, _never_built)
        return other

    def release(self) -> None:
        keys, self._keys = self._keys, []
        for key in reversed(keys):
            SHARED.release(key)


def _never_built() -> Any:
    raise RuntimeError("a part held by a runtime was gone: it cannot be held again")


@dataclasses.dataclass(eq=False, kw_only=True)
class Runtime:
    """What the episodes of one env id and settings share (see the module docstring). A family adds its own fields
    by subclassing (the SQL family's database ids, the travel family's sandbox)."""

    settings: EnvSettings
    tasks: TaskSource[Any]
    toolbox: Toolbox
    reward_model: RewardModel
    chat_format: ChatFormat
    parts: Parts
    parser: ActionParser | None = None
    hidden_tools: tuple[str, ...] = ()
    """Tools the family's env calls itself (``call_episode_tool``) and hides from the model, beside
    ``tools_denied``."""
    key: Hashable | None = None
    """Its key in ``shared.SHARED`` (set by ``runtime_for``, or by ``hold_runtime`` for one built by hand)."""
    closed: bool = dataclasses.field(default=False, init=False)

    def __post_init__(self) -> None:
        limits = self.limits
        self.answer_tag = self.settings.answer_tag
        if self.parser is None:
            self.parser = self.chat_format.parser(max_tool_calls=limits.max_tool_calls, answer_tag=self.answer_tag,
                                                  repair=self.settings.repair_tool_calls)
        serving = self.settings.serving
        self.tool_filter = ToolFilter(serving.tools_allowed, serving.tools_denied, self.hidden_tools)
        self.episode_argument = serving.episode_argument
        self.process_reward = make_process_reward(self.settings.scoring.process_reward, limits.max_turns)
        self.reward_range = self._reward_range()
        step_limit = limits.max_tool_calls * (limits.max_tool_response_chars + 64) + MAX_FEEDBACK_CHARS + \
            _MARKUP_ALLOWANCE
        self.max_observation_chars = max(limits.max_prompt_chars, step_limit)
        self.observation_space = UnicodeText(self.max_observation_chars)
        self.action_space = UnicodeText(limits.max_action_chars)
        self._specs: dict[frozenset[str], list[ToolSpec]] = {}
        self._prompt_tools_checked = False
        self._invalid_action_feedback: str | None = None

    @property
    def limits(self) -> EpisodeLimits:
        return self.settings.limits

    def _reward_range(self) -> tuple[float, float]:
        low, high = self.reward_model.reward_range
        if self.process_reward is None:
            return low, high
        extra_low, extra_high = self.process_reward.episode_range  # a step may pay a turn's process reward too
        return low + min(0.0, extra_low), high + max(0.0, extra_high)

    async def score(self, item: RewardInput) -> Reward:
        """The reward model's score of ``item`` within ``reward_timeout_s``, clamped to its range; one that raises
        or takes too long scores the low end, with the reason and ``info["reward_failed"]``."""
        low, high = self.reward_model.reward_range
        deadline = self.limits.reward_timeout_s
        try:
            reward = await asyncio.wait_for(self.reward_model.score(item), deadline)
        except asyncio.TimeoutError:
            return Reward(low, {}, f"{REWARD_FAILED}: no score within reward_timeout_s={deadline:g}",
                          {"reward_failed": True})
        except Exception as exc:  # noqa: BLE001 - a reward bug must not lose the trajectory
            return Reward(low, {}, f"{REWARD_FAILED}: {exc!r}", {"reward_failed": True})
        return Reward(min(max(float(reward.value), low), high), reward.parts, reward.reason, reward.info)

    def model_specs(self, hidden: frozenset[str]) -> list[ToolSpec]:
        """The tools as the model sees them: the catalog, filtered, without the arguments ``hidden`` (those the env
        binds). The same list for the same ``hidden``: callers copy what they hand out."""
        specs = self._specs.get(hidden)
        if specs is None:
            specs = self.tool_filter.specs(self.toolbox.specs)
            specs = self._specs[hidden] = [without_arguments(spec, hidden) for spec in specs] if hidden else specs
        return specs

    def invalid_action_feedback(self) -> str:
        """What the model is told when a response neither calls a tool nor answers: the chat format's words, naming
        the tools the model sees (made once)."""
        if self._invalid_action_feedback is None:
            names = [spec.name for spec in self.tool_filter.specs(self.toolbox.specs)]
            self._invalid_action_feedback = self.chat_format.invalid_action_feedback(names, self.answer_tag)
        return self._invalid_action_feedback

    def check_prompt_tools(self, prompt_tools: tuple[str, ...], seen: set[str], env_name: str) -> None:
        """Warn once (``MissingToolWarning``) when the prompt names a tool the model does not see."""
        if self._prompt_tools_checked:
            return
        self._prompt_tools_checked = True
        missing = [name for name in prompt_tools if name not in seen]
        if missing:
            servers = ", ".join(self.toolbox.config.servers)
            warnings.warn(f"{env_name}: its prompt tells the model to call {', '.join(missing)}, but the model sees no "
                          f"such tool (tool servers: {servers}; tools: {', '.join(sorted(seen)) or 'none'}); give "
                          "tool_servers= a server that offers it, or stop hiding it with tools_allowed/tools_denied",
                          MissingToolWarning, stacklevel=5)

    def variant(self, **changes: Any) -> Runtime:
        """A runtime like this one with ``changes`` to what it is built of (another ``reward_model``, ``parser``,
        ``chat_format``), on the same parts (held once more, given back when it closes): an evaluation with another
        reward, say, or a test double. Other settings are another runtime (``ToolEnv(**settings)``)."""
        if "settings" in changes:
            raise ConfigError("Runtime.variant changes parts, not settings: make the env with the settings instead")
        return dataclasses.replace(self, parts=self.parts.again(), key=None, **changes)

    def close(self) -> None:
        """Give back the parts (the toolbox's servers stop when no other runtime holds them)."""
        self.closed = True
        self.parts.release()


def without_arguments(spec: ToolSpec, names: frozenset[str]) -> ToolSpec:
    """``spec`` with the arguments ``names`` removed from its JSON schema (``properties`` and ``required``)."""
    schema = copy.deepcopy(spec.input_schema)
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not names & set(properties):
        return spec
    schema["properties"] = {key: value for key, value in properties.items() if key not in names}
    if isinstance(schema.get("required"), list):
        schema["required"] = [key for key in schema["required"] if key not in names]
    return dataclasses.replace(spec, input_schema=schema)


class EnvClass(Protocol):
    """What a runtime is built and named from: an env class (``ToolEnv``'s subclasses)."""

    __name__: str
    settings_model: type[EnvSettings]
    family: Any
    """Its ``kernel.families.Family``, or ``None``."""

    def build_runtime(self, settings: EnvSettings, parts: Parts) -> Runtime: ...


def settings_key(env_class: EnvClass, kwargs: Mapping[str, Any]) -> Hashable:
    """The runtime key of an env class and its settings as given (with its family's environment variables read):
    equal settings, one runtime."""
    return "runtime", env_class, frozen(given_settings(env_class, kwargs))


def given_settings(env_class: EnvClass, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``kwargs`` with the data settings left out read from the family's environment variables
    (``Family.env_vars``)."""
    family = env_class.family
    return family.with_env_vars(kwargs) if family is not None else dict(kwargs)


def env_label(env_class: EnvClass) -> str:
    """What a message about ``env_class``'s settings names: its registered ids, or its class name."""
    ids = env_class.family.env_ids(env_class) if env_class.family is not None else []
    return " or ".join(ids) or env_class.__name__


def frozen(value: Any) -> Hashable:
    """``value`` as a hashable key: mappings and sequences by content, anything else by equality when hashable,
    else by identity (a runtime holds its settings, so an object named by identity lives as long as its key)."""
    if isinstance(value, Mapping):
        return ("map", tuple(sorted(((str(k), frozen(v)) for k, v in value.items()), key=lambda kv: kv[0])))
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(frozen(item) for item in value))
    if isinstance(value, (set, frozenset)):
        return ("set", frozenset(frozen(item) for item in value))
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return value


def runtime_for(env_class: EnvClass, kwargs: Mapping[str, Any]) -> tuple[Hashable, Runtime]:
    """The runtime of ``env_class`` with settings ``kwargs`` (built by the class the first time), with one more
    holder; the key to give it back with (``SHARED.release``)."""
    key = settings_key(env_class, kwargs)
    return key, SHARED.acquire(key, lambda: make_runtime(env_class, kwargs, key), close_when_idle=True)


def hold_runtime(runtime: Runtime) -> Hashable:
    """One more holder of ``runtime`` (a runtime built by hand is shared from now on like any other); the key to
    give it back with. ``ConfigError`` for a runtime already closed."""
    if runtime.key is None:
        runtime.key = ("runtime", id(runtime))
    held = None if runtime.closed else SHARED.acquire(runtime.key, lambda: runtime, close_when_idle=True)
    if held is not runtime:
        if held is not None:
            SHARED.release(runtime.key)
        raise ConfigError("this runtime was closed (its last env closed): make the env with its settings instead")
    return runtime.key


def make_runtime(env_class: EnvClass, kwargs: Mapping[str, Any], key: Hashable | None = None) -> Runtime:
    """``env_class.build_runtime`` over the settings ``kwargs`` give; the parts taken are given back if it fails."""
    settings = env_class.settings_model.from_kwargs(given_settings(env_class, kwargs), env_label(env_class))
    parts = Parts()
    try:
        runtime = env_class.build_runtime(settings, parts)
    except BaseException:
        parts.release()
        raise
    runtime.key = key
    return runtime


__all__ = ["MissingToolWarning", "Parts", "Runtime", "hold_runtime", "runtime_for", "settings_key"]
