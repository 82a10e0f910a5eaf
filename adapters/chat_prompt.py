"""The episode's prompt in the policy's chat template: the env's first messages and tool schemas, rendered once.

Only the prompt is rendered with the template; every later turn is the model's own tokens plus the env's text
deltas (see ``adapters.token_episode``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def template_kwargs_for(env: Any) -> dict[str, Any]:
    """The chat-template kwargs that make the prompt agree with the env's observations: Qwen3 with
    ``enable_thinking=False`` opens every assistant turn with an empty think block, so the prompt must too."""
    enable_thinking = getattr(getattr(env, "chat_format", None), "enable_thinking", None)
    return {} if enable_thinking is None else {"enable_thinking": bool(enable_thinking)}


def prompt_text(tokenizer: Any, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None,
                **template_kwargs: Any) -> str:
    """``messages`` and ``tools`` rendered by the tokenizer's chat template, ending with the assistant header.

    ``template_kwargs`` go to the template (e.g. ``enable_thinking=False`` for Qwen3)."""
    return tokenizer.apply_chat_template(list(messages), tools=list(tools) if tools else None,
                                         add_generation_prompt=True, tokenize=False, **template_kwargs)

