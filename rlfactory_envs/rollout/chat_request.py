"""What an OpenAI-compatible policy sends for an episode, and how it reads the reply back as the model's raw text.

The env keeps its episode as OpenAI chat messages (``ToolEnv.messages``): the assistant's raw text with the calls
that ran as ``tool_calls``, a ``tool`` message answering each by its ``tool_call_id``, feedback as a user message.
``request_messages`` turns them into what a server accepts:

- ``native`` tool calling (the default): the history as the API has it, each assistant turn with its ``tool_calls``
  (the server renders them in the model's own format) and its text without the calls it already holds; every
  server that implements the API accepts it (vLLM with a tool parser, llama.cpp, the OpenAI API).
- ``text``: no structured calls at all: each assistant turn is the model's raw text and the tools' results go back
  as a user message in the chat format's words (``ChatFormat.results_as_text``), for a server without a tool parser.

``finish_text`` reads a stop string back: a server that does not echo the stop string it stopped at (anything but
vLLM with ``include_stop_str_in_output``) returns ``<search> query`` for Search-R1's ``<search> query </search>``;
the closing tag is put back, so the env reads the call as the model wrote it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from rlfactory_envs.kernel.chat_format import ChatFormat
from rlfactory_envs.kernel.tool_call import ToolCall

ToolMode = Literal["native", "text"]
TOOL_MODES: tuple[str, ...] = ("native", "text")


def request_messages(messages: Sequence[dict[str, Any]], chat_format: ChatFormat, mode: ToolMode,
                     texts: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """``messages`` (an env's) as a chat request carries them in ``mode``. ``texts`` maps an assistant message's
    index to its text part as the server gave it (the raw text without the calls), for native mode."""
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        role, content = message["role"], message.get("content")
        if role == "assistant":
            out.append(_assistant(message, mode, (texts or {}).get(index)))
        elif role == "tool" and mode == "native":
            out.append({"role": "tool", "tool_call_id": message["tool_call_id"], "content": content})
        elif role == "tool":
            out.append({"role": "user", "content": chat_format.results_as_text([content])})
        elif role in ("system", "user"):
            out.append({"role": role, "content": content})
    return out if mode == "native" else _merge_user_turns(out)


def _assistant(message: dict[str, Any], mode: ToolMode, text: str | None) -> dict[str, Any]:
    """An assistant turn: native, its text part (the raw response when the server's is not known) and
    ``tool_calls``; text, the raw response alone."""
    calls = message.get("tool_calls")
    if mode == "text" or not calls:
        return {"role": "assistant", "content": message["content"]}
    content = message["content"] if text is None else text
    return {"role": "assistant", "content": content or None, "tool_calls": [dict(c) for c in calls]}


def _merge_user_turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive user messages (one turn's results and its feedback) as one: templates that want the roles to
    alternate refuse two in a row."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        if merged and message["role"] == "user" and merged[-1]["role"] == "user":
            merged[-1] = {"role": "user", "content": f"{merged[-1]['content']}\n{message['content']}"}
        else:
            merged.append(message)
    return merged


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


def finish_text(text: str, finish_reason: str | None, stops: Sequence[str], matched: Any = None) -> str:
    """``text`` ending with the stop string the server stopped at: kept when it is there, put back when the server
    said which (vLLM's ``stop_reason``) or when one closes the tag left open at the end (Search-R1's ``<search> q``
    becomes ``<search> q</search>``); unchanged when the reply ended any other way (its length, its end of turn)."""
    if finish_reason != "stop" or not stops or any(text.endswith(stop) for stop in stops):
        return text
    if isinstance(matched, str) and matched in stops:
        return text + matched
    opened = [(text.rfind("<" + stop[2:]), stop) for stop in stops if stop.startswith("</")]
    start, stop = max(opened, default=(-1, ""))
    return text + stop if start >= 0 and text.find(stop, start) < 0 else text
