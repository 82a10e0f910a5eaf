"""What an rlf env says in OpenEnv's words (openenv-core 0.3's wire format), with no OpenEnv import.

- The action is ``{"response": TEXT}``: the model's raw response (``metadata``, OpenEnv's free-form field on every
  action, is accepted and ignored).
- A reply to ``reset`` or ``step`` is ``{"observation": {...}, "reward": float | null, "done": bool}``, as
  openenv-core's ``serialize_observation`` writes one; the observation holds ``text`` (the prompt after a reset,
  then exactly the text to append after the response), ``messages`` and ``tools`` (what a chat template renders the
  prompt from, after a reset; each step's new messages), ``terminated``, ``truncated``, ``truncation_reason``,
  ``reward_parts`` and ``info`` (the rest of the env's ``info``).
- Reset takes ``seed``, ``options`` (``{"task": {...}}`` pins a task, ``{"task_id": ID}`` one of the dataset) and
  ``episode_id`` (OpenEnv's own field, shown back in ``state``).
"""

from __future__ import annotations

from typing import Any

from rlfactory_envs.service.http_json import type_name

ACTION_FIELD = "response"
RESET_FIELDS = ("seed", "options", "episode_id")
API_VERSION = "1.0.0"
"""The OpenEnv HTTP API version this server implements (``openenv validate``'s profile ``openenv-http/1.x``)."""

ACTION_SCHEMA: dict[str, Any] = {
    "title": "RlfAction", "type": "object", "additionalProperties": False, "required": [ACTION_FIELD],
    "properties": {
        ACTION_FIELD: {"type": "string", "description": "The model's raw response text (tool calls and answer in "
                                                          "the env's chat format)."},
        "metadata": {"type": "object", "description": "Free-form metadata (ignored)."},
    },
}
OBSERVATION_SCHEMA: dict[str, Any] = {
    "title": "RlfObservation", "type": "object",
    "properties": {
        "text": {"type": "string", "description": "After reset: the prompt (the user message). After a step: the "
                                                   "text to append after the response."},
        "messages": {"type": "array", "items": {"type": "object"},
                     "description": "After reset: the chat messages that open the episode; after a step: its new "
                                    "messages."},
        "tools": {"type": "array", "items": {"type": "object"},
                  "description": "After reset: the tools the model sees, as OpenAI function schemas."},
        "terminated": {"type": "boolean"}, "truncated": {"type": "boolean"},
        "truncation_reason": {"type": ["string", "null"]},
        "reward_parts": {"type": "object", "additionalProperties": {"type": "number"}},
        "info": {"type": "object", "description": "The rest of the env's info (task, tool calls and results, "
                                                   "answer, reward reason, ...)."},
        "done": {"type": "boolean"}, "reward": {"type": ["number", "null"]},
    },
}
STATE_SCHEMA: dict[str, Any] = {
    "title": "RlfState", "type": "object", "additionalProperties": True,
    "properties": {"episode_id": {"type": ["string", "null"]}, "step_count": {"type": "integer", "minimum": 0},
                   "turn": {"type": "integer"}, "done": {"type": "boolean"},
                   "task_id": {"type": ["string", "null"]}, "reward": {"type": ["number", "null"]},
                   "messages": {"type": "array", "items": {"type": "object"}}},
}


class FrameError(ValueError):
    """A reset or step payload OpenEnv's schema refuses; the message names the problem."""


def reset_arguments(data: Any) -> tuple[int | None, dict[str, Any] | None, str | None]:
    """``(seed, options, episode_id)`` of a reset's data; ``FrameError`` naming what is wrong."""
    if data is None:
        return None, None, None
    if not isinstance(data, dict):
        raise FrameError(f"reset data must be an object with {', '.join(RESET_FIELDS)}; got {type_name(data)}")
    unknown = sorted(set(data) - set(RESET_FIELDS))
    if unknown:
        raise FrameError(f"reset takes {', '.join(RESET_FIELDS)}; not {', '.join(map(repr, unknown))} (pin a task "
                         "with options={\"task\": {...}} or {\"task_id\": ID})")
    seed, options, episode_id = (data.get(key) for key in RESET_FIELDS)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise FrameError(f"seed must be a whole number >= 0, got {seed!r}")
    if options is not None and not isinstance(options, dict):
        raise FrameError(f"options must be an object, got {type_name(options)}")
    if episode_id is not None and (not isinstance(episode_id, str) or len(episode_id) > 255):
        raise FrameError("episode_id must be a string of at most 255 characters")
    return seed, options, episode_id


def step_action(data: Any) -> str:
    """The response text of a step's action; ``FrameError`` naming what is wrong."""
    if not isinstance(data, dict):
        raise FrameError(f"the action must be an object {{\"{ACTION_FIELD}\": TEXT}}; got {type_name(data)}")
    unknown = sorted(set(data) - {ACTION_FIELD, "metadata"})
    if unknown:
        raise FrameError(f"the action has {ACTION_FIELD!r} (the model's response text) and optionally 'metadata'; "
                         f"not {', '.join(map(repr, unknown))}")
    if ACTION_FIELD not in data:
        raise FrameError(f"the action has no {ACTION_FIELD!r}: send {{\"{ACTION_FIELD}\": TEXT}}, TEXT the model's "
                         "raw response")
    if not isinstance(data[ACTION_FIELD], str):
        raise FrameError(f"{ACTION_FIELD!r} must be a string (the model's raw response), got "
                         f"{type_name(data[ACTION_FIELD])}")
    return data[ACTION_FIELD]


def reset_reply(prompt: str, info: dict[str, Any]) -> dict[str, Any]:
    """The reply to a reset: the prompt and what renders it."""
    return {"observation": _observation(prompt, False, False, info), "reward": None, "done": False}


def step_reply(obs: str, reward: float, terminated: bool, truncated: bool, info: dict[str, Any]) -> dict[str, Any]:
    """The reply to a step: the text to append, the reward, whether the episode is over."""
    return {"observation": _observation(obs, terminated, truncated, info), "reward": reward,
            "done": terminated or truncated}


def _observation(text: str, terminated: bool, truncated: bool, info: dict[str, Any]) -> dict[str, Any]:
    rest = dict(info)
    return {"text": text, "messages": rest.pop("messages", []), "tools": rest.pop("tools", []),
            "terminated": terminated, "truncated": truncated,
            "truncation_reason": rest.pop("truncation_reason", None), "reward_parts": rest.pop("reward_parts", {}),
            "info": rest}


def openapi_document(title: str, description: str) -> dict[str, Any]:
    """The OpenAPI description ``openenv validate`` reads: the API version and the simulation-mode paths."""
    json_body = {"content": {"application/json": {"schema": {"type": "object"}}}}
    answer = {"200": {"description": "OK", **json_body}}
    paths = {
        "/reset": {"post": {"summary": "Start an episode (seed, options, episode_id)", "requestBody": json_body,
                            "responses": answer}},
        "/step": {"post": {"summary": "One step: {\"action\": {\"response\": TEXT}, \"episode_id\": ID}",
                           "requestBody": json_body, "responses": answer}},
        "/state": {"get": {"summary": "An episode's state (?episode_id=ID)", "responses": answer}},
        "/schema": {"get": {"summary": "Action, observation and state schemas", "responses": answer}},
        "/metadata": {"get": {"summary": "What this environment is", "responses": answer}},
        "/health": {"get": {"summary": "Health check", "responses": answer}},
        "/mcp": {"post": {"summary": "MCP JSON-RPC (tools/list)", "requestBody": json_body, "responses": answer}},
    }
    return {"openapi": "3.1.0", "info": {"title": title, "version": API_VERSION, "description": description},
            "paths": paths}
