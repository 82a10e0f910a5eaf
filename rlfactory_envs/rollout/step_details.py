"""What each step of an episode did, as the trajectory file keeps it (``EpisodeRecord.steps``): the turn's tool
calls with their latency and whether they failed, the parse errors, the turn's process reward and its parts, the
step's wall time, and on the last step why the episode ended and why the reward was paid.

The texts (the model's response, the tools' results, the env's feedback) are in ``EpisodeRecord.messages``, in the
same order: step ``i`` belongs to the ``i``-th assistant message and its tool calls to the tool messages after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STEP_KEYS = {"step_seconds": "seconds", "process_reward": "process_reward",
             "process_reward_parts": "process_reward_parts", "process_reward_reason": "process_reward_reason",
             "truncation_reason": "truncation_reason", "reward_reason": "reward_reason"}
"""The ``info`` keys a step keeps when the env set them, and their names in the step."""


def step_details(info: Mapping[str, Any]) -> dict[str, Any]:
    """The step's details from the ``info`` its ``step`` returned: ``tool_calls`` (name, shown arguments, server,
    ``is_error``, ``latency_s`` when timings were recorded), ``parse_errors`` when there were any, and each of
    ``STEP_KEYS`` the env set."""
    latencies = list(info.get("tool_latency_s") or ())
    calls = [{"name": r.get("name"), "arguments": r.get("arguments"), "server": r.get("server"),
              "is_error": bool(r.get("is_error")),
              **({"latency_s": latencies[i]} if i < len(latencies) else {})}
             for i, r in enumerate(info.get("tool_results") or ())]
    details: dict[str, Any] = {"tool_calls": calls}
    if info.get("parse_errors"):
        details["parse_errors"] = list(info["parse_errors"])
    details.update({name: info[key] for key, name in STEP_KEYS.items() if info.get(key) is not None})
    return details
