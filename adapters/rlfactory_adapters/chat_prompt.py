"""The episode's prompt in the policy's chat template: the env's first messages and tool schemas, rendered once.

Only the prompt is rendered with the template; every later turn is the model's own tokens plus the env's text
deltas (see ``rlfactory_adapters.token_episode``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


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

