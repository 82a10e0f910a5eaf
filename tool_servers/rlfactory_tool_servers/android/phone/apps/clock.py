"""Clock (after Google's Clock): three tabs, Alarm, Timer and Stopwatch, whose buttons head each of them.

Routes:
- ``main``, the Alarm tab: the alarms by time of day, each a row (its time, ``7:30 AM``, with its label as
  content description; tapping it opens the alarm) followed by its on/off switch (content description: time and
  label); "Add alarm" opens the time picker (hour and minute fields, AM / PM, Cancel / OK), whose OK creates the
  alarm, switched on, and opens it;
- ``alarm`` (``alarm``): one alarm: its time (tapping it opens the picker to change it), its on/off switch, its
  label (a dialog with a field; Enter or OK saves it) and Delete, which deletes it at once, as the app does;
- ``timer``, the Timer tab: hours / minutes / seconds fields (empty counts as 0) and Start, which starts a timer
  of that length and empties the fields; the timers below show their length (they do not count down on the
  simulated phone) with Pause / Resume and Delete;
- ``stopwatch``, the Stopwatch tab: the elapsed time (each action runs it 2 s, ``wait`` 5 s), Start / Pause,
  Lap while it runs, Reset while it is paused with time on it, and the laps (total time at each).
"""

from __future__ import annotations

from rlfactory_tool_servers.android.phone.apps.widgets import (
    button,
    icon_button,
    label,
    row,
    switch,
    text_field,
    up_button,
)
from rlfactory_tool_servers.android.phone.device import Device, DeviceError, Dialog, ListBlock, Page, Screen
from rlfactory_tool_servers.android.phone.state import Alarm, Stopwatch, Timer
from rlfactory_tool_servers.android.phone.ui import Element

ORDER = 30
MAX_ALARMS = 50
MAX_TIMERS = 20
MAX_LAPS = 99
MAX_LABEL_CHARS = 60
TABS = (("Alarm", "main"), ("Timer", "timer"), ("Stopwatch", "stopwatch"))
TIMER_FIELDS = (("hours", "Hours", 99), ("minutes", "Minutes", 59), ("seconds", "Seconds", 59))


class ClockApp:
    name = "Clock"
    package = "com.google.android.deskclock"
    aliases = ("Clock app", "Alarm", "Alarms", "Google Clock", "Deskclock")

    def render(self, device: Device, page: Page) -> Screen:
        if page.route == "alarm":
            return _alarm(device, page)
        if page.route == "timer":
            return _timers(device, page)
        if page.route == "stopwatch":
            return _stopwatch(device)
        return _alarms(device, page)


def time_text(hour: int, minute: int) -> str:
    """A time of day as the app shows it: ``7:30 AM``, ``12:05 PM``."""
    return f"{(hour - 1) % 12 + 1}:{minute:02d} {'AM' if hour < 12 else 'PM'}"


def duration_text(seconds: float) -> str:
    """The stopwatch's ``MM:SS`` (``H:MM:SS`` past an hour)."""
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def timer_text(timer: Timer) -> str:
    return f"{timer.hours:02d}h {timer.minutes:02d}m {timer.seconds:02d}s"


def _tabs(current: str) -> list[Element]:
    out = []
    for text, route in TABS:
        tab = button(text, _switch_tab(route), f"tab_{route}")
        tab.selected = route == current
        out.append(tab)
    return out


def _switch_tab(route: str):
    def switch_tab(device: Device) -> str | None:
        if device.page.route == route:
            return "That tab is already open."
        device.replace(route)
        return None
    return switch_tab


# -- alarms ----------------------------------------------------------------------------------------------------

def _alarms(device: Device, page: Page) -> Screen:
    if page.dialog == "picker":
        return Screen("Clock", dialog=_picker(device, None))
    items: list[Element] = []
    for alarm in sorted(device.state.alarms, key=lambda a: (a.hour, a.minute, a.label)):
        text = time_text(alarm.hour, alarm.minute)
        items.append(row(text, _open_alarm(alarm), "digital_clock", description=alarm.label or None))
        items.append(_alarm_switch(alarm, f"{text} {alarm.label}".strip()))
    return Screen("Clock", _tabs("main") + [ListBlock("alarm_list", items, page_size=8, empty_text="No alarms"),
                                            icon_button("Add alarm", _new_alarm, "fab")])


def _alarm_switch(alarm: Alarm, description: str) -> Element:
    return Element(content_description=description, class_name="android.widget.Switch", resource_id="onoff",
                   checkable=True, checked=alarm.enabled, clickable=True, on_click=_toggle_alarm(alarm))


def _toggle_alarm(alarm: Alarm):
    def toggle(device: Device) -> str:
        alarm.enabled = not alarm.enabled
        return f"Turned the {time_text(alarm.hour, alarm.minute)} alarm {'on' if alarm.enabled else 'off'}."
    return toggle


def _open_alarm(alarm: Alarm):
    def open_alarm(device: Device) -> None:
        device.push("alarm", alarm=alarm)
    return open_alarm


def _new_alarm(device: Device) -> None:
    device.open_dialog("picker")
    device.page.form.update(hour="", minute="", ampm="AM")


def _alarm(device: Device, page: Page) -> Screen:
    alarm: Alarm = page.args["alarm"]
    if page.dialog == "picker":
        return Screen("Alarm", dialog=_picker(device, alarm))
    if page.dialog == "label":
        return Screen("Alarm", dialog=Dialog("Label", [
            text_field("label", "Label", "label_field", on_enter=_save_label),
            button("Cancel", _cancel, "android:id/button2"), button("OK", _save_label, "android:id/button1")]))
    return Screen("Alarm", [
        up_button(),
        button(time_text(alarm.hour, alarm.minute), _edit_time(alarm), "alarm_time", description="Alarm time"),
        switch("Alarm on", alarm.enabled, _toggle_alarm(alarm), "alarm_enabled"),
        row(alarm.label or "Add label", _edit_label(alarm), "edit_label", description="Label"),
        button("Delete", _delete_alarm(alarm), "delete"),
    ])


def _edit_time(alarm: Alarm):
    def edit_time(device: Device) -> None:
        device.open_dialog("picker")
        device.page.form.update(hour=str((alarm.hour - 1) % 12 + 1), minute=f"{alarm.minute:02d}",
                                ampm="AM" if alarm.hour < 12 else "PM")
    return edit_time


def _edit_label(alarm: Alarm):
    def edit_label(device: Device) -> None:
        device.open_dialog("label")
        device.page.form["label"] = alarm.label
    return edit_label


def _save_label(device: Device) -> str:
    alarm: Alarm = device.page.args["alarm"]
    alarm.label = " ".join(device.form("label").split())[:MAX_LABEL_CHARS]
    device.close_dialog()
    return f"Saved the label {alarm.label!r}." if alarm.label else "Removed the label."


def _delete_alarm(alarm: Alarm):
    def delete(device: Device) -> str:
        device.state.alarms = [a for a in device.state.alarms if a is not alarm]
        device.pop()
        return f"Deleted the {time_text(alarm.hour, alarm.minute)} alarm."
    return delete


def _cancel(device: Device) -> str:
    device.close_dialog()
    return "Cancelled."


def _picker(device: Device, alarm: Alarm | None) -> Dialog:
    """The time picker: a new alarm's (``alarm`` None) or ``alarm``'s."""
    ampm = device.form("ampm", "AM")
    choices = []
    for half in ("AM", "PM"):
        choice = button(half, _choose(half), f"{half.lower()}_label")
        choice.selected = half == ampm
        choices.append(choice)
    return Dialog("Select time", [text_field("hour", "Hour (1-12)", "hour_field"),
                                  text_field("minute", "Minute (0-59)", "minute_field"), *choices,
                                  button("Cancel", _cancel, "android:id/button2"),
                                  button("OK", _set_time, "android:id/button1")])


def _choose(half: str):
    def choose(device: Device) -> str:
        device.page.form["ampm"] = half
        return f"Chose {half}."
    return choose


def _number(text: str, low: int, high: int, what: str) -> int:
    value = text.strip()
    if not value.isdigit() or not low <= int(value) <= high:
        raise DeviceError(f"the {what} must be a whole number from {low} to {high}, not {value[:20]!r}")
    return int(value)


def _set_time(device: Device) -> str:
    hour = _number(device.form("hour"), 1, 12, "hour") % 12 + (12 if device.form("ampm", "AM") == "PM" else 0)
    minute = _number(device.form("minute"), 0, 59, "minute")
    alarm = device.page.args.get("alarm")
    if alarm is None:
        if len(device.state.alarms) >= MAX_ALARMS:
            raise DeviceError(f"the clock holds at most {MAX_ALARMS} alarms; delete one first")
        alarm = Alarm(hour, minute)
        device.state.alarms.append(alarm)
        device.close_dialog()
        device.push("alarm", alarm=alarm)
        return f"Created an alarm for {time_text(hour, minute)}."
    alarm.hour, alarm.minute = hour, minute
    device.close_dialog()
    return f"Set the alarm to {time_text(hour, minute)}."


# -- timers ----------------------------------------------------------------------------------------------------

def _timers(device: Device, page: Page) -> Screen:
    items: list[Element] = []
    for timer in device.state.timers:
        text = timer_text(timer)
        items += [label(text, "timer_time", description="Running" if timer.running else "Paused"),
                  button("Pause" if timer.running else "Resume", _toggle_timer(timer), "timer_toggle",
                         description=f"{'Pause' if timer.running else 'Resume'} timer {text}"),
                  button("Delete", _delete_timer(timer), "timer_delete", description=f"Delete timer {text}")]
    fields = [text_field(key, hint, f"timer_{key}") for key, hint, _ in TIMER_FIELDS]
    return Screen("Clock", _tabs("timer") + fields + [button("Start", _start_timer, "start"),
                                                      ListBlock("timer_list", items, page_size=9)])


def _start_timer(device: Device) -> str:
    hours, minutes, seconds = (_number(device.form(key) or "0", 0, high, key) for key, _, high in TIMER_FIELDS)
    if not hours + minutes + seconds:
        raise DeviceError("enter the timer's length (hours, minutes, seconds) before starting it")
    if len(device.state.timers) >= MAX_TIMERS:
        raise DeviceError(f"the clock runs at most {MAX_TIMERS} timers; delete one first")
    timer = Timer(hours, minutes, seconds, running=True)
    device.state.timers.append(timer)
    for key, _, _ in TIMER_FIELDS:
        device.page.form[key] = ""
    return f"Started a timer of {timer_text(timer)}."


def _toggle_timer(timer: Timer):
    def toggle(device: Device) -> str:
        timer.running = not timer.running
        return f"{'Resumed' if timer.running else 'Paused'} the timer."
    return toggle


def _delete_timer(timer: Timer):
    def delete(device: Device) -> str:
        device.state.timers = [t for t in device.state.timers if t is not timer]
        return f"Deleted the {timer_text(timer)} timer."
    return delete


# -- the stopwatch ---------------------------------------------------------------------------------------------

def _stopwatch(device: Device) -> Screen:
    stopwatch = device.state.stopwatch
    body = _tabs("stopwatch") + [label(duration_text(stopwatch.elapsed_s), "stopwatch_time",
                                       description="Elapsed time")]
    if stopwatch.running:
        body += [button("Pause", _run(False), "fab"), button("Lap", _lap, "lap")]
    else:
        body.append(button("Start", _run(True), "fab"))
        if stopwatch.elapsed_s:
            body.append(button("Reset", _reset, "reset"))
    laps = [label(f"Lap {i}: {duration_text(total)}", "lap_time") for i, total in enumerate(stopwatch.laps, 1)]
    if laps:
        body.append(ListBlock("laps", laps[::-1]))
    return Screen("Clock", body)


def _run(running: bool):
    def run(device: Device) -> str:
        device.state.stopwatch.running = running
        return "Started the stopwatch." if running else "Paused the stopwatch."
    return run


def _lap(device: Device) -> str:
    stopwatch = device.state.stopwatch
    if len(stopwatch.laps) >= MAX_LAPS:
        raise DeviceError(f"the stopwatch keeps at most {MAX_LAPS} laps; reset it first")
    stopwatch.laps.append(stopwatch.elapsed_s)
    return f"Lap {len(stopwatch.laps)} at {duration_text(stopwatch.elapsed_s)}."


def _reset(device: Device) -> str:
    device.state.stopwatch = Stopwatch()
    return "Reset the stopwatch."


APP = ClockApp()
