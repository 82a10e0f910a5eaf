"""The episode's prompt in the policy's chat template: the env's first messages and tool schemas, rendered once.

Only the prompt is rendered with the template; every later turn is the model's own tokens plus the env's text
deltas (see ``rlfactory_adapters.token_episode``), which the env writes with the same template's markers: the
trainer's tokenizer is the env's ``chat_template`` (``with_model_template``), so a Gemma or Llama model never reads
ChatML markers as plain text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def with_model_template(env_kwargs: Mapping[str, Any] | None, tokenizer: Any) -> dict[str, Any]:
    """``env_kwargs`` with the trainer's ``tokenizer`` as the env's ``chat_template``: the env then writes every
    observation as the model's own template renders it (``rlfactory_envs.kernel.template_format``). Kwargs that name
    a ``chat_template`` already (``None`` included: the env's built-in format) are kept as they are."""
    kwargs = dict(env_kwargs or {})
    kwargs.setdefault("chat_template", tokenizer)
    return kwargs


def template_kwargs_for(env: Any) -> dict[str, Any]:
    """The chat-template kwargs that make the prompt agree with the env's observations (its chat format's
    ``template_kwargs``: Qwen3 with ``enable_thinking=False`` opens every assistant turn with an empty think block,
    so the prompt must too)."""
    return dict(env.chat_format.template_kwargs)


def prompt_text(tokenizer: Any, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None,
                **template_kwargs: Any) -> str:
    """``messages`` and ``tools`` rendered by the tokenizer's chat template, ending with the assistant header.

    ``template_kwargs`` go to the template (e.g. ``enable_thinking=False`` for Qwen3)."""
    return tokenizer.apply_chat_template(list(messages), tools=list(tools) if tools else None,
                                         add_generation_prompt=True, tokenize=False, **template_kwargs)

