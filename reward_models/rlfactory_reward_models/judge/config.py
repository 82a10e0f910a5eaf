"""The judge's settings (``judge=`` of every family, or ``JudgeReward(config)``): where the judge is, which model,
how it is asked, and how hard the client tries. A bad setting is a one-line ``ConfigError`` naming it."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from rlfactory_reward_models.errors import ConfigError

__all__ = ["JudgeConfig", "load_judge_config"]


class JudgeConfig(BaseModel):
    """How to reach and ask a judge model behind any OpenAI-compatible chat endpoint (vLLM, a hosted API)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(min_length=1)
    """The endpoint, e.g. ``http://127.0.0.1:8001/v1``."""
    model: str = Field(min_length=1)
    api_key: str | None = Field(default=None, repr=False)
    """``None``: the ``OPENAI_API_KEY`` environment variable, else ``"EMPTY"`` (what vLLM accepts)."""
    template: str | None = None
    """A name in ``TEMPLATES`` (``qa``, ``sql``, ``plan``, ``rubric``) or a template text with ``{answer}`` and any of
    ``{question}``, ``{reference}``, ``{rubric}``; ``None``: the family's default."""
    rubric: str = ""
    max_tokens: int = Field(default=512, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, allow_inf_nan=False)
    timeout_s: float = Field(default=60.0, gt=0.0, allow_inf_nan=False)
    """Deadline of one answer's verdict: queueing for a slot and every retry included."""
    max_retries: int = Field(default=3, ge=0)
    """The OpenAI client's own retries with backoff (429, 5xx, connection errors; ``Retry-After`` honoured)."""
    concurrency: int = Field(default=64, ge=1)
    """Requests in flight to the judge at most."""
    cache_size: int = Field(default=100_000, ge=0)
    """Verdicts kept (least recently used dropped first); 0: no cache."""
    max_answer_chars: int = Field(default=8000, ge=1)
    """Longer answers are cut, and the prompt says so."""
    max_reply_bytes: int = Field(default=1_000_000, ge=4096)
    """A judge reply body (HTTP) over this many bytes is refused unread past the bound: the answer scores 0 with the
    reason. A reply of ``max_tokens`` tokens is a few KB."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Merged into each request (e.g. ``{"chat_template_kwargs": {"enable_thinking": False}}`` for Qwen3 on vLLM)."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except pydantic.ValidationError as exc:
            raise ConfigError(_one_line(exc)) from None

    def resolved_api_key(self) -> str:
        """The key the client sends: ``api_key``, else ``$OPENAI_API_KEY``, else ``"EMPTY"``."""
        return self.api_key if self.api_key is not None else (os.environ.get("OPENAI_API_KEY") or "EMPTY")


def load_judge_config(config: JudgeConfig | Mapping[str, Any]) -> JudgeConfig:
    """``config`` as a ``JudgeConfig``; ``ConfigError`` (one line) for anything else or a bad setting."""
    if isinstance(config, JudgeConfig):
        return config
    if not isinstance(config, Mapping):
        raise ConfigError(f"judge: expected settings as an object (base_url, model, ...), got "
                          f"{type(config).__name__}")
    bad_keys = [key for key in config if not isinstance(key, str)]
    if bad_keys:
        raise ConfigError(f"judge: setting names must be strings, got {bad_keys[0]!r}")
    return JudgeConfig(**config)


def _one_line(exc: pydantic.ValidationError) -> str:
    error = exc.errors()[0]
    name = ".".join(map(str, error["loc"])) or "settings"
    if error["type"] == "extra_forbidden":
        close = difflib.get_close_matches(name, list(JudgeConfig.model_fields), n=1, cutoff=0.75)
        guess = f" (did you mean {close[0]!r}?)" if close else ""
        return f"judge: unknown setting {name!r}{guess}; the judge's settings are {', '.join(JudgeConfig.model_fields)}"
    if error["type"] == "missing":
        return f"judge: {name!r} is required (e.g. judge={{'base_url': 'http://127.0.0.1:8001/v1', 'model': '...'}})"
    value = repr(error.get("input"))
    if len(value) > 60:
        value = value[:57] + "..."
    return f"judge: {name}={value} is invalid: {error['msg']}".replace("\n", " ")
