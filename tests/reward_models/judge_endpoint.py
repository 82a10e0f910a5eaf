"""A scripted judge behind a real OpenAI chat-completions endpoint on loopback, for the judge's tests, benchmark and
examples.

Each request takes the next scripted ``Step`` (``judge.script(...)``), or, when none is left, the judge's
``default`` (a ``Step``, a reply text, or a function of the request body giving one). A step is a reply (with a
delay), or an HTTP error status with headers (``429`` with ``Retry-After``, ``500``, ``401``). Every request body is
kept (``judge.requests``), and the most requests ever in flight at once (``judge.max_in_flight``).

The default, ``verdict_by_reference``, plays a fair QA judge: ``yes`` when the answer block equals one of the
reference answers (case and surrounding space aside), else ``no``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from rlfactory_reward_models.judge.templates import ANSWER_BEGIN, ANSWER_END
from tests.conftest import chat_completion, openai_endpoint


@dataclass(frozen=True)
class Step:
    """One scripted answer: ``content`` after ``delay_s`` seconds, or, when ``status`` is not 200, that error."""

    content: str | None = "yes"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


Script = Step | str | Callable[[dict[str, Any]], "Step | str"]


def user_prompt(body: dict[str, Any]) -> str:
    """The last user message of a request body."""
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def answer_in(body: dict[str, Any]) -> str:
    """The text of the answer block of a request's prompt."""
    prompt = user_prompt(body)
    return prompt.split(ANSWER_BEGIN + "\n", 1)[1].split("\n" + ANSWER_END, 1)[0]


def references_in(body: dict[str, Any]) -> list[str]:
    """The reference answers of a QA prompt (one, a ``- `` list, or joined by `` | ``); none for another
    template's."""
    prompt = user_prompt(body)
    if "Reference answer(s):\n" not in prompt:
        return []
    section = prompt.split("Reference answer(s):\n", 1)[1].split("\n\n", 1)[0]
    lines = [line.removeprefix("- ") for line in section.splitlines()]
    return [ref for line in lines for ref in line.split(" | ")]


def verdict_by_reference(body: dict[str, Any]) -> str:
    answer = answer_in(body).strip().lower()
    return "yes" if any(answer == ref.strip().lower() for ref in references_in(body)) else "no"


class ScriptedJudge:
    def __init__(self, default: Script = verdict_by_reference, model: str = "scripted-judge") -> None:
        self.default = default
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.api_keys: list[str] = []
        """The bearer token of every request."""
        self.in_flight = 0
        self.max_in_flight = 0
        self.closing = threading.Event()
        self._queue: deque[Script] = deque()

    def script(self, *steps: Script) -> ScriptedJudge:
        """Answer the next requests with ``steps``, in order."""
        self._queue.extend(steps)
        return self

    @property
    def count(self) -> int:
        return len(self.requests)

    def answers(self) -> list[str]:
        """The answer block of every request so far."""
        return [answer_in(body) for body in self.requests]

    async def handle(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        self.api_keys.append(request.headers.get("authorization", "").removeprefix("Bearer "))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            step = self._queue.popleft() if self._queue else self.default
            if callable(step):
                step = step(body)
            if isinstance(step, str):
                step = Step(step)
            await self._sleep(step.delay_s)
            if step.status != 200:
                return JSONResponse({"error": {"message": step.content or f"scripted HTTP {step.status}",
                                               "type": "scripted", "code": step.status}},
                                    status_code=step.status, headers=step.headers)
            return JSONResponse(chat_completion({"content": step.content}), headers=step.headers)
        finally:
            self.in_flight -= 1

    async def _sleep(self, seconds: float) -> None:
        """Sleep ``seconds``, cut short when the server is shutting down (so a test never waits on a slow step)."""
        deadline = time.monotonic() + seconds
        while not self.closing.is_set() and (left := deadline - time.monotonic()) > 0:
            await asyncio.sleep(min(left, 0.02))


@contextmanager
def serve(judge: ScriptedJudge) -> Iterator[str]:
    """``judge`` on a free loopback port (real HTTP, ``/v1/models`` listing its model); yields the base URL."""
    with openai_endpoint(judge.handle, models=[judge.model]) as url:
        try:
            yield url
        finally:
            judge.closing.set()
