"""Reference plans: a task's solution written as steps over what the screen shows, and the player that turns
them into actions by reading only the screen text.

A step names its target by what an agent can read (``Target(text="Save")``, ``Target(rid="contact_phone")``),
never by an index: the ``PlanPlayer`` finds the target in the ``t3a`` screen text and scrolls the list down (then
up) until it is in view. ``Answer`` reads its answer off the screen with a function of the parsed elements.
``run_plan`` plays a plan on a ``Device``; the number of actions it takes is the task's optimal step count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rlfactory_tool_servers.android.phone.actions import perform
from rlfactory_tool_servers.android.phone.device import Device
from rlfactory_tool_servers.android.phone.ui import parse_t3a

MAX_SCROLLS = 30


class PlanError(Exception):
    """The plan cannot go on: its target is not on the screen, even after scrolling."""


@dataclass(frozen=True)
class Target:
    """What an element must show: its exact ``text``, text that ``contains`` a string, its content ``desc``, its
    resource id (``rid``, the part after ``:id/``) or its ``hint``; ``nth`` picks among several matches."""

    text: str | None = None
    contains: str | None = None
    desc: str | None = None
    rid: str | None = None
    hint: str | None = None
    nth: int = 0

    def matches(self, element: dict[str, Any]) -> bool:
        text = element.get("text")
        resource = element.get("resource_name") or ""
        return ((self.text is None or text == self.text)
                and (self.contains is None or (text is not None and self.contains in text))
                and (self.desc is None or element.get("content_description") == self.desc)
                and (self.rid is None or resource.rsplit(":id/", 1)[-1] == self.rid)
                and (self.hint is None or element.get("hint_text") == self.hint))

    def find(self, elements: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
        found = [e for e in elements if self.matches(e)]
        return found[self.nth] if len(found) > self.nth else None


@dataclass(frozen=True)
class Open:
    app: str


@dataclass(frozen=True)
class Tap:
    target: Target


@dataclass(frozen=True)
class LongPress:
    target: Target


@dataclass(frozen=True)
class Type:
    target: Target
    text: str
    clear: bool = False


@dataclass(frozen=True)
class Simple:
    """An action without arguments: ``keyboard_enter``, ``navigate_back``, ``navigate_home`` or ``wait``."""

    action_type: str


@dataclass(frozen=True)
class Scroll:
    direction: str = "down"


@dataclass(frozen=True)
class Answer:
    """Answer with ``read(elements)``: a function of the screen's parsed elements."""

    read: Callable[[list[dict[str, Any]]], str]


@dataclass(frozen=True)
class Status:
    goal_status: str = "complete"


Step = Open | Tap | LongPress | Type | Simple | Scroll | Answer | Status
ENTER, BACK, HOME, WAIT = (Simple("keyboard_enter"), Simple("navigate_back"), Simple("navigate_home"),
                           Simple("wait"))
DONE, INFEASIBLE = Status("complete"), Status("infeasible")


class PlanPlayer:
    """Plays a plan one action at a time from the screen text: ``next_action(screen_text)`` returns AndroidWorld's
    action JSON (``{"action_type": "click", "index": 4}``)."""

    def __init__(self, plan: Sequence[Step]):
        self.plan = list(plan)
        self.position = 0
        self._scrolls = 0
        self._direction = "down"
        self._last_screen: str | None = None

    @property
    def finished(self) -> bool:
        return self.position >= len(self.plan)

    def next_action(self, screen_text: str) -> dict[str, Any]:
        if self.finished:
            raise PlanError("the plan is finished")
        step = self.plan[self.position]
        elements = parse_t3a(screen_text)
        if isinstance(step, (Tap, LongPress, Type)):
            found = step.target.find(elements)
            if found is None:
                return self._scroll_towards(step.target, elements, screen_text)
            self._advance()
            if isinstance(step, Type):
                action: dict[str, Any] = {"action_type": "input_text", "index": found["index"], "text": step.text}
                if step.clear:
                    action["clear_text"] = True
                return action
            return {"action_type": "click" if isinstance(step, Tap) else "long_press", "index": found["index"]}
        self._advance()
        if isinstance(step, Open):
            return {"action_type": "open_app", "app_name": step.app}
        if isinstance(step, Simple):
            return {"action_type": step.action_type}
        if isinstance(step, Scroll):
            return {"action_type": "scroll", "direction": step.direction}
        if isinstance(step, Answer):
            return {"action_type": "answer", "text": step.read(elements)}
        return {"action_type": "status", "goal_status": step.goal_status}

    def _advance(self) -> None:
        self.position += 1
        self._scrolls, self._direction, self._last_screen = 0, "down", None

    def _scroll_towards(self, target: Target, elements: list[dict[str, Any]], screen_text: str) -> dict[str, Any]:
        if not any(e.get("is_scrollable") for e in elements):
            raise PlanError(f"{target} is not on the screen and nothing scrolls")
        if self._last_screen == screen_text:  # the last scroll moved nothing: the list's end
            if self._direction == "up":
                raise PlanError(f"{target} is not in the list")
            self._direction = "up"
        self._scrolls += 1
        if self._scrolls > MAX_SCROLLS:
            raise PlanError(f"{target} not found after {MAX_SCROLLS} scrolls")
        self._last_screen = screen_text
        return {"action_type": "scroll", "direction": self._direction}


def run_plan(device: Device, plan: Sequence[Step], max_actions: int = 200) -> list[dict[str, Any]]:
    """Play ``plan`` on ``device`` through the screen text; the actions taken."""
    player = PlanPlayer(plan)
    taken: list[dict[str, Any]] = []
    while not player.finished:
        if len(taken) >= max_actions:
            raise PlanError(f"the plan took more than {max_actions} actions")
        action = player.next_action(device.screen_text())
        arguments = {k: v for k, v in action.items() if k != "action_type"}
        perform(device, action["action_type"], arguments)
        taken.append(action)
    return taken
