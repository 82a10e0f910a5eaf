"""Chat formats: how one policy protocol writes a turn, both sides of it.

A ``ChatFormat`` turns one turn's tool results and feedback into the text that follows the model's raw response in
the transcript, so that ``prompt + response_1 + observation_1 + response_2 + ...`` is the whole episode in the
policy's own format and trainers tokenise only the new text (token-in, token-out). It also carries everything else
a caller needs to know about the protocol, so that no caller asks which format it holds: the parser that reads the
model's side, how a tool call is written, where generation stops, whether the chat template shows tool schemas,
the template kwargs that make a rendered prompt agree with the observations, and where the model's latest turn
starts in a decoded transcript.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from rlfactory_envs.kernel.parsers import DEFAULT_MAX_TOOL_CALLS, ActionParser, HermesToolCallParser, SearchR1Parser
from rlfactory_envs.kernel.tool_call import ToolCall, ToolResult

IM_START, IM_END = "<|im_start|>", "<|im_end|>"


class ChatFormat(Protocol):
    """One policy protocol. ``feedback`` in ``observation`` is guidance not tied to one call (or ``None``).

    - ``stop_sequences``: strings a policy's generation should stop after; the text up to and including the stop
      string is the action. Empty when the model's own end-of-turn token ends each response (Qwen3's
      ``<|im_end|>``); Search-R1's plain-text protocol has no such token, so it stops after ``</search>`` and
      ``</answer>`` (trainer adapters pass them to the engine as stop strings).
    - ``shows_tool_schemas``: whether the chat template renders the tools' schemas into the prompt (the env's
      ``info["tools"]``). False for a protocol whose prompt describes its tools in words (Search-R1).
    - ``single_message``: the whole episode is one assistant message the model continues (Search-R1), rather
      than chat turns; an OpenAI-compatible client then continues the message instead of sending turns.
    - ``template_kwargs``: chat-template kwargs a rendered prompt needs to agree with the observations.
    - ``last_turn_markers``: strings the env writes right before each model turn (the latest one starts the
      model's last turn in a decoded transcript), in order of preference: the first one a transcript holds is
      the one read (a header's form decoded without special tokens comes after the header itself: the model can
      write the plain form).
    """

    name: str
    stop_sequences: tuple[str, ...]
    shows_tool_schemas: bool
    single_message: bool
    last_turn_markers: tuple[str, ...]

    @property
    def template_kwargs(self) -> dict[str, Any]: ...

    def observation(self, response: str, results: Sequence[ToolResult], feedback: str | None, *,
                    call_ids: Sequence[str] = ()) -> str:
        """The text after ``response``: the turn's close, ``results`` (answering the calls ``call_ids``, in order),
        ``feedback``, and the next turn's opening."""
        ...

    def parser(self, max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS, answer_tag: str = "answer",
               repair: bool = False) -> ActionParser:
        """The parser that reads this protocol's responses: strict (what the format's reference parser accepts,
        its ``reference``) unless ``repair`` asks it to run mended calls as well, reported as format errors."""
        ...

    def render_call(self, call: ToolCall) -> str:
        """``call`` written as a model writes it in this protocol (what ``parser`` reads back)."""
        ...

    def invalid_action_feedback(self, tool_names: Sequence[str], answer_tag: str = "answer") -> str:
        """What the model is told when a response neither calls a tool nor answers."""
        ...

    def results_as_text(self, texts: Sequence[str]) -> str:
        """Tool results as the model reads them inside a user turn, for a server sent the history as text (no
        ``tool`` messages: ``--tool-mode text``)."""
        ...

    def prompt_messages(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The episode's opening messages as the format shows them (a template that renders no tools gets them
        stated in the first turn); the last one is the prompt."""
        ...


class Qwen3ChatFormat:
    """Qwen3 / Hermes ChatML, byte-for-byte what the official Qwen3 chat template renders.

    The observation closes the assistant turn (``<|im_end|>\\n``, or only the newline when the response already
    ends with ``<|im_end|>``), renders the results as the template renders ``tool`` messages (one user turn, each
    result as ``\\n<tool_response>\\n...\\n</tool_response>``), feedback as a user message of its own, and opens
    the next assistant turn: exactly the rendering of the messages the env adds to ``info["messages"]``. With
    ``enable_thinking=False`` the empty ``<think>\\n\\n</think>\\n\\n`` block that Qwen3 expects is added.
    Tool calls are ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks.
    """

    name = "qwen3"
    stop_sequences: tuple[str, ...] = ()
    shows_tool_schemas = True
    single_message = False
    last_turn_markers: tuple[str, ...] = (f"{IM_START}assistant\n", "\nassistant\n")
    """The assistant header, and how it reads when special tokens were skipped in decoding (verl's reward path)."""

    def __init__(self, enable_thinking: bool = True):
        self.enable_thinking = enable_thinking

    @property
    def template_kwargs(self) -> dict[str, Any]:
        return {"enable_thinking": bool(self.enable_thinking)}

    def parser(self, max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS, answer_tag: str = "answer",
               repair: bool = False) -> ActionParser:
        return HermesToolCallParser(max_tool_calls=max_tool_calls, answer_tag=answer_tag, repair=repair)

    def render_call(self, call: ToolCall) -> str:
        payload = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
        return f"<tool_call>\n{payload}\n</tool_call>"

    def invalid_action_feedback(self, tool_names: Sequence[str], answer_tag: str = "answer") -> str:
        tools = _spoken_list(tool_names)
        call = f"Call {tools} inside <tool_call></tool_call>" if tools else "Call a tool inside <tool_call></tool_call>"
        return (f"Your response contained neither a tool call nor a final answer. {call}, or give the final answer "
                f"between <{answer_tag}> and </{answer_tag}>.")

    def results_as_text(self, texts: Sequence[str]) -> str:
        return "\n".join(f"<tool_response>\n{text}\n</tool_response>" for text in texts)

    def prompt_messages(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return list(messages)

    def close_turn(self, response: str) -> str:
        if response.endswith(IM_END):
            return "\n"
        if response.endswith(IM_END + "\n"):
            return ""
        return IM_END + "\n"

    def assistant_header(self) -> str:
        header = f"{IM_START}assistant\n"
        return header if self.enable_thinking else header + "<think>\n\n</think>\n\n"

    def observation(self, response: str, results: Sequence[ToolResult], feedback: str | None, *,
                    call_ids: Sequence[str] = ()) -> str:
        turns = []
        if results:
            body = "".join(f"\n<tool_response>\n{r.text}\n</tool_response>" for r in results)
            turns.append(f"{IM_START}user{body}{IM_END}\n")
        if feedback or not results:
            turns.append(f"{IM_START}user\n{feedback or ''}{IM_END}\n")
        return f"{self.close_turn(response)}{''.join(turns)}{self.assistant_header()}"


class SearchR1Format:
    """Search-R1's plain-text protocol: ``<search> query </search>`` calls one tool (``search`` with argument
    ``query`` unless told otherwise), results come back as ``\\n\\n<information>...</information>\\n\\n``.

    Feedback (an invalid action) is a line of its own, ``\\n{feedback}\\n``, as Search-R1 does. The model stops
    after ``</search>`` or ``</answer>`` (Search-R1's vLLM stop strings): a query is followed by the env's
    ``<information>``, never by the model's own. The whole episode is one assistant message.
    """

    name = "search_r1"
    stop_sequences: tuple[str, ...] = ("</search>", "</answer>")
    shows_tool_schemas = False
    single_message = True
    last_turn_markers: tuple[str, ...] = ("</information>",)

    def __init__(self, tool_name: str = "search", query_argument: str = "query"):
        self.tool_name = tool_name
        self.query_argument = query_argument

    @property
    def template_kwargs(self) -> dict[str, Any]:
        return {}

    def parser(self, max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS, answer_tag: str = "answer",
               repair: bool = False) -> ActionParser:
        if answer_tag != "answer":
            raise ValueError("the search_r1 format answers inside <answer></answer>; answer_tag cannot change")
        return SearchR1Parser(tool_name=self.tool_name, query_argument=self.query_argument)

    def render_call(self, call: ToolCall) -> str:
        query = call.arguments.get(self.query_argument, "")
        return f"<search> {query} </search>"

    def invalid_action_feedback(self, tool_names: Sequence[str], answer_tag: str = "answer") -> str:
        return ("My previous action is invalid. To search, I should put the query between <search> and "
                "</search>. To give the final answer, I should put it between <answer> and </answer>. "
                "Let me try again.")

    def results_as_text(self, texts: Sequence[str]) -> str:
        joined = "\n".join(text.strip() for text in texts)
        return f"<information>{joined}</information>"

    def prompt_messages(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return list(messages)

    def observation(self, response: str, results: Sequence[ToolResult], feedback: str | None, *,
                    call_ids: Sequence[str] = ()) -> str:
        text = ""
        if results:
            joined = "\n".join(r.text.strip() for r in results)
            text = f"\n\n<information>{joined}</information>\n\n"
        if feedback:
            text += f"\n{feedback}\n"
        return text


def _spoken_list(names: Sequence[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} or {names[-1]}"


CHAT_FORMATS: dict[str, Callable[[bool], ChatFormat]] = {
    "qwen3": Qwen3ChatFormat,
    "hermes": Qwen3ChatFormat,
    "search_r1": lambda enable_thinking: SearchR1Format(),
}
"""Format factories by name; each takes ``enable_thinking`` (formats without a thinking mode ignore it: Search-R1's
prompt asks for ``<think>`` reasoning in words)."""


def make_chat_format(name: str, *, enable_thinking: bool = True) -> ChatFormat:
    """A format by name (``qwen3``/``hermes`` or ``search_r1``); ``ValueError`` names the choices."""
    try:
        factory = CHAT_FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown chat format {name!r}; choose one of {sorted(CHAT_FORMATS)}") from None
    return factory(enable_thinking)
