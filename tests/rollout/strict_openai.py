"""A stand-in for a strict OpenAI chat-completions server: it refuses, with HTTP 400 and OpenAI's error object, every
request the OpenAI API refuses for its shape, checked with the ``openai`` package's own request types (pydantic
validates the TypedDicts of ``openai.types.chat``), and answers the others with a scripted model.

What it refuses, as the API does: a top-level field the API does not take (vLLM's ``include_stop_str_in_output``,
``continue_final_message``), a message of no known shape or with a key its role does not take (a ``tool`` message
with ``name``), a ``tool`` message that answers no call of the assistant message before it (or has no
``tool_call_id``), and an assistant message with ``tool_calls`` whose ids are not all answered before the next
message of another role. A model's reply is the scripted ``reply(body)``: a dict with ``content``, optional
``tool_calls`` (``[(name, arguments)]``, ids are made here) and ``finish_reason``.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from openai.types.chat import ChatCompletionMessageParam, completion_create_params
from pydantic import TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse

from tests.conftest import openai_endpoint

PARAMS = completion_create_params.CompletionCreateParamsNonStreaming
REQUEST_FIELDS = frozenset(typing.get_type_hints(PARAMS))
MESSAGE = TypeAdapter(ChatCompletionMessageParam)
MESSAGE_KEYS = {typing.get_type_hints(t)["role"].__args__[0]: frozenset(typing.get_type_hints(t))
                for t in typing.get_args(ChatCompletionMessageParam)}


class Refused(Exception):
    """The request is one the OpenAI API answers with HTTP 400."""


def problems(body: dict[str, Any]) -> None:
    """``Refused`` with the API's kind of message for the first problem of ``body``."""
    unknown = sorted(set(body) - REQUEST_FIELDS)
    if unknown:
        raise Refused(f"Unrecognized request argument supplied: {unknown[0]}")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Refused("'messages' must be a non-empty array")
    for index, message in enumerate(messages):
        _check_message(index, message)
    _check_tool_sequence(messages)


def _check_message(index: int, message: Any) -> None:
    try:
        validated = MESSAGE.validate_python(message)
        _materialise(validated)
    except ValidationError as exc:
        raise Refused(f"Invalid 'messages[{index}]': {exc.error_count()} validation errors: "
                      f"{exc.errors()[0]['msg']}") from None
    extra = sorted(set(message) - MESSAGE_KEYS[message["role"]])
    if extra:
        raise Refused(f"Additional properties are not allowed ('{extra[0]}' was unexpected) - 'messages.{index}'")


def _materialise(value: Any) -> None:
    """Validate the lazily validated iterables (``tool_calls``, content parts) by walking them."""
    if isinstance(value, dict):
        for item in value.values():
            _materialise(item)
    elif isinstance(value, Iterator) or (isinstance(value, Iterable) and not isinstance(value, (str, bytes))):
        for item in value:
            _materialise(item)


def _check_tool_sequence(messages: list[dict[str, Any]]) -> None:
    pending: set[str] = set()
    answerable: set[str] = set()
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            if message["tool_call_id"] not in answerable:
                raise Refused(f"Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                              f"message with 'tool_calls' (messages[{index}])")
            pending.discard(message["tool_call_id"])
            continue
        if pending:
            raise Refused("An assistant message with 'tool_calls' must be followed by tool messages responding to "
                          f"each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                          f"{', '.join(sorted(pending))}")
        answerable = {call["id"] for call in message.get("tool_calls") or ()} if role == "assistant" else set()
        pending = set(answerable)


Reply = Callable[[dict[str, Any]], dict[str, Any]]


class StrictServer:
    """Validates every request (``problems``), keeps the accepted ones and the refusals, answers with ``reply``."""

    def __init__(self, reply: Reply, model: str = "scripted") -> None:
        self.reply = reply
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.refusals: list[str] = []

    async def handle(self, request: Request) -> JSONResponse:
        body = await request.json()
        try:
            problems(body)
        except Refused as refused:
            self.refusals.append(str(refused))
            return JSONResponse({"error": {"message": str(refused), "type": "invalid_request_error",
                                           "param": None, "code": None}}, status_code=400)
        self.requests.append(body)
        answer = self.reply(body)
        return JSONResponse(self.completion(answer, len(self.requests)))

    def completion(self, answer: dict[str, Any], number: int) -> dict[str, Any]:
        calls = [{"id": f"call_{number}_{i}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps(arguments)}}
                 for i, (name, arguments) in enumerate(answer.get("tool_calls") or ())]
        message = {"role": "assistant", "content": answer.get("content"), **({"tool_calls": calls} if calls else {})}
        finish = answer.get("finish_reason") or ("tool_calls" if calls else "stop")
        return {"id": f"chatcmpl-{number}", "object": "chat.completion", "created": 0, "model": self.model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


@contextmanager
def serve(server: StrictServer) -> Iterator[str]:
    """``server`` on a free loopback port, its model listed at ``/v1/models``; yields the base URL."""
    with openai_endpoint(server.handle, models=[server.model]) as url:
        yield url
