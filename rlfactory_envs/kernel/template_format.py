"""``TemplateChatFormat``: a chat format read from the model's own chat template (``apply_chat_template`` with
``tools=``), for any model: Gemma, Llama, Mistral, DeepSeek, GPT-OSS as well as Qwen.

The observation after the model's turn is what the template renders there: a short conversation is rendered up to
the model's turn and again with the turn's tool results, feedback and the next generation prompt, and the text after
the turn's end-of-turn marker is the observation (TRL's way of finding the tool suffix). So
``prompt + response_1 + observation_1 + ...`` is exactly the template's rendering of the episode, token-in/token-out,
for any template that is prefix-preserving (rendering more messages never changes how the earlier ones render).

Checked once, when the format is made (``ConfigError``, one line, when a check fails):

- prefix preservation, over a tool turn, a feedback turn and a second tool turn. Qwen3's template is not (it drops
  the reasoning of earlier turns); it is patched as TRL patches it (every assistant turn keeps its reasoning block)
  and checked again; any other template that fails is refused.
- whether the template renders ``tools`` and ``tool`` messages. One that renders no tools (Gemma 3, Llama 3's base
  template) gets them in the first turn in its dialect's words (``Dialect.tool_prompt``, vLLM's for Gemma 3), and one
  without a tool role gets the results as a user turn (``Dialect.result_text``); nothing is dropped silently.

Tool calls are read and written in the dialect the template is for (``dialects.detect_dialect``), or the one given.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlfactory_envs.kernel.dialects import Dialect, detect_dialect
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.parsers import DEFAULT_MAX_TOOL_CALLS, ActionParser
from rlfactory_envs.kernel.tool_call import ToolCall, ToolResult

Render = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None, bool], str]
"""``render(messages, tools, add_generation_prompt)``: the template's text."""

QUESTION, ANSWER, RESULT, FEEDBACK = "rlfQuestion7", "rlfAnswer7", "rlfResult7", "rlfFeedback7"
PROBE_TOOL = {"type": "function", "function": {"name": "rlfProbeTool7", "description": "probe",
                                               "parameters": {"type": "object", "properties": {}}}}

_QWEN3_DROPPED_REASONING = re.compile(
    r"\{%-? if loop\.index0 > ns\.last_query_index %\}.*?"
    r"(\{\{- '<\|im_start\|>' \+ message\.role \+ '\\n<think>\\n' .*?\}\}).*?\{%-? endif %\}\s*\{%-? else %\}.*?"
    r"\{%-? endif %\}", re.DOTALL)


def keep_reasoning(template: str) -> str | None:
    """Qwen3's template with every assistant turn keeping its reasoning block (TRL's training patch: earlier turns
    then render as they were generated), or ``None`` when ``template`` is not Qwen3's."""
    patched, count = _QWEN3_DROPPED_REASONING.subn(lambda m: "{%- if true %}" + m.group(1) + "{%- endif %}", template,
                                                   count=1)
    return patched if count else None


@dataclass(frozen=True)
class TemplateShape:
    """What probing a template found: its end-of-turn marker and the text after it, the generation prompt, and
    whether it renders tools, ``tool`` messages, and a system message."""

    end_of_turn: str
    after_end: str
    generation_prompt: str
    renders_tools: bool
    tool_role: bool
    system_role: bool


def probe(render: Render) -> TemplateShape:
    """The shape of the template ``render`` renders (see ``TemplateShape``)."""
    user = [{"role": "user", "content": QUESTION}]
    turn = render(user + [{"role": "assistant", "content": ANSWER}], None, False)
    close = turn[turn.rindex(ANSWER) + len(ANSWER):]
    bare, prompted = render(user, None, False), render(user, None, True)
    return TemplateShape(
        end_of_turn=close.rstrip() or close, after_end=close[len(close.rstrip()):] if close.rstrip() else "",
        generation_prompt=prompted[len(bare):] if prompted.startswith(bare) else "",
        renders_tools="rlfProbeTool7" in _try(render, user, [PROBE_TOOL]),
        tool_role=RESULT in _try(render, user + [_assistant([ANSWER], ["c00010000"], ["rlfProbeTool7"]),
                                                 {"role": "tool", "tool_call_id": "c00010000", "name": "rlfProbeTool7",
                                                  "content": RESULT}], None),
        system_role=FEEDBACK in _try(render, [{"role": "system", "content": FEEDBACK}] + user, None))


def _try(render: Render, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """The rendering, or ``""`` when the template refuses it (a role it does not take)."""
    try:
        return render(messages, tools, False)
    except Exception:  # noqa: BLE001 - jinja's TemplateError, a template's raise_exception, a TypeError
        return ""


def _assistant(content: Sequence[str], ids: Sequence[str], names: Sequence[str]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content)}
    if ids:
        message["tool_calls"] = [{"id": i, "type": "function", "function": {"name": n, "arguments": {}}}
                                 for i, n in zip(ids, names)]
    return message


class TemplateChatFormat:
    """A chat format from a chat template (see the module docstring). ``render`` renders the template (from a
    tokenizer: ``rlfactory_envs.kernel.chat_template.template_renderer``), ``template`` is its text (for the dialect
    and the patches), ``dialect`` the tool-call dialect, ``template_kwargs`` what the template is rendered with."""

    stop_sequences: tuple[str, ...] = ()
    single_message = False

    def __init__(self, render: Callable[..., str], template: str, dialect: Dialect | None = None, *,
                 template_kwargs: Mapping[str, Any] | None = None, name: str = "template",
                 special_tokens: Sequence[str] = ()):
        self.template_kwargs_given = dict(template_kwargs or {})
        self.dialect = dialect or detect_dialect(template)
        self.name = name
        self.patched_template: str | None = None
        self._raw_render = render
        self.shape = probe(self._render)
        problem = self._prefix_problem()
        if problem is not None and (patched := keep_reasoning(template)) is not None:
            self.patched_template = patched
            problem = self._prefix_problem()
        if problem is not None:
            raise ConfigError(f"the chat template is not prefix-preserving ({problem}): the tokens a trainer keeps "
                              "would differ from the template's rendering; give a prefix-preserving template "
                              "(chat_template=)")
        self.shows_tool_schemas = self.shape.renders_tools
        header = self.shape.generation_prompt
        plain = header
        for token in special_tokens:
            plain = plain.replace(token, "")
        self.last_turn_markers = tuple(dict.fromkeys(marker for marker in (header, plain) if marker.strip()))

    @property
    def template_kwargs(self) -> dict[str, Any]:
        kwargs = dict(self.template_kwargs_given)
        if self.patched_template is not None:
            kwargs["chat_template"] = self.patched_template
        return kwargs

    def _render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                add_generation_prompt: bool) -> str:
        return self._raw_render(messages, tools, add_generation_prompt, **self.template_kwargs)

    # -- checks ----------------------------------------------------------------------------------------------------

    def _prefix_problem(self) -> str | None:
        """How rendering more messages changed the earlier ones in a tool turn, a feedback turn or a second tool
        turn, or ``None`` when it never did."""
        user = {"role": "user", "content": QUESTION}
        first = _assistant([ANSWER], ["c00010000"], ["rlfProbeTool7"])
        second = _assistant([ANSWER, "2"], ["c00020000"], ["rlfProbeTool7"])
        results = [ToolResult("rlfProbeTool7", RESULT)]
        cases = [("a tool turn", [user, first], self.turn_messages(results, None, ["c00010000"])),
                 ("a feedback turn", [user, _assistant([ANSWER], [], [])], self.turn_messages([], FEEDBACK, [])),
                 ("a second tool turn", [user, first, *self.turn_messages(results, None, ["c00010000"]), second],
                  self.turn_messages(results, None, ["c00020000"]))]
        for what, before, more in cases:
            try:
                head = self._through_turn(self._render(before, None, False))
                whole = self._render(before + more, None, True)
            except Exception as exc:  # noqa: BLE001 - a template that refuses the conversation cannot be used
                return f"it cannot render {what}: {type(exc).__name__}: {exc}"
            if not whole.startswith(head):
                return f"after {what} the model's turn renders differently"
        return self._history_problem(cases[-1][1], cases[-1][2], results)

    def _history_problem(self, before: list[dict[str, Any]], more: list[dict[str, Any]],
                         results: list[ToolResult]) -> str | None:
        """Whether a turn's observation depends on the turns before it (it is taken from a one-turn conversation)."""
        head = self._through_turn(self._render(before, None, False))
        after = self._render(before + more, None, True)[len(head):]
        if self.shape.end_of_turn + after != self.observation(ANSWER + "2", results, None, call_ids=["c00020000"]):
            return "a turn's results render differently after earlier turns"
        return None

    def _through_turn(self, text: str) -> str:
        """``text`` up to and including the last end-of-turn marker (the model's turn's end)."""
        end = text.rfind(self.shape.end_of_turn)
        return text if end < 0 else text[: end + len(self.shape.end_of_turn)]

    # -- the turn --------------------------------------------------------------------------------------------------

    def turn_messages(self, results: Sequence[ToolResult], feedback: str | None,
                      call_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The messages after the model's turn as the template takes them: ``tool`` messages and the feedback as a
        user message, or (a template without a tool role) one user turn holding both."""
        if self.shape.tool_role:
            messages = [{"role": "tool", "tool_call_id": i, "name": r.name, "content": r.text}
                        for i, r in zip(call_ids, results)]
            return messages + ([{"role": "user", "content": feedback}] if feedback else [])
        parts = [self.dialect.result_text(r.text) for r in results] + ([feedback] if feedback else [])
        return [{"role": "user", "content": "\n".join(parts)}] if parts else []

    def observation(self, response: str, results: Sequence[ToolResult], feedback: str | None, *,
                    call_ids: Sequence[str] = ()) -> str:
        ids = list(call_ids) or [f"c0001{i:04d}" for i in range(len(results))]
        turn = [{"role": "user", "content": QUESTION}, _assistant([ANSWER], ids[:len(results)], [r.name for r in results])]
        head = self._through_turn(self._render(turn, None, False))
        whole = self._render(turn + self.turn_messages(results, feedback, ids), None, True)
        after = whole[len(head):] if whole.startswith(head) else whole[whole.rfind(self.shape.end_of_turn):]
        end, rest = self.shape.end_of_turn, self.shape.after_end
        if rest and response.endswith(end + rest) and after.startswith(rest):
            return after[len(rest):]
        return after if response.endswith(end) else end + after

    # -- the prompt and the model's side ---------------------------------------------------------------------------

    def prompt_messages(self, messages: Sequence[Mapping[str, Any]],
                        tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """``messages`` as the template shows them whole: the tools stated in the first turn when it renders none,
        and the system prompt moved into the first user turn when it has no system role."""
        out = [dict(m) for m in messages]
        self.dialect.check_tools(tools)
        if tools and not self.shape.renders_tools:
            stated = self.dialect.tool_prompt(tools)
            if out and out[0]["role"] == "system":
                out[0]["content"] = f"{out[0]['content']}\n\n{stated}"
            else:
                out.insert(0, {"role": "system", "content": stated})
        if out and out[0]["role"] == "system" and not self.shape.system_role and len(out) > 1:
            system, first = out[0], out[1]
            out[1:2] = [{**first, "content": f"{system['content']}\n\n{first['content']}"}]
            out = out[1:]
        return out

    def parser(self, max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS, answer_tag: str = "answer",
               repair: bool = False) -> ActionParser:
        return self.dialect.parser(max_tool_calls=max_tool_calls, answer_tag=answer_tag, repair=repair)

    def render_call(self, call: ToolCall) -> str:
        return self.dialect.render_call(call)

    def invalid_action_feedback(self, tool_names: Sequence[str], answer_tag: str = "answer") -> str:
        tools = ", ".join(tool_names) or "a tool"
        return (f"Your response contained neither a tool call nor a final answer. Call {tools} "
                f"{self.dialect.how_to_call}, or give the final answer between <{answer_tag}> and </{answer_tag}>.")

    def results_as_text(self, texts: Sequence[str]) -> str:
        return "\n".join(self.dialect.result_text(text) for text in texts)
