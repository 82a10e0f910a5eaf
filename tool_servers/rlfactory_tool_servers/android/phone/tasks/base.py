"""The task template contract, and how an instance (a template and a seed) becomes a phone and a verdict.

A template (modelled on one of AndroidWorld's) declares its ``name``, ``app``, ``goal`` (``str.format`` over its
parameters) and ``kind``:

- ``action``: the goal is a change of state; success = ``status(complete)`` and every sub-goal of
  ``subgoals(device, initial, params)`` met;
- ``answer``: a question; success = ``answer(text)`` matching ``expected_answer`` (``answer_matches``), after a
  page of the question's app was on screen (``looked_at_the_phone``: a guess without reading the phone is no
  answer), with the ``guarded`` parts of the state unchanged;
- ``infeasible``: the goal cannot be done (the contact does not exist...); success = ``status(infeasible)`` after
  the agent looked where the goal points (``evidence``), with the ``guarded`` state unchanged: ending at once
  earns nothing.

``params(rng)`` draws the parameters, ``setup(state, params, rng)`` fills a fresh phone (with distractors), and
``plan(params)`` is the reference solution in screen terms (``plans``), whose length is the optimal step count.
``real_device``: whether the ADB backend can run the template on a real phone: its setup and its check touch only
what adb sets and reads there (the settings).
"""

from __future__ import annotations

import copy
import functools
import random
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from rlfactory_tool_servers.android.phone.device import Device
from rlfactory_tool_servers.android.phone.plans import Step, run_plan
from rlfactory_tool_servers.android.phone.state import PhoneState

Kind = Literal["action", "answer", "infeasible"]


@dataclass(frozen=True)
class Verdict:
    """Whether the episode met its goal, each sub-goal, and why in words. ``progress`` is 1.0 on success, else
    the sub-goals the phone did not meet as set up and meets now, over their number plus one for the right
    ending: what was true at the start (``other contacts kept``) earns nothing, or doing nothing would earn some;
    ending alone earns nothing; everything done but the ending wrong or missing earns less than 1."""

    success: bool
    subgoals: dict[str, bool] = field(default_factory=dict)
    reason: str = ""
    progress: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"success": self.success, "progress": self.progress, "subgoals": dict(self.subgoals),
                "reason": self.reason}


ENDING_SUBGOALS = ("said complete", "said infeasible", "answered")
LOOKED = "looked at the phone"
"""An ``answer`` episode's evidence: a page of the question's app was on screen before the answer (no progress)."""


class TaskTemplate:
    """One parameterised task; subclasses fill in the class attributes and the methods of their kind."""

    name: ClassVar[str]
    app: ClassVar[str]
    goal: ClassVar[str]
    kind: ClassVar[Kind] = "action"
    guarded: ClassVar[tuple[str, ...]] = ()
    """``PhoneState`` fields an ``answer`` or ``infeasible`` episode must leave as they were."""
    real_device: ClassVar[bool] = False

    def params(self, rng: random.Random) -> dict[str, Any]:
        raise NotImplementedError

    def setup(self, state: PhoneState, params: dict[str, Any], rng: random.Random) -> None:
        raise NotImplementedError

    def plan(self, params: dict[str, Any]) -> list[Step]:
        raise NotImplementedError

    def subgoals(self, device: Device, initial: PhoneState, params: dict[str, Any]) -> dict[str, bool]:
        """``action`` templates: each sub-goal of the final state (``initial``: the phone as set up), by name."""
        raise NotImplementedError

    def expected_answer(self, state: PhoneState, params: dict[str, Any]) -> str:
        """``answer`` templates: the right answer, read from the phone as it was set up."""
        raise NotImplementedError

    def answer_matches(self, answer: str, expected: str) -> bool:
        """Whether ``answer`` says ``expected``: equal once case, accents, punctuation and spacing are ignored."""
        return normalize(answer) == normalize(expected)

    def looked_at_the_phone(self, device: Device) -> bool:
        """``answer`` templates: whether a page of the question's app was on screen. An answer given without reading
        the phone is not taken, however likely a guess (``right answer`` needs it too)."""
        return any(key.startswith(f"{self.app}/") for key in device.visited)

    def evidence(self, device: Device, initial: PhoneState, params: dict[str, Any]) -> dict[str, bool]:
        """``infeasible`` templates: what the agent must have seen before declaring the goal infeasible."""
        raise NotImplementedError

    def goal_text(self, params: dict[str, Any]) -> str:
        return self.goal.format(**params)

    # -- the verdict -------------------------------------------------------------------------------------------

    def verdict(self, device: Device, initial: PhoneState, params: dict[str, Any],
                ending: dict[str, Any] | None) -> Verdict:
        """The verdict on ``device`` at the end of an episode that ended with ``ending`` (AndroidWorld's action
        JSON of the ``status`` or ``answer`` given, ``None`` for none); ``initial`` is the phone as set up."""
        action = (ending or {}).get("action_type")
        status = (ending or {}).get("goal_status")
        fresh = Device(device.apps, copy.deepcopy(initial))  # the phone as set up, for what held at the start
        if self.kind == "action":
            goals = {"said complete": action == "status" and status == "complete",
                     **self.subgoals(device, initial, params)}
            at_start = self.subgoals(fresh, initial, params)
        else:
            unchanged = {f"{name} unchanged": getattr(device.state, name) == getattr(initial, name)
                         for name in self.guarded}
            if self.kind == "answer":
                expected = self.expected_answer(initial, params)
                given = (ending or {}).get("text") if action == "answer" else None
                looked = self.looked_at_the_phone(device)
                goals = {"answered": given is not None, LOOKED: looked,
                         "right answer": looked and given is not None and self.answer_matches(str(given), expected),
                         **unchanged}
                at_start = {name: True for name in unchanged}
            else:
                goals = {"said infeasible": action == "status" and status == "infeasible",
                         **self.evidence(device, initial, params), **unchanged}
                at_start = {**self.evidence(fresh, initial, params), **{name: True for name in unchanged}}
        missed = [name for name, met in goals.items() if not met]
        achievements = [met for name, met in goals.items()
                        if name not in (*ENDING_SUBGOALS, LOOKED) and not at_start.get(name, False)]
        progress = 1.0 if not missed else sum(achievements) / (len(achievements) + 1)
        return Verdict(not missed, goals, "" if not missed else "not met: " + "; ".join(missed), progress)


def normalize(text: str) -> str:
    """``text`` lower-cased, without accents, punctuation or repeated spaces (answers compare this way)."""
    text = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode("ascii").casefold()
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


def titles_match(answer: str, expected: str) -> bool:
    """Whether two comma-separated lists of titles hold the same titles, in any order."""
    def titles(text: str) -> list[str]:
        return sorted(normalize(t) for t in re.split(r",|\band\b", text) if normalize(t))
    return titles(answer) == titles(expected)


# -- instances -----------------------------------------------------------------------------------------------

def instance_rng(template: TaskTemplate, seed: int, purpose: str) -> random.Random:
    return random.Random(f"{template.name}:{seed}:{purpose}")


def instance_params(template: TaskTemplate, seed: int) -> dict[str, Any]:
    return template.params(instance_rng(template, seed, "params"))


def initial_state(template: TaskTemplate, seed: int, params: dict[str, Any]) -> PhoneState:
    """The phone's state as the instance sets it up (the same every time: the setup is seeded)."""
    state = PhoneState()
    template.setup(state, params, instance_rng(template, seed, "setup"))
    return state


def set_up_device(template: TaskTemplate, seed: int, params: dict[str, Any] | None = None,
                  apps: Any = None) -> tuple[Device, dict[str, Any]]:
    """A fresh phone set up for the instance and its parameters (``params`` given, or drawn from ``seed``)."""
    from rlfactory_tool_servers.android.phone.apps import default_apps

    params = instance_params(template, seed) if params is None else params
    return Device(apps if apps is not None else default_apps(), initial_state(template, seed, params)), params


def build_device(template: TaskTemplate, seed: int, params: dict[str, Any] | None = None,
                 apps: Any = None) -> tuple[Device, PhoneState, dict[str, Any]]:
    """``set_up_device`` and a copy of the initial state (for the verdict)."""
    device, params = set_up_device(template, seed, params, apps)
    return device, copy.deepcopy(device.state), params


@functools.cache
def _optimal_steps(name: str, seed: int) -> int:
    from rlfactory_tool_servers.android.phone.tasks import template_named

    template = template_named(name)
    device, _, params = build_device(template, seed)
    return len(run_plan(device, template.plan(params)))


def optimal_steps(template: TaskTemplate, seed: int, params: dict[str, Any] | None = None) -> int:
    """The number of actions of the reference plan on this instance, played through the screen text."""
    if params is None or params == instance_params(template, seed):
        return _optimal_steps(template.name, seed)
    device, _, params = build_device(template, seed, params)
    return len(run_plan(device, template.plan(params)))


def pick(rng: random.Random, pool: Sequence[Any], k: int = 1) -> list[Any]:
    """``k`` distinct items of ``pool``."""
    return rng.sample(list(pool), k)
