"""An env's settings, typed and grouped: what bounds an episode (``EpisodeLimits``), where its tools come from and
which the model sees (``ToolServing``), how it is scored (``RewardScoring``), and the family's own fields.

Settings are given flat, as keyword arguments (``gym.make(id, max_turns=6, strict=False)``, ``--set max_turns=6``,
an env spec's keys): ``EnvSettings.from_kwargs`` puts each one in the group that declares it, converts plain values
as pydantic does (``"6"`` to ``6``), and refuses an unknown name or a value of the wrong type with one line naming
the setting; values of other types (a tool-server document, reward weights, a function) are checked by what the
family builds from them. A family subclasses the groups to add its own fields and gives its defaults (its turn
limit, say) as the groups' default values; ``flat_types`` lists every setting with its type, for ``--set`` and the
docs.
"""

from __future__ import annotations

import difflib
import os
import types
import typing
from collections.abc import Collection, Mapping, Sequence
from typing import Any, ClassVar, Literal

import pydantic
from pydantic import BaseModel, ConfigDict

from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.parsers import DEFAULT_MAX_TOOL_CALLS
from rlfactory_envs.kernel.process_reward import ProcessRewardSetting
from rlfactory_envs.kernel.reward_setting import JudgeSetting, RewardSetting

_FROZEN = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class SettingGroup(BaseModel):
    """A group of settings: immutable, unknown names refused, any Python value allowed where its type says so."""

    model_config = _FROZEN


class EpisodeLimits(SettingGroup):
    """What bounds one episode: turns, tool calls per response, the sizes of what the model says and reads, its
    wall clock, and how long its reward may take."""

    max_turns: int = pydantic.Field(4, ge=1)
    max_tool_calls: int = pydantic.Field(DEFAULT_MAX_TOOL_CALLS, ge=1)
    max_action_chars: int = 65_536
    max_prompt_chars: int = 65_536
    max_tool_response_chars: int = 8_192
    max_episode_seconds: float | None = None
    reward_timeout_s: float | None = 600.0


class ToolServing(SettingGroup):
    """Where the tools come from (``tool_servers``: an ``mcpServers`` document, JSON text or path; ``None``: the
    family's own server) and which of them the model sees and may call. ``episode_argument`` names a tool argument
    the env sets to the episode id, for a server that takes the episode as an argument rather than from ``_meta``."""

    tool_servers: Mapping[str, Any] | str | None = None
    tools_allowed: Sequence[str] | None = None
    tools_denied: Sequence[str] = ()
    episode_argument: str | None = None


class BundledServing(ToolServing):
    """Serving for a family with a server of its own: ``transport`` runs it in this process (``"inprocess"``, the
    default) or as a subprocess over stdio (``"stdio"``); ``tool_servers`` replaces it."""

    transport: Literal["inprocess", "stdio"] = "inprocess"


class RewardScoring(SettingGroup):
    """How an episode is scored: ``reward`` (the family's named rewards, weights, a function), ``judge`` (a model
    judge's endpoint), and ``process_reward`` (a score per turn); see ``reward_setting`` and ``process_reward``."""

    reward: RewardSetting = None
    judge: JudgeSetting = None
    process_reward: ProcessRewardSetting = None


class EnvSettings(SettingGroup):
    """The settings every env takes: the three groups, then the family's own fields (a subclass adds them)."""

    GROUPS: ClassVar[tuple[str, ...]] = ("scoring", "serving", "limits")
    """The groups, in the order a flat name is looked up in (the first group that declares it takes it)."""

    limits: EpisodeLimits = EpisodeLimits()
    serving: ToolServing = ToolServing()
    scoring: RewardScoring = RewardScoring()
    answer_tag: str = "answer"
    """The final answer is the text inside ``<answer_tag>...</answer_tag>``."""
    chat_format: Any = "qwen3"
    """How the policy's turns are written (``kernel.chat_template.chat_format_for``): ``qwen3``/``hermes`` (built in,
    ChatML), ``search_r1`` where the family offers it, ``template`` (read from ``chat_template``), a dialect name
    (``gemma``, ``pythonic``, ``llama3_json``, ``mistral``, ``mistral_v11``, ``harmony``: the template's turns with
    that dialect's calls), or a ``ChatFormat``."""
    chat_template: Any = None
    """The model's own chat template: its tokenizer, a folder of its tokenizer files or a model id in the local
    cache. Given, the turns are read from it (``TemplateChatFormat``), whatever ``chat_format`` names but
    ``search_r1``."""
    tool_dialect: str | None = None
    """The tool-call dialect of a template format, when not the one its template is written for."""
    enable_thinking: bool = True
    """Whether a chat format with a thinking mode (Qwen3's) lets the model think; ``False`` adds the empty think
    block the model expects instead."""
    repair_tool_calls: bool = False
    """Whether a tool call the chat format's reference parser would reject (single quotes, a trailing comma, a
    truncated object) is mended and run; each one is reported in ``info["parse_errors"]`` as a format error. Off: a
    policy learns calls the serving stack reads."""

    @classmethod
    def flat_types(cls) -> dict[str, Any]:
        """Every setting by its flat name, with its type: the family's own fields, then each group's."""
        found = {name: cls.model_fields[name].annotation for name in cls.own_fields()}
        for group in cls.GROUPS:
            for name, field in cls.group_model(group).model_fields.items():
                found.setdefault(name, field.annotation)
        return found

    @classmethod
    def own_fields(cls) -> list[str]:
        return [name for name in cls.model_fields if name not in cls.GROUPS]

    @classmethod
    def group_model(cls, group: str) -> type[SettingGroup]:
        return type(cls.model_fields[group].default)

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any], env_id: str, where: str | None = None) -> EnvSettings:
        """The settings ``kwargs`` give for ``env_id``, each put in its group over the defaults; ``ConfigError``
        naming the first unknown name or refused value (``where``: what the message says they came from)."""
        where = where or env_id
        flat = cls.flat_types()
        unknown = sorted(set(kwargs) - set(flat))
        if unknown:
            subject = "" if where == env_id else f" for {env_id}"
            raise ConfigError(f"{where}: unknown setting {unknown[0]!r}{subject}{did_you_mean(unknown[0], flat)}; "
                              f"its settings are {', '.join(sorted(flat))}")
        taken = {name: checked(cls, name, kwargs[name], where) for name in cls.own_fields() if name in kwargs}
        values: dict[str, Any] = dict(taken)
        for group in cls.GROUPS:
            default = cls.model_fields[group].default
            model = type(default)
            update = {name: checked(model, name, kwargs[name], where) for name in model.model_fields
                      if name in kwargs and name not in taken}
            taken.update(update)
            values[group] = default.model_copy(update=update) if update else default
        return cls.model_construct(**{**{name: cls.model_fields[name].default for name in cls.own_fields()},
                                      **values})

    def flat(self) -> dict[str, Any]:
        """The settings as flat names and values (the family's own fields, then each group's)."""
        values = {name: getattr(self, name) for name in self.own_fields()}
        for group in self.GROUPS:
            for name, value in getattr(self, group):
                values.setdefault(name, value)
        return values


def did_you_mean(name: str, known: Collection[str]) -> str:
    """``" (did you mean 'max_turns'?)"`` for the closest of ``known`` to a mistyped ``name``, or ``""``."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75) or \
        [k for k in known if k.lower() == name.lower()]
    return f" (did you mean {close[0]!r}?)" if close else ""


def checked(model: type[BaseModel], name: str, value: Any, where: str) -> Any:
    """``value`` for the field ``name`` of ``model``: a plain type's value converted as pydantic does (``"6"`` to
    ``6``) and checked against its bounds, ``ConfigError`` naming the setting otherwise; any other value as it is,
    once its shape is checked (a number where a list of names goes is refused; the family checks the rest when it
    builds what the value stands for)."""
    field = model.model_fields[name]
    if not is_plain(field.annotation):
        problem = shape_problem(field.annotation, value)
        if problem is not None:
            shown = repr(value) if len(repr(value)) <= 120 else repr(value)[:120] + "..."
            raise ConfigError(f"{where}: {name}={shown} is not {type_name(field.annotation)}: {problem}")
        return value
    try:
        adapter = pydantic.TypeAdapter(typing.Annotated[(field.annotation, *field.metadata)] if field.metadata
                                       else field.annotation)
        return adapter.validate_python(os.fspath(value) if isinstance(value, os.PathLike) else value)
    except pydantic.ValidationError as exc:
        raise ConfigError(f"{where}: {name}={value!r} is not {type_name(field.annotation)}: "
                          f"{exc.errors()[0]['msg']}") from None


def type_name(annotation: Any) -> str:
    """``int``, ``int | None``, ``one of 'qwen3', 'search_r1'``, ``Sequence[str] | None``: a type as a user reads
    it."""
    if typing.get_origin(annotation) is typing.Literal:
        return "one of " + ", ".join(map(repr, typing.get_args(annotation)))
    if isinstance(annotation, type) and typing.get_origin(annotation) is None:
        return annotation.__name__
    return str(annotation).replace("typing.", "").replace("collections.abc.", "")


def shape_problem(annotation: Any, value: Any) -> str | None:
    """Why ``value`` is of no kind ``annotation`` allows (a number where a list goes, a string where a list of names
    goes), or ``None`` when one of them fits: what is inside is the family's to check, with its own words."""
    members = typing.get_args(annotation) if _is_union(annotation) else (annotation,)
    if any(_fits(member, value) for member in members):
        return None
    return f"got {type(value).__name__}"


def _fits(member: Any, value: Any) -> bool:
    if member is Any:
        return True
    if member is type(None):
        return value is None
    origin = typing.get_origin(member) or member
    if origin is typing.Literal:
        return value in typing.get_args(member)
    if not isinstance(origin, type):  # a type variable, a new type, an annotated type: it cannot be told here
        return True
    if isinstance(value, str) and origin is not str and origin in (Sequence, Collection):
        return False  # a string is a sequence of characters, never the list of names meant
    return isinstance(value, origin)


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


PLAIN_TYPES = (int, float, bool, str, type(None))


def is_plain(annotation: Any) -> bool:
    """Whether ``annotation`` is built only from numbers, booleans, strings, ``None`` and ``Literal`` choices."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return True
    if origin in (typing.Union, types.UnionType):
        return all(is_plain(arg) for arg in typing.get_args(annotation))
    return annotation in PLAIN_TYPES
