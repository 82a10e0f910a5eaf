"""The model's own chat template, from its tokenizer: what ``chat_template=`` names, loaded once.

``chat_template`` is a tokenizer object (a trainer's: anything with ``apply_chat_template`` and ``chat_template``),
a folder of tokenizer files, or a Hugging Face model id already in the local cache (nothing is downloaded). Loading a
folder or an id needs ``transformers`` (the ``adapters`` extra).
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Mapping
from typing import Any

from rlfactory_envs.kernel.chat_format import CHAT_FORMATS, ChatFormat, make_chat_format
from rlfactory_envs.kernel.dialects import DIALECTS
from rlfactory_envs.kernel.dialects import dialect as dialect_named
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.template_format import TemplateChatFormat


def load_tokenizer(source: Any) -> Any:
    """The tokenizer ``source`` names (see the module docstring); ``ConfigError`` in one line otherwise."""
    if hasattr(source, "apply_chat_template"):
        return source
    if not isinstance(source, (str, os.PathLike)):
        raise ConfigError(f"chat_template= must be a tokenizer, a folder of tokenizer files or a model id, got "
                          f"{type(source).__name__}")
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise ConfigError("chat_template= needs transformers to read the tokenizer: pip install "
                          "'rlfactory-envs[adapters]'") from None
    try:
        return AutoTokenizer.from_pretrained(os.fspath(source), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"chat_template={os.fspath(source)!r}: no tokenizer could be read there ("
                          f"{str(exc).splitlines()[0][:200]}); give a folder with tokenizer_config.json or a model "
                          "id in the local cache") from None


def template_text(tokenizer: Any) -> str:
    """The tokenizer's chat template (the default one of several named ones); ``ConfigError`` when it has none."""
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, Mapping):
        template = template.get("tool_use") or template.get("default")
    if not isinstance(template, str) or not template.strip():
        raise ConfigError("the tokenizer has no chat template (a base model's often has none): give chat_template= "
                          "a tokenizer that has one, such as the instruction-tuned model's")
    return template


def renderer(tokenizer: Any, template: str) -> Any:
    """``render(messages, tools, add_generation_prompt, **kwargs)`` through ``tokenizer.apply_chat_template``;
    tool-call arguments go as JSON strings to a template that cannot take objects (DeepSeek-V3's)."""

    def render(messages: list[dict[str, Any]], tools: Any, add_generation_prompt: bool, **kwargs: Any) -> str:
        options = {"chat_template": template, **kwargs}
        try:
            return tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=add_generation_prompt,
                                                 tokenize=False, **options)
        except TypeError:
            return tokenizer.apply_chat_template(_string_arguments(messages), tools=tools, tokenize=False,
                                                 add_generation_prompt=add_generation_prompt, **options)

    return render


def _string_arguments(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        calls = message.get("tool_calls")
        if calls:
            message = {**message, "tool_calls": [{**c, "function": {**c["function"], "arguments": json.dumps(
                c["function"]["arguments"]) if not isinstance(c["function"]["arguments"], str) else
                c["function"]["arguments"]}} for c in calls]}
        out.append(message)
    return out


def template_format(source: Any, tool_dialect: str | None = None,
                    template_kwargs: Mapping[str, Any] | None = None) -> TemplateChatFormat:
    """The chat format of ``source``'s chat template (its dialect detected unless ``tool_dialect`` names one);
    ``template_kwargs`` that the template never reads are left out."""
    tokenizer = load_tokenizer(source)
    template = template_text(tokenizer)
    template_kwargs = {k: v for k, v in (template_kwargs or {}).items() if k in template}
    key = (template, tool_dialect, json.dumps(template_kwargs, sort_keys=True, default=str))
    made = _FORMATS.setdefault(tokenizer, {}) if _weakly_keyed(tokenizer) else {}
    if key not in made:
        try:
            chosen = dialect_named(tool_dialect) if tool_dialect else None
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        special = [str(t) for t in getattr(tokenizer, "all_special_tokens", ())]
        made[key] = TemplateChatFormat(renderer(tokenizer, template), template, chosen,
                                       template_kwargs=template_kwargs, special_tokens=special)
    return made[key]


_FORMATS: weakref.WeakKeyDictionary[Any, dict[tuple[str, str | None, str], TemplateChatFormat]] = \
    weakref.WeakKeyDictionary()
"""The formats made from each tokenizer object (a trainer passes the same one for every sample)."""


def _weakly_keyed(tokenizer: Any) -> bool:
    try:
        weakref.ref(tokenizer)
        hash(tokenizer)
    except TypeError:
        return False
    return True


def chat_format_for(name: Any, chat_template: Any = None, tool_dialect: str | None = None, *,
                    enable_thinking: bool = True, choices: tuple[str, ...] | None = None) -> ChatFormat:
    """The chat format the settings ``chat_format`` (``name``), ``chat_template`` and ``tool_dialect`` ask for (see
    ``EnvSettings.chat_format``); ``choices`` limits the built-in names a family offers. ``ConfigError`` in one line
    for a name no one knows, or a template format without a template."""
    if name is not None and not isinstance(name, str):
        return name
    known = tuple(choices or (n for n in CHAT_FORMATS if n != "search_r1")) + ("template", *DIALECTS)
    if name not in known:
        raise ConfigError(f"unknown chat_format {name!r}; choose one of {', '.join(dict.fromkeys(known))}")
    if name == "search_r1" or (chat_template is None and name in CHAT_FORMATS):
        return make_chat_format(name, enable_thinking=enable_thinking)
    if chat_template is None:
        raise ConfigError(f"chat_format={name!r} reads the turns from the model's chat template: give chat_template= "
                          "(the tokenizer, a folder of its files or a cached model id)")
    dialect = tool_dialect or (name if name in DIALECTS and name not in ("qwen3", "hermes") else None)
    return template_format(chat_template, dialect, {"enable_thinking": enable_thinking})


def settings_chat_format(settings: Any, choices: tuple[str, ...] | None = None) -> ChatFormat:
    """``chat_format_for`` over an env's settings."""
    return chat_format_for(settings.chat_format, settings.chat_template, settings.tool_dialect,
                           enable_thinking=settings.enable_thinking, choices=choices)
