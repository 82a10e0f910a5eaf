"""Policies that produce the model's raw response text for an env's current state."""

from __future__ import annotations

import json
import weakref
from typing import Any, Protocol, runtime_checkable

from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.errors import connection_failure
from rlfactory_envs.rollout.chat_request import TOOL_MODES, ToolMode, finish_text, request_messages, tool_calls_as_text


class Policy(Protocol):
    """Answers one turn: the raw text the model would generate after ``observation``."""

    name: str

    async def act(self, env: ToolEnv, observation: str) -> str: ...


@runtime_checkable
class EndpointPolicy(Policy, Protocol):
    """A policy served from an endpoint, checked before the first episode."""

    async def check_endpoint(self) -> None: ...


class PolicyError(Exception):
    """The policy could not answer for a reason outside the model (its endpoint is down or refused the request)."""


class OpenAIChatPolicy:
    """Any OpenAI-compatible chat endpoint (vLLM, llama.cpp, the OpenAI API) as the policy.

    Chat formats send the episode's messages and the tool schemas, the history in ``tool_mode``
    (``chat_request.request_messages``: ``native``, structured ``tool_calls`` answered by ``tool`` messages with
    their ids, or ``text``); a tool call the server parsed into structured ``tool_calls`` is written back as the
    format writes calls (``<tool_call>`` text for Qwen3), and a separate ``reasoning_content`` as a ``<think>``
    block, so the env sees the model's raw response. A format whose episode is one assistant message (Search-R1's)
    continues that message (vLLM's ``continue_final_message``; ``vllm`` says whether to send vLLM's own fields,
    found out from ``/v1/models`` when ``None``) and stops at the format's stop sequences, put back when the server
    does not echo them (``chat_request.finish_text``).
    """

    name = "openai"

    def __init__(self, base_url: str, model: str, api_key: str = "EMPTY", temperature: float = 0.0,
                 max_tokens: int = 1024, timeout_s: float = 600.0, extra_body: dict[str, Any] | None = None,
                 tool_mode: ToolMode = "native", vllm: bool | None = None):
        from openai import AsyncOpenAI

        if tool_mode not in TOOL_MODES:
            raise ConfigError(f"tool_mode must be one of {', '.join(TOOL_MODES)}, got {tool_mode!r}")
        self.client = AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s)
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        self.tool_mode = tool_mode
        self.vllm = vllm
        self._texts: weakref.WeakKeyDictionary[ToolEnv, tuple[str, dict[int, str]]] = weakref.WeakKeyDictionary()

    async def check_endpoint(self) -> None:
        """``ConfigError`` naming the problem and the fix when the endpoint cannot be reached, refuses the API key,
        or lists its models and ``model`` is not among them (an endpoint without a model list passes). Learns
        whether the server is vLLM (its models are ``owned_by: vllm``) unless told."""
        from openai import APIConnectionError, APIStatusError

        try:
            listed = (await self.client.with_options(max_retries=1).models.list()).data
        except APIConnectionError as exc:
            raise ConfigError(f"cannot reach the model endpoint {self.client.base_url}: {connection_failure(exc)}; start the "
                              "server (e.g. `vllm serve MODEL --port 8000`) or pass --base-url") from None
        except APIStatusError as exc:
            if exc.status_code in (401, 403):
                raise ConfigError(f"the model endpoint {self.client.base_url} refused the API key (HTTP "
                                  f"{exc.status_code}); pass --api-key") from None
            return
        served = [m.id for m in listed]
        if self.vllm is None:
            self.vllm = any(getattr(m, "owned_by", None) == "vllm" for m in listed)
        if served and self.model not in served:
            raise ConfigError(f"the model endpoint {self.client.base_url} does not serve {self.model!r}; it serves "
                              f"{', '.join(map(repr, served[:10]))}{' ...' if len(served) > 10 else ''}; pass --model")

    async def act(self, env: ToolEnv, observation: str) -> str:
        from openai import APIConnectionError, APIStatusError

        try:
            return await self._act(env)
        except APIConnectionError as exc:
            raise PolicyError(f"cannot reach the model endpoint {self.client.base_url}: {connection_failure(exc)}") from exc
        except APIStatusError as exc:
            raise PolicyError(f"the model endpoint {self.client.base_url} answered HTTP {exc.status_code}: "
                              f"{status_error_text(exc)}") from exc

    async def _act(self, env: ToolEnv) -> str:
        if env.chat_format.single_message:
            return await self._continue(env)
        history = env.messages
        messages = request_messages(history, env.chat_format, self.tool_mode, self._episode_texts(env))
        tools = [spec.openai_schema() for spec in env.tool_specs]
        completion = await self.client.chat.completions.create(
            model=self.model, messages=messages, temperature=self.temperature, max_tokens=self.max_tokens,
            extra_body=self.extra_body or None, **({"tools": tools} if tools else {}))
        message = completion.choices[0].message
        content, calls = message.content or "", tool_calls_as_text(message.tool_calls, env.chat_format)
        self._episode_texts(env)[len(history)] = content
        text = f"{content}\n{calls}" if content and calls else (content or calls)
        reasoning = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
        return f"<think>\n{reasoning}\n</think>\n\n{text}" if reasoning else text

    def _episode_texts(self, env: ToolEnv) -> dict[int, str]:
        """The text parts the server gave in ``env``'s current episode, by the index its message will have."""
        kept = self._texts.get(env)
        if kept is None or kept[0] != env.episode_id:
            kept = self._texts[env] = (env.episode_id, {})
        return kept[1]

    async def _continue(self, env: ToolEnv) -> str:
        prompt, so_far = env.messages[0]["content"], env.transcript[len(env.messages[0]["content"]):]
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        extra = dict(self.extra_body)
        stops = list(env.chat_format.stop_sequences)
        if self.vllm:
            extra["include_stop_str_in_output"] = True
        if so_far:
            messages.append({"role": "assistant", "content": so_far})
            if self.vllm:
                extra.update(continue_final_message=True, add_generation_prompt=False)
        completion = await self.client.chat.completions.create(
            model=self.model, messages=messages, temperature=self.temperature, max_tokens=self.max_tokens,
            extra_body=extra or None, **({"stop": stops} if stops else {}))
        choice = completion.choices[0]
        return finish_text(choice.message.content or "", choice.finish_reason, stops,
                           getattr(choice, "stop_reason", None))


def status_error_text(exc: Any, limit: int = 4000) -> str:
    """The whole error an endpoint answered, on one line (a server's validation errors span several), cut at
    ``limit`` characters: its ``error.message`` when the body is OpenAI's error object, else the body."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        text = error.get("message") if isinstance(error, dict) and error.get("message") else json.dumps(body)
    else:
        text = getattr(exc, "message", None) or str(exc)
    text = " | ".join(line.strip() for line in str(text).splitlines() if line.strip())
    return text if len(text) <= limit else text[: limit - 3] + "..."
