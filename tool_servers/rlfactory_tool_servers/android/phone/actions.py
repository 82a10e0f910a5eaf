"""AndroidWorld's action space on a ``Device``: ``perform(device, action_type, arguments)``.

The action types and argument names are AndroidWorld's ``json_action`` (``click(index)``, ``input_text(index,
text, clear_text)``, ``scroll(direction, index)``, ``open_app(app_name)``, ``status(goal_status)``,
``answer(text)`` ...). ``status`` and ``answer`` end the episode: they record ``device.ending`` and change
nothing else. Arguments are checked here; a wrong one raises ``DeviceError`` and the device does not change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlfactory_tool_servers.android.phone.device import Device, DeviceError

MAX_ANSWER_CHARS = 2000
GOAL_STATUSES = ("complete", "infeasible")
ACTION_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "click": ("index",), "long_press": ("index",), "double_tap": ("index",),
    "input_text": ("index", "text", "clear_text"), "keyboard_enter": (), "scroll": ("direction", "index"),
    "swipe": ("direction",), "navigate_back": (), "navigate_home": (), "open_app": ("app_name",), "wait": (),
    "status": ("goal_status",), "answer": ("text",),
}
"""Each action type and the arguments it takes."""
REQUIRED = {"click": ("index",), "long_press": ("index",), "double_tap": ("index",), "input_text": ("index", "text"),
            "scroll": ("direction",), "swipe": ("direction",), "open_app": ("app_name",), "status": ("goal_status",),
            "answer": ("text",)}
ENDING_ACTIONS = ("status", "answer")
_TAKES = {action_type: frozenset(names) for action_type, names in ACTION_ARGUMENTS.items()}


def check_action(action_type: Any, arguments: Mapping[str, Any]) -> None:
    """``DeviceError`` naming what is wrong with an action: an unknown type, a missing or unexpected argument."""
    if action_type not in ACTION_ARGUMENTS:
        raise DeviceError(f"unknown action type {str(action_type)[:40]!r}; the actions are "
                          f"{', '.join(ACTION_ARGUMENTS)}")
    if not arguments.keys() <= _TAKES[action_type]:
        unexpected = sorted(set(arguments) - _TAKES[action_type])
        raise DeviceError(f"{action_type} takes no argument {unexpected[0][:40]!r} (it takes "
                          f"{', '.join(ACTION_ARGUMENTS[action_type]) or 'none'})")
    missing = [name for name in REQUIRED.get(action_type, ()) if arguments.get(name) is None]
    if missing:
        raise DeviceError(f"{action_type} needs {missing[0]}")


def ending_of(action_type: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The ending a ``status`` or ``answer`` action records, as AndroidWorld's action JSON."""
    if action_type == "status":
        status = str(arguments.get("goal_status", "")).strip().lower()
        if status not in GOAL_STATUSES:
            raise DeviceError(f"goal_status must be complete or infeasible, got {str(status)[:30]!r}")
        return {"action_type": "status", "goal_status": status}
    text = str(arguments.get("text", ""))
    if len(text) > MAX_ANSWER_CHARS:
        raise DeviceError(f"the answer is {len(text):,} characters long; the limit is {MAX_ANSWER_CHARS:,}")
    return {"action_type": "answer", "text": text}


def perform(device: Device, action_type: str, arguments: Mapping[str, Any]) -> str:
    """Do one action; its note. ``DeviceError`` when it cannot be done (nothing changed)."""
    check_action(action_type, arguments)
    if device.ending is not None:
        raise DeviceError("the episode has ended (status or answer was given); the phone takes no more actions")
    if action_type in ENDING_ACTIONS:
        device.ending = ending_of(action_type, arguments)
        return "Episode ended: " + ", ".join(f"{k}={v!r}" for k, v in device.ending.items() if k != "action_type")
    if action_type in ("click", "long_press", "double_tap"):
        return getattr(device, action_type)(arguments["index"])
    if action_type == "input_text":
        return device.input_text(arguments["index"], arguments["text"], bool(arguments.get("clear_text") or False))
    if action_type == "scroll":
        return device.scroll(arguments["direction"], arguments.get("index"))
    if action_type == "swipe":
        return device.swipe(arguments["direction"])
    if action_type == "open_app":
        return device.open_app(arguments["app_name"])
    return getattr(device, action_type)()
