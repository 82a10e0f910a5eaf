"""Talking to the judge: ``AsyncOpenAI`` clients and one concurrency bound per event loop, and failures in words.

An HTTP client is bound to the loop it first ran on, and reward models run on whichever loop the env steps in (a
trainer's, an env's loop thread, a fresh ``asyncio.run`` per test). So each loop gets its own clients, made lazily
on first use inside it (one per ``CONNECTIONS_PER_CLIENT`` requests of the bound, used in turn, sharing one TLS
context); clients of loops that have closed are dropped when the next ones are made. Retries with
backoff (429 with ``Retry-After``, 5xx, connection errors) are the OpenAI client's own; every HTTP attempt is
counted through an httpx event hook, so the judge can report how many retries it took. A reply body is read up to
``max_reply_bytes`` and refused past that (``bounded_reply``).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai

from rlfactory_tool_servers.connection_errors import connection_failure
from rlfactory_reward_models.judge.bounded_reply import JudgeReplyRefused, ask_identity, http_library, reply_bound
from rlfactory_reward_models.judge.config import JudgeConfig

__all__ = ["JudgeClients", "LoopState", "describe_failure", "reply_text"]

_ATTEMPTS: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("rlf_judge_attempts", default=None)


async def _count_attempt(request: Any) -> None:
    """httpx ``request`` hook: one more HTTP attempt for the judge request running in this context."""
    box = _ATTEMPTS.get()
    if box is not None:
        box[0] += 1


CONNECTIONS_PER_CLIENT = 16
"""About how many requests in flight each HTTP client carries (the concurrency bound is shared out over clients used
in turn): httpcore's pool checks every idle connection on each request, so one pool of 256 connections costs more
CPU per request than 16 pools of 16 (measured: 2.3 vs 1.7 ms at 256 in flight)."""


@dataclass
class LoopState:
    """What one event loop's judge requests share: the clients (used in turn), the bound, the requests in flight."""

    clients: list[openai.AsyncOpenAI]
    semaphore: asyncio.Semaphore
    in_flight: dict[bytes, asyncio.Task[Any]] = field(default_factory=dict)
    turn: int = 0

    def next_client(self) -> openai.AsyncOpenAI:
        self.turn = (self.turn + 1) % len(self.clients)
        return self.clients[self.turn]


class JudgeClients:
    """The per-loop clients of one judge configuration."""

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self._states: dict[asyncio.AbstractEventLoop, LoopState] = {}
        self._lock = threading.Lock()

    def state(self) -> LoopState:
        """The running loop's state, made on first use (call from inside a coroutine)."""
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        if state is not None:
            return state
        with self._lock:
            for stale in [other for other in self._states if other.is_closed()]:
                del self._states[stale]
            state = self._states.get(loop)
            if state is None:
                shards = -(-self.config.concurrency // CONNECTIONS_PER_CLIENT)
                state = self._states[loop] = LoopState([self._make_client() for _ in range(shards)],
                                                       asyncio.Semaphore(self.config.concurrency))
        return state

    def _make_client(self) -> openai.AsyncOpenAI:
        config = self.config
        tls = _shared_tls_context()
        hooks = {"request": [_count_attempt, ask_identity], "response": [reply_bound(config.max_reply_bytes)]}
        http_client = openai.DefaultAsyncHttpxClient(event_hooks=hooks, **({"verify": tls} if tls is not None else {}))
        return openai.AsyncOpenAI(base_url=config.base_url, api_key=config.resolved_api_key(),
                                  max_retries=config.max_retries, timeout=config.timeout_s, http_client=http_client)

    async def complete(self, messages: Sequence[Mapping[str, str]], attempts: list[int]) -> str:
        """The judge's reply text to ``messages`` (``""`` when it has none), waiting for a free slot first;
        ``attempts[0]`` counts the HTTP attempts made. Raises what the OpenAI client raises."""
        state = self.state()
        config = self.config
        body = {**config.extra_body, "model": config.model, "messages": list(messages),
                "max_tokens": config.max_tokens, "temperature": config.temperature}
        async with state.semaphore:
            token = _ATTEMPTS.set(attempts)
            try:
                # The client's generic POST (its retries, backoff and errors, documented for custom requests) with
                # the body as JSON: a third less CPU per request than chat.completions.create, which re-walks the
                # messages through its typed transforms and builds a pydantic response.
                response = await state.next_client().post("/chat/completions", cast_to=dict, body=body)
            finally:
                _ATTEMPTS.reset(token)
        return reply_text(response)

    async def aclose(self) -> None:
        """Close every client: the running loop's here, a live other loop's on that loop; forget them all."""
        with self._lock:
            states, self._states = self._states, {}
        current = asyncio.get_running_loop()
        for loop, state in states.items():
            if loop is current:
                await _close_all(state.clients)
            elif loop.is_running() and not loop.is_closed():
                future = asyncio.run_coroutine_threadsafe(_close_all(state.clients), loop)
                try:
                    await asyncio.wait_for(asyncio.wrap_future(future), 5.0)
                except Exception:  # noqa: BLE001 - a busy or dying loop keeps its client; nothing to do
                    pass


@functools.lru_cache(maxsize=1)
def _shared_tls_context() -> Any:
    """One TLS context for every client, made as the HTTP library makes its default one (loading the CA bundle
    takes ~20 ms, which each client would otherwise pay: per event loop, per shard); ``None`` if it cannot be."""
    try:
        return http_library().create_ssl_context()
    except Exception:  # noqa: BLE001 - then each client makes its own, as by default
        return None


async def _close_all(clients: Sequence[openai.AsyncOpenAI]) -> None:
    for client in clients:
        await client.close()


def reply_text(response: Any) -> str:
    """The assistant's text in a chat-completion response body (``""`` when it has none)."""
    try:
        content = response["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return ""
    return content if isinstance(content, str) else ""


def describe_failure(exc: BaseException, config: JudgeConfig) -> str:
    """One line saying why a judge request failed."""
    where = config.base_url
    if isinstance(exc, JudgeReplyRefused):
        text = str(exc)
    elif isinstance(exc, (asyncio.TimeoutError, openai.APITimeoutError)):
        text = f"judge timed out after {config.timeout_s:g} s ({where})"
    elif isinstance(exc, openai.AuthenticationError):
        text = f"judge refused the API key (HTTP 401) at {where}: {_message(exc)}"
    elif isinstance(exc, openai.APIStatusError):
        retried = f" after {config.max_retries} retries" if exc.status_code == 429 or exc.status_code >= 500 else ""
        text = f"judge answered HTTP {exc.status_code}{retried} at {where}: {_message(exc)}"
    elif isinstance(exc, openai.APIConnectionError):
        text = f"judge unreachable at {where}: {connection_failure(exc)}"
    else:
        text = f"judge request failed: {type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, Mapping) else inner
        if message:
            return str(message)
    return str(exc.message)
