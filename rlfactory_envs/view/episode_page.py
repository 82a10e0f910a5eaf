"""An episode as its page shows it: the prompt, then turn by turn the model's response, its tool calls with their
results (latency, errors), what the env told the model, and the turn's process reward; at the end the reward with
its provenance (parts, reasons) and the verdict tables of the reward's ``info``.

The turns come from the record's ``messages`` (an assistant message and the tool and user messages after it make a
turn) and, when the record has them, its ``steps`` (``rollout.step_details``: the same turns' calls, latencies and
process rewards). A record without messages (a trainer's, say) shows its transcript. Every text is cut at
``MAX_TEXT_CHARS`` with a note saying how much was cut.
"""

from __future__ import annotations

from typing import Any

from rlfactory_envs.view.verdicts import verdict_sections

MAX_TEXT_CHARS = 200_000
HEADER_KEYS = ("env_id", "seed", "dataset", "answer", "terminated", "truncated", "turns", "tool_calls",
               "tool_errors", "error", "train_step", "format_version")


def episode_view(record: dict[str, Any]) -> dict[str, Any]:
    """The page of one record (an episode record, an audit example, or ``{"unreadable": why}``)."""
    if "unreadable" in record:
        return {"kind": "unreadable", "why": str(record["unreadable"])}
    if "audit_example" in record:
        return {"kind": "audit", **record}
    messages = [m for m in record.get("messages") or () if isinstance(m, dict)]
    steps = [s for s in record.get("steps") or () if isinstance(s, dict)]
    prompt, turns = split_turns(messages, steps)
    return {"kind": "episode", "header": {key: record.get(key) for key in HEADER_KEYS},
            "task": record.get("task"), "prompt": prompt, "turns": turns,
            "transcript": None if messages else clip(record.get("transcript")),
            "reward": reward_view(record, steps)}


def split_turns(messages: list[dict[str, Any]], steps: list[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    """The prompt's messages (before the first response), and a turn per assistant message with the messages
    after it and its step's details."""
    prompt: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        role, text = str(message.get("role")), clip(message.get("content"))
        if role == "assistant":
            step = steps[len(turns)] if len(turns) < len(steps) else {}
            turns.append(new_turn(len(turns) + 1, text, step))
        elif not turns:
            prompt.append({"role": role, "text": text})
        elif role == "tool":
            add_result(turns[-1], str(message.get("name") or ""), text)
        else:
            turns[-1]["notes"].append({"role": role, "text": text})
    return prompt, turns


def new_turn(number: int, response: str, step: dict[str, Any]) -> dict[str, Any]:
    """A turn's entry before its results are added: the calls come from the step when it has them."""
    calls = [dict(call, result=None) for call in step.get("tool_calls") or () if isinstance(call, dict)]
    return {"turn": number, "response": response, "calls": calls, "notes": [],
            "parse_errors": step.get("parse_errors") or [], "seconds": step.get("seconds"),
            "process_reward": step.get("process_reward"), "process_reward_parts": step.get("process_reward_parts"),
            "process_reward_reason": step.get("process_reward_reason")}


def add_result(turn: dict[str, Any], name: str, text: str) -> None:
    """Give ``text`` to the turn's first call of ``name`` still without a result (a new call when none is)."""
    for call in turn["calls"]:
        if call.get("result") is None and call.get("name") == name:
            call["result"] = text
            return
    turn["calls"].append({"name": name, "result": text})


def reward_view(record: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The reward and where it came from: parts, reasons (the record's, else its last step's), verdict tables."""
    last = steps[-1] if steps else {}
    info = record.get("reward_info") if isinstance(record.get("reward_info"), dict) else {}
    return {"reward": record.get("reward"), "parts": record.get("reward_parts") or {},
            "reason": record.get("reward_reason") or last.get("reward_reason"),
            "truncation_reason": last.get("truncation_reason"), "sections": verdict_sections(info),
            "info": info}


def clip(text: Any) -> str:
    """``text`` as a string, cut at ``MAX_TEXT_CHARS`` with a note of how much more there was."""
    text = "" if text is None else text if isinstance(text, str) else str(text)
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return f"{text[:MAX_TEXT_CHARS]}\n[... {len(text) - MAX_TEXT_CHARS:,} more characters not shown]"
