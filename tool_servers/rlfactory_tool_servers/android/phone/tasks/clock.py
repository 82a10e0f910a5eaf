"""Clock tasks, after AndroidWorld's ClockTimerEntry, ClockStopWatchRunning and ClockStopWatchPausedVerify, plus
creating, deleting and turning off alarms, a look-up of an alarm's time and an infeasible deletion. Alarms carry
distinct labels; the distractors include one at the target's time."""

from __future__ import annotations

import math
import random
import re

from rlfactory_tool_servers.android.phone.apps.clock import time_text
from rlfactory_tool_servers.android.phone.plans import DONE, INFEASIBLE, Answer, Open, Scroll, Tap, Target, Type
from rlfactory_tool_servers.android.phone.state import Alarm, PhoneState, Stopwatch, Timer
from rlfactory_tool_servers.android.phone.tasks.base import TaskTemplate, normalize

ALARM_LABELS = ("Wake up", "Gym", "Morning run", "Evening run", "Take medicine", "Take vitamins", "Team standup",
                "Team lunch", "School run", "Pick up kids", "Water plants", "Yoga", "Laundry", "Call mom",
                "Trash day", "Meditate", "Bake bread", "Nap", "Flight check-in", "Walk the dog")
ALARM_ROWS = 2  # the alarm list shows a row and a switch per alarm
ALARM_PAGE = 8  # the alarm list's page size, in rows
_TIME = re.compile(r"\b(\d{1,2}):(\d{2})\s*([ap])?\.?\s*(m\.?)?", re.IGNORECASE)


def _random_time(rng: random.Random) -> tuple[int, int]:
    return rng.randrange(24), rng.randrange(0, 60, 5)


def _alarm_params(rng: random.Random, count: tuple[int, int]) -> dict:
    """A target alarm (label and time) and how many other alarms the phone has."""
    hour, minute = _random_time(rng)
    return {"label": rng.choice(ALARM_LABELS), "hour": hour, "minute": minute, "time": time_text(hour, minute),
            "others": rng.randint(*count)}


def _other_alarms(rng: random.Random, params: dict) -> list[Alarm]:
    """``params["others"]`` alarms with labels other than the target's, the first at the target's time."""
    labels = rng.sample([text for text in ALARM_LABELS if text != params["label"]], params["others"])
    alarms = [Alarm(*_random_time(rng), label=text, enabled=rng.random() < 0.6) for text in labels]
    if alarms:
        alarms[0].hour, alarms[0].minute = params["hour"], params["minute"]
    return alarms


def _with_target(state: PhoneState, rng: random.Random, params: dict, enabled: bool) -> None:
    state.alarms = _other_alarms(rng, params)
    state.alarms.insert(rng.randrange(len(state.alarms) + 1),
                        Alarm(params["hour"], params["minute"], params["label"], enabled))


def _labelled(state: PhoneState, params: dict) -> list[Alarm]:
    return [a for a in state.alarms if normalize(a.label) == normalize(params["label"])]


def _others_kept(state: PhoneState, initial: PhoneState, params: dict) -> bool:
    """Whether every alarm of ``initial`` not labelled as the target is still there, unchanged."""
    return all(a in state.alarms for a in initial.alarms if normalize(a.label) != normalize(params["label"]))


def _target_row(params: dict) -> Target:
    return Target(desc=params["label"], rid="digital_clock")


class ClockAlarmCreate(TaskTemplate):
    name = "ClockAlarmCreate"
    app = "Clock"
    goal = "Set an alarm for {time} with the label \"{label}\"."

    def params(self, rng):
        return _alarm_params(rng, (2, 7))

    def setup(self, state, params, rng):
        state.alarms = _other_alarms(rng, params)

    def plan(self, params):
        hour = (params["hour"] - 1) % 12 + 1
        return [Open("Clock"), Tap(Target(desc="Add alarm")), Type(Target(rid="hour_field"), str(hour)),
                Type(Target(rid="minute_field"), f"{params['minute']:02d}"),
                Tap(Target(text=params["time"][-2:])), Tap(Target(text="OK")), Tap(Target(rid="edit_label")),
                Type(Target(rid="label_field"), params["label"]), DONE]

    def subgoals(self, device, initial, params):
        found = [a for a in _labelled(device.state, params) if (a.hour, a.minute) == (params["hour"], params["minute"])]
        return {"alarm set with its label": bool(found), "alarm on": any(a.enabled for a in found),
                "one alarm added": len(device.state.alarms) == len(initial.alarms) + 1,
                "other alarms kept": _others_kept(device.state, initial, params)}


class ClockAlarmDelete(TaskTemplate):
    name = "ClockAlarmDelete"
    app = "Clock"
    goal = "Delete my alarm labelled \"{label}\"."

    def params(self, rng):
        return _alarm_params(rng, (4, 10))

    def setup(self, state, params, rng):
        _with_target(state, rng, params, rng.random() < 0.5)

    def plan(self, params):
        return [Open("Clock"), Tap(_target_row(params)), Tap(Target(text="Delete")), DONE]

    def subgoals(self, device, initial, params):
        return {"alarm deleted": not _labelled(device.state, params),
                "other alarms kept": _others_kept(device.state, initial, params)}


class ClockAlarmTurnOff(TaskTemplate):
    name = "ClockAlarmTurnOff"
    app = "Clock"
    goal = "Turn off my alarm labelled \"{label}\" without deleting it."

    def params(self, rng):
        return _alarm_params(rng, (4, 10))

    def setup(self, state, params, rng):
        _with_target(state, rng, params, True)

    def plan(self, params):
        return [Open("Clock"), Tap(Target(desc=f"{params['time']} {params['label']}", rid="onoff")), DONE]

    def subgoals(self, device, initial, params):
        found = _labelled(device.state, params)
        return {"alarm kept": len(found) == 1, "alarm off": bool(found) and not any(a.enabled for a in found),
                "other alarms kept": _others_kept(device.state, initial, params)}


class ClockAlarmTime(TaskTemplate):
    name = "ClockAlarmTime"
    app = "Clock"
    kind = "answer"
    goal = "What time is my alarm labelled \"{label}\" set for? Answer with the time, in the form H:MM AM/PM."
    guarded = ("alarms",)

    def params(self, rng):
        return _alarm_params(rng, (4, 10))

    def setup(self, state, params, rng):
        _with_target(state, rng, params, rng.random() < 0.7)

    def plan(self, params):
        return [Open("Clock"), Tap(_target_row(params)),
                Answer(lambda elements: next(e["text"] for e in elements
                                             if (e.get("resource_name") or "").endswith(":id/alarm_time")))]

    def expected_answer(self, state, params):
        alarm = _labelled(state, params)[0]
        return time_text(alarm.hour, alarm.minute)

    def answer_matches(self, answer, expected):
        """The answer is the time and little else: no other number may ride along with it."""
        given = _clock_time(answer)
        rest = _TIME.sub(" ", answer)
        return (given is not None and given == _clock_time(expected) and not any(ch.isdigit() for ch in rest)
                and len(rest.split()) <= 4)


def _clock_time(text: str) -> tuple[int, int] | None:
    """The one time of day ``text`` names (``7:30 AM``, ``7:30pm``, ``19:30``) as (hour, minute); None if it
    names none, several, or an impossible one."""
    found = _TIME.findall(text)
    if len(found) != 1:
        return None
    hour, minute, half, _ = found[0]
    hour, minute = int(hour), int(minute)
    if minute > 59:
        return None
    if half:
        return (hour % 12 + (12 if half.lower() == "p" else 0), minute) if 1 <= hour <= 12 else None
    return (hour, minute) if hour < 24 else None


class ClockAlarmDeleteMissing(TaskTemplate):
    name = "ClockAlarmDeleteMissing"
    app = "Clock"
    kind = "infeasible"
    goal = "Delete my alarm labelled \"{label}\"."
    guarded = ("alarms",)

    def params(self, rng):
        return _alarm_params(rng, (5, 10))

    def setup(self, state, params, rng):
        state.alarms = _other_alarms(rng, params)

    def plan(self, params):
        rows = ALARM_ROWS * params["others"]
        scrolls = math.ceil(max(0, rows - ALARM_PAGE) / (ALARM_PAGE - 1))
        return [Open("Clock"), *[Scroll("down")] * scrolls, INFEASIBLE]

    def evidence(self, device, initial, params):
        return {"looked through the alarms": "Clock/alarm_list" in device.lists_seen_to_end}


class ClockTimerEntry(TaskTemplate):
    name = "ClockTimerEntry"
    app = "Clock"
    goal = "Create a timer with {hours} hours, {minutes} minutes, and {seconds} seconds. Do not start the timer."

    def params(self, rng):
        return {"hours": rng.randrange(24), "minutes": rng.randint(1, 59), "seconds": rng.randint(1, 59)}

    def setup(self, state, params, rng):
        state.timers = [Timer(0, rng.randint(1, 59), 0, running=rng.random() < 0.5)
                        for _ in range(rng.randint(0, 2))]

    def plan(self, params):
        return [Open("Clock"), Tap(Target(text="Timer", rid="tab_timer")),
                Type(Target(rid="timer_hours"), str(params["hours"])),
                Type(Target(rid="timer_minutes"), str(params["minutes"])),
                Type(Target(rid="timer_seconds"), str(params["seconds"])), DONE]

    def subgoals(self, device, initial, params):
        page = device.page
        on_timer = page.app == "Clock" and page.route == "timer" and page.dialog is None
        entered = {key: _entered(page.form.get(key, "")) for key in ("hours", "minutes", "seconds")}
        return {"timer entered": on_timer and all(entered[key] == params[key] for key in entered),
                "timer not started": device.state.timers == initial.timers}


def _entered(text: str) -> int | None:
    value = text.strip() or "0"
    return int(value) if value.isdigit() else None


class ClockStopWatchRunning(TaskTemplate):
    name = "ClockStopWatchRunning"
    app = "Clock"
    goal = "Run the stopwatch."

    def params(self, rng):
        return {}

    def setup(self, state, params, rng):
        state.stopwatch = Stopwatch(running=False, elapsed_s=rng.choice([0, 0, rng.randint(5, 900)]))

    def plan(self, params):
        return [Open("Clock"), Tap(Target(text="Stopwatch", rid="tab_stopwatch")), Tap(Target(text="Start")), DONE]

    def subgoals(self, device, initial, params):
        return {"stopwatch running": device.state.stopwatch.running}


class ClockStopWatchPausedVerify(TaskTemplate):
    name = "ClockStopWatchPausedVerify"
    app = "Clock"
    goal = "Pause the stopwatch."

    def params(self, rng):
        return {}

    def setup(self, state, params, rng):
        state.stopwatch = Stopwatch(running=True, elapsed_s=rng.randint(5, 900))

    def plan(self, params):
        return [Open("Clock"), Tap(Target(text="Stopwatch", rid="tab_stopwatch")), Tap(Target(text="Pause")), DONE]

    def subgoals(self, device, initial, params):
        stopwatch = device.state.stopwatch
        return {"stopwatch paused": not stopwatch.running,
                "stopwatch not reset": stopwatch.elapsed_s >= initial.stopwatch.elapsed_s}


TEMPLATES = [ClockAlarmCreate(), ClockAlarmDelete(), ClockAlarmTurnOff(), ClockAlarmTime(), ClockAlarmDeleteMissing(),
             ClockTimerEntry(), ClockStopWatchRunning(), ClockStopWatchPausedVerify()]
