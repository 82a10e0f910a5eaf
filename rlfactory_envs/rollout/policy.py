"""Policies that produce the model's raw response text for an env's current state."""

from __future__ import annotations

import json
from typing import Any, Protocol, runtime_checkable

from rlfactory_envs.kernel.chat_format import ChatFormat
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.errors import connection_failure, describe
from rlfactory_envs.kernel.tool_call import ToolCall


class Policy(Protocol):
    """Answers one turn: the raw text the model would generate after ``observation``."""

    name: str

    async def act(self, env: ToolEnv, observation: str) -> str: ...


def tool_calls_as_text(tool_calls: Any, chat_format: ChatFormat) -> str:
    """OpenAI-style structured ``tool_calls`` written back as the model wrote them, in ``chat_format``."""
    blocks = []
    for call in tool_calls or []:
        function = call.function
        try:
            arguments: Any = json.loads(function.arguments or "{}")
        except json.JSONDecodeError:
            arguments = function.arguments
        blocks.append(chat_format.render_call(ToolCall(function.name, arguments)))
    return "\n".join(blocks)


@runtime_checkable
class EndpointPolicy(Policy, Protocol):
    """A policy served from an endpoint, checked before the first episode."""

    async def check_endpoint(self) -> None: ...


class PolicyError(Exception):
    """The policy could not answer for a reason outside the model (its endpoint is down or refused the request)."""


class OpenAIChatPolicy:
    """Any OpenAI-compatible chat endpoint (``vllm serve`` exposes one) as the policy.

    Chat formats send the episode's messages and the tool schemas; a tool call the server parsed into structured
    ``tool_calls`` is written back as the format writes calls (``<tool_call>`` text for Qwen3), and a separate
    ``reasoning_content`` as a ``<think>`` block, so the env sees the model's raw response. A format whose episode
    is one assistant message (Search-R1's) continues that message (vLLM's ``continue_final_message``) and stops at
    the format's stop sequences.
    """

    name = "openai"

    def __init__(self, base_url: str, model: str, api_key: str = "EMPTY", temperature: float = 0.0,
                 max_tokens: int = 1024, timeout_s: float = 600.0, extra_body: dict[str, Any] | None = None):
        from openai import AsyncOpenAI

        self.client = AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s)
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        self._tools: dict[int, list[dict[str, Any]]] = {}

    async def check_endpoint(self) -> None:
        """``ConfigError`` naming the problem and the fix when the endpoint cannot be reached, refuses the API key,
        or lists its models and ``model`` is not among them (an endpoint without a model list passes)."""
        from openai import APIConnectionError, APIStatusError

        try:
            served = [m.id for m in (await self.client.with_options(max_retries=1).models.list()).data]
        except APIConnectionError as exc:
            raise ConfigError(f"cannot reach the model endpoint {self.client.base_url}: {connection_failure(exc)}; start the "
                              "server (e.g. `vllm serve MODEL --port 8000`) or pass --base-url") from None
        except APIStatusError as exc:
            if exc.status_code in (401, 403):
                raise ConfigError(f"the model endpoint {self.client.base_url} refused the API key (HTTP "
                                  f"{exc.status_code}); pass --api-key") from None
            return
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
                              f"{describe(exc)}") from exc

    async def _act(self, env: ToolEnv) -> str:
        if env.chat_format.single_message:
            return await self._continue(env)
        messages = [m for m in env.messages if m["role"] in ("system", "user", "assistant", "tool")]
        tools = [spec.openai_schema() for spec in env.tool_specs]
        completion = await self.client.chat.completions.create(
            model=self.model, messages=messages, tools=tools, temperature=self.temperature,
            max_tokens=self.max_tokens, extra_body=self.extra_body or None)
        message = completion.choices[0].message
        content, calls = message.content or "", tool_calls_as_text(message.tool_calls, env.chat_format)
        text = f"{content}\n{calls}" if content and calls else (content or calls)
        reasoning = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
        return f"<think>\n{reasoning}\n</think>\n\n{text}" if reasoning else text

    async def _continue(self, env: ToolEnv) -> str:
        prompt, so_far = env.messages[0]["content"], env.transcript[len(env.messages[0]["content"]):]
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        extra = dict(self.extra_body)
        extra["include_stop_str_in_output"] = True
        if so_far:
            messages.append({"role": "assistant", "content": so_far})
            extra.update(continue_final_message=True, add_generation_prompt=False)
        completion = await self.client.chat.completions.create(
            model=self.model, messages=messages, temperature=self.temperature, max_tokens=self.max_tokens,
            stop=list(env.chat_format.stop_sequences) or None, extra_body=extra)
        return completion.choices[0].message.content or ""
