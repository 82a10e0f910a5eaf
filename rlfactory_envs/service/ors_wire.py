"""What an rlf env says in the Open Reward Standard's words (the ``openreward`` SDK 0.1's wire format).

- One environment per server, named after the env id (``rlf-search-nq-v0``); one split, ``train``, holding the env's
  dataset (serve another dataset with ``--set data_path=...``); a task is the env's task dict.
- Tools are the tools the model sees (``tool_specs``: the task's bound arguments hidden), plus a ``@terminal``
  tool, ``submit`` (another name if the env has a tool so named), that the harness calls with the model's final
  plain message: the message is the answer (wrapped in the env's answer tags unless it has them). It always ends
  the episode: an answer the env cannot read (``answer_problem``, a travel plan that does not parse) ends it
  truncated (``final_message_unread``), scored as one without an answer, the env's words in ``feedback``.
- A call is one turn of the env: the call written in the env's chat format (``ChatFormat.render_call``) is the
  response it steps. The output's blocks are the tools' results and the env's feedback; ``finished`` says the
  episode ended (terminated or truncated), ``reward`` is the episode's reward then (a turn's process reward, when
  the env pays one, before), ``metadata`` the env's ``info``. A call to a tool the env does not have is refused
  (``not_found``) without a turn; a call after the end is refused (``episode_finished``).
"""

from __future__ import annotations

from typing import Any

from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.tool_call import ToolCall

SPLIT = "train"
UNREAD_ANSWER = "final_message_unread"
"""The truncation reason of an episode whose final message (the terminal tool's) held no answer the env reads."""
TERMINAL_NAMES = ("submit", "submit_answer", "final_answer")
TERMINAL_ARG = "answer"
CHUNK_CHARS = 4096
"""SSE data is sent in pieces of this many characters, as the ORS server does (a client reads line by line)."""


def terminal_tool_name(env: ToolEnv) -> str:
    """The name of the terminal tool: the first of ``TERMINAL_NAMES`` no tool of the env has."""
    taken = {spec.name for spec in env.toolbox.specs}
    return next(name for name in (*TERMINAL_NAMES, "rlf_submit") if name not in taken)


def tool_specs(env: ToolEnv) -> list[dict[str, Any]]:
    """The tools the model sees, as ORS ``ToolSpec``s."""
    return [{"name": s.name, "description": s.description, "input_schema": s.input_schema} for s in env.tool_specs]


def list_tools(env: ToolEnv) -> dict[str, Any]:
    """ORS's ``ListToolsOutput``: the tools and the terminal tool."""
    terminal = {"name": terminal_tool_name(env), "arg": TERMINAL_ARG,
                "description": "The final answer: the model's last plain message."}
    return {"tools": tool_specs(env), "terminal_tool": terminal, "supports_score_group": False,
            "message_block_types": ["text"]}


def text_blocks(*texts: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "detail": None} for text in texts]


def messages(opening: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ORS ``Message``s of the env's opening chat messages (system and user turns, text blocks)."""
    roles = ("system", "user", "assistant")
    return [{"role": m["role"] if m.get("role") in roles else "user", "blocks": text_blocks(str(m.get("content", ""))),
             "detail": None} for m in opening]


def action_text(env: ToolEnv, name: str, arguments: dict[str, Any]) -> str:
    """The response a call stands for: the terminal tool's answer, or the call in the env's chat format."""
    if name == terminal_tool_name(env):
        answer = str(arguments.get(TERMINAL_ARG, ""))
        if env.parser.parse(answer).answer is not None:
            return answer
        return f"<{env.answer_tag}>{answer}</{env.answer_tag}>"
    return env.chat_format.render_call(ToolCall(name, dict(arguments)))


def is_known_tool(env: ToolEnv, name: str) -> bool:
    return name == terminal_tool_name(env) or any(spec.name == name for spec in env.tool_specs)


def tool_output(reward: float, terminated: bool, truncated: bool, info: dict[str, Any]) -> dict[str, Any]:
    """ORS's ``RunToolSuccess`` for one step of the env."""
    texts = [result["text"] for result in info.get("tool_results", [])] + list(info.get("feedback", []))
    texts += [m["content"] for m in info.get("messages", []) if m.get("role") == "user" and m.get("content")]
    finished = terminated or truncated
    if finished:
        how = "answered" if terminated else f"truncated ({info.get('truncation_reason')})"
        texts.append(f"The episode is over ({how}); reward {reward:g}.")
    paid = finished or "process_reward" in info
    metadata = {key: value for key, value in info.items() if key != "messages"}
    return {"ok": True, "output": {"blocks": text_blocks(*texts), "metadata": metadata,
                                   "reward": reward if paid else None, "finished": finished}}


def tool_error(message: str, reason: str) -> dict[str, Any]:
    """ORS's ``RunToolError``."""
    return {"ok": False, "error": message, "reason": reason}


def sse_events(*events: tuple[str, str]) -> bytes:
    """Server-sent events; a long ``end`` payload goes as ``chunk`` events of ``CHUNK_CHARS`` and a last ``end``."""
    out = []
    for event, data in events:
        pieces = _pieces(data) if event == "end" else [data]
        names = ["chunk"] * (len(pieces) - 1) + [event]
        out += [f"event: {name}\r\ndata: {piece}\r\n\r\n" for name, piece in zip(names, pieces)]
    return "".join(out).encode()


def _pieces(data: str) -> list[str]:
    """``data`` cut in pieces of about ``CHUNK_CHARS``, never before a space: a client strips the space after
    ``data:``, and with it any a piece started with."""
    pieces, start = [], 0
    while len(data) - start > CHUNK_CHARS:
        cut = start + CHUNK_CHARS
        while cut < len(data) and data[cut] in " \t":
            cut += 1
        pieces.append(data[start:cut])
        start = cut
    return pieces + [data[start:]]
