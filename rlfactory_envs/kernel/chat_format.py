"""Observation markers: the exact text an env appends after the model's response.

A ``ChatFormat`` turns one turn's tool results and feedback into the text that follows the model's raw response
in the transcript, so that ``prompt + response_1 + observation_1 + response_2 + ...`` is the whole episode in the
policy's own format and trainers tokenise only the new text (token-in, token-out).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rlfactory_envs.kernel.tool_call import ToolResult

IM_START, IM_END = "<|im_start|>", "<|im_end|>"


class ChatFormat(Protocol):
    """Renders the environment's side of a turn. ``feedback`` is guidance not tied to one call (or ``None``).

    ``stop_sequences``: strings a policy's generation should stop after; the text up to and including the stop
    string is the action. Empty when the model's own end-of-turn token ends each response (Qwen3's
    ``<|im_end|>``); Search-R1's plain-text protocol has no such token, so its format stops after ``</search>``
    and ``</answer>`` (trainer adapters pass them to the engine as stop strings).

    ``shows_tool_schemas``: whether the chat template should render the tools' schemas into the prompt (the
    env's ``info["tools"]``). False for a protocol whose prompt describes its tools in words (Search-R1): a
    template's tool-calling system prompt would contradict it."""

    name: str
    stop_sequences: tuple[str, ...]
    shows_tool_schemas: bool

    def observation(self, response: str, results: Sequence[ToolResult], feedback: str | None) -> str: ...


class Qwen3ChatFormat:
    """Qwen3 / Hermes ChatML, byte-for-byte what the official Qwen3 chat template renders.

    The observation closes the assistant turn (``<|im_end|>\\n``, or only the newline when the response already
    ends with ``<|im_end|>``), renders the results as the template renders ``tool`` messages (one user turn, each
    result as ``\\n<tool_response>\\n...\\n</tool_response>``), feedback as a user message of its own, and opens
    the next assistant turn: exactly the rendering of the messages the env adds to ``info["messages"]``. With
    ``enable_thinking=False`` the empty ``<think>\\n\\n</think>\\n\\n`` block that Qwen3 expects is added.
    """

    name = "qwen3"
    stop_sequences: tuple[str, ...] = ()
    shows_tool_schemas = True

    def __init__(self, enable_thinking: bool = True):
        self.enable_thinking = enable_thinking

    def close_turn(self, response: str) -> str:
        if response.endswith(IM_END):
            return "\n"
        if response.endswith(IM_END + "\n"):
            return ""
        return IM_END + "\n"

    def assistant_header(self) -> str:
        header = f"{IM_START}assistant\n"
        return header if self.enable_thinking else header + "<think>\n\n</think>\n\n"

    def observation(self, response: str, results: Sequence[ToolResult], feedback: str | None) -> str:
        turns = []
        if results:
            body = "".join(f"\n<tool_response>\n{r.text}\n</tool_response>" for r in results)
            turns.append(f"{IM_START}user{body}{IM_END}\n")
        if feedback or not results:
            turns.append(f"{IM_START}user\n{feedback or ''}{IM_END}\n")
        return f"{self.close_turn(response)}{''.join(turns)}{self.assistant_header()}"


class SearchR1Format:
    """Search-R1's plain-text protocol: results as ``\\n\\n<information>...</information>\\n\\n``.

    Feedback (an invalid action) is a line of its own, ``\\n{feedback}\\n``, as Search-R1 does. The model stops
    after ``</search>`` or ``</answer>`` (Search-R1's vLLM stop strings): a query is followed by the env's
    ``<information>``, never by the model's own.
    """

    name = "search_r1"
    stop_sequences: tuple[str, ...] = ("</search>", "</answer>")
    shows_tool_schemas = False

    def observation(self, response: str, results: Sequence[ToolResult], feedback: str | None) -> str:
        text = ""
        if results:
            joined = "\n".join(r.text.strip() for r in results)
            text = f"\n\n<information>{joined}</information>\n\n"
        if feedback:
            text += f"\n{feedback}\n"
        return text


CHAT_FORMATS = {"qwen3": Qwen3ChatFormat, "hermes": Qwen3ChatFormat, "search_r1": SearchR1Format}


def make_chat_format(name: str, **kwargs) -> ChatFormat:
    try:
        return CHAT_FORMATS[name](**kwargs)
    except KeyError:
        raise ValueError(f"unknown chat format {name!r}; choose one of {sorted(CHAT_FORMATS)}") from None
