"""The Clock and Settings apps on the simulated phone: real screens, real state, invalid actions change nothing."""

from __future__ import annotations

import copy

import pytest

from rlfactory_tool_servers.android.phone.actions import perform
from rlfactory_tool_servers.android.phone.apps import default_apps
from rlfactory_tool_servers.android.phone.device import Device, DeviceError
from rlfactory_tool_servers.android.phone.state import Alarm, PhoneState, Settings, Timer
from rlfactory_tool_servers.android.phone.tasks import template_named


def phone(**fields) -> Device:
    return Device(default_apps(), PhoneState(**fields))


def index_of(device: Device, text: str | None = None, desc: str | None = None, rid: str | None = None) -> int:
    for i, element in enumerate(device.elements()):
        if ((text is None or element.text == text) and (desc is None or element.content_description == desc)
                and (rid is None or element.resource_id == rid)):
            return i
    raise AssertionError(f"no element text={text!r} desc={desc!r} rid={rid!r} on screen:\n{device.screen_text()}")


def tap(device: Device, **target) -> str:
    return perform(device, "click", {"index": index_of(device, **target)})


def type_into(device: Device, rid: str, text: str) -> str:
    return perform(device, "input_text", {"index": index_of(device, rid=rid), "text": text, "clear_text": True})


def texts(device: Device) -> list[str | None]:
    return [e.text for e in device.elements()]


def open_display(device: Device) -> None:
    perform(device, "open_app", {"app_name": "Settings"})
    perform(device, "scroll", {"direction": "down"})
    tap(device, text="Display")


# -- Clock -----------------------------------------------------------------------------------------------------

def test_alarm_list_is_sorted_by_time_and_scrolls_to_its_end():
    device = phone(alarms=[Alarm(h, 0, f"Alarm {h}") for h in range(20, 10, -1)])
    perform(device, "open_app", {"app_name": "Alarm"})
    assert device.page_key == "Clock/main"
    assert texts(device).index("11:00 AM") < texts(device).index("12:00 PM")
    assert "8:00 PM" not in texts(device) and "Clock/alarm_list" not in device.lists_seen_to_end
    perform(device, "scroll", {"direction": "down"})
    perform(device, "scroll", {"direction": "down"})
    assert "8:00 PM" in texts(device) and "Clock/alarm_list" in device.lists_seen_to_end


def test_an_alarms_switch_turns_only_that_alarm_off():
    device = phone(alarms=[Alarm(7, 30, "Gym"), Alarm(7, 30, "Yoga")])
    perform(device, "open_app", {"app_name": "Clock"})
    tap(device, desc="7:30 AM Yoga", rid="onoff")
    assert [a.enabled for a in device.state.alarms] == [True, False]
    assert next(e for e in device.elements() if e.content_description == "7:30 AM Yoga").checked is False


def test_the_time_picker_creates_an_alarm_and_opens_it():
    device = phone()
    perform(device, "open_app", {"app_name": "Clock"})
    tap(device, desc="Add alarm")
    type_into(device, "hour_field", "12")
    type_into(device, "minute_field", "05")
    assert tap(device, text="OK") == "Created an alarm for 12:05 AM."
    assert device.state.alarms == [Alarm(0, 5)] and device.page_key == "Clock/alarm"
    tap(device, rid="edit_label")
    type_into(device, "label_field", "  Wake   up ")
    assert device.state.alarms == [Alarm(0, 5, "Wake up")] and device.page.dialog is None
    tap(device, text="12:05 AM")
    tap(device, text="PM")
    tap(device, text="OK")
    assert device.state.alarms == [Alarm(12, 5, "Wake up")]


@pytest.mark.parametrize("hour, minute", [("13", "00"), ("7", "60"), ("", "30"), ("seven", "30")])
def test_a_wrong_time_changes_nothing(hour, minute):
    device = phone(alarms=[Alarm(6, 0)])
    perform(device, "open_app", {"app_name": "Clock"})
    tap(device, desc="Add alarm")
    type_into(device, "hour_field", hour)
    type_into(device, "minute_field", minute)
    before = (copy.deepcopy(device.state.alarms), device.page_key, device.page.dialog, dict(device.page.form))
    with pytest.raises(DeviceError, match="whole number"):
        tap(device, text="OK")
    assert (device.state.alarms, device.page_key, device.page.dialog, device.page.form) == before


def test_cancelling_the_picker_adds_no_alarm():
    device = phone()
    perform(device, "open_app", {"app_name": "Clock"})
    tap(device, desc="Add alarm")
    type_into(device, "hour_field", "9")
    tap(device, text="Cancel")
    assert device.state.alarms == [] and device.page.dialog is None and "No alarms" in texts(device)


def test_delete_removes_the_open_alarm_only():
    device = phone(alarms=[Alarm(6, 0, "Gym"), Alarm(6, 0, "Nap")])
    perform(device, "open_app", {"app_name": "Clock"})
    tap(device, desc="Nap", rid="digital_clock")
    tap(device, text="Delete")
    assert device.state.alarms == [Alarm(6, 0, "Gym")] and device.page_key == "Clock/main"


def test_a_timer_starts_pauses_and_is_deleted():
    device = phone(timers=[Timer(0, 5, 0)])
    perform(device, "open_app", {"app_name": "Clock"})
    tap(device, text="Timer")
    with pytest.raises(DeviceError, match="length"):
        tap(device, text="Start")
    type_into(device, "timer_minutes", "75")
    with pytest.raises(DeviceError, match="minutes"):
        tap(device, text="Start")
    assert device.state.timers == [Timer(0, 5, 0)]
    type_into(device, "timer_minutes", "2")
    type_into(device, "timer_seconds", "30")
    tap(device, text="Start")
    assert device.state.timers == [Timer(0, 5, 0), Timer(0, 2, 30, running=True)]
    assert device.page.form["minutes"] == "" and "00h 02m 30s" in texts(device)
    tap(device, desc="Pause timer 00h 02m 30s")
    tap(device, desc="Delete timer 00h 05m 00s")
    assert device.state.timers == [Timer(0, 2, 30, running=False)]


def test_the_stopwatch_runs_with_the_phones_actions():
    device = phone()
    perform(device, "open_app", {"app_name": "Clock"})
    tap(device, text="Stopwatch")
    assert "Reset" not in texts(device)
    tap(device, text="Start")
    perform(device, "wait", {})
    assert device.state.stopwatch.elapsed_s == 7 and "00:07" in texts(device)
    tap(device, text="Lap")
    tap(device, text="Pause")
    stopwatch = device.state.stopwatch
    assert not stopwatch.running and stopwatch.laps == [7] and stopwatch.elapsed_s == 9
    perform(device, "wait", {})
    assert stopwatch.elapsed_s == 9 and "Lap 1: 00:07" in texts(device)
    tap(device, text="Reset")
    assert device.state.stopwatch.elapsed_s == 0 and device.state.stopwatch.laps == []


def test_alarm_time_answers_are_read_in_12_or_24_hour_form():
    template = template_named("ClockAlarmTime")
    assert template.answer_matches("It is set for 7:30 p.m.", "7:30 PM")
    assert template.answer_matches("19:30", "7:30 PM")
    assert template.answer_matches("12:05am", "12:05 AM")
    assert not template.answer_matches("7:30 AM", "7:30 PM")
    assert not template.answer_matches("7:30 PM or 8:00 PM", "7:30 PM")


# -- Settings --------------------------------------------------------------------------------------------------

def test_categories_not_simulated_are_disabled():
    device = phone()
    perform(device, "open_app", {"app_name": "Settings"})
    with pytest.raises(DeviceError, match="disabled"):
        tap(device, text="Apps")
    assert device.page_key == "Settings/main"


def test_switches_change_the_settings():
    device = phone(settings=Settings(wifi=True, bluetooth=False, airplane_mode=False))
    perform(device, "open_app", {"app_name": "Settings"})
    tap(device, text="Network & internet")
    assert tap(device, text="Wi-Fi") == "Turned Wi-Fi off."
    tap(device, text="Airplane mode")
    perform(device, "navigate_back", {})
    tap(device, text="Connected devices")
    tap(device, text="Bluetooth")
    assert device.state.settings == Settings(wifi=False, bluetooth=True, airplane_mode=True)


def test_brightness_steps_stop_at_the_ends():
    device = phone(settings=Settings(brightness=240))
    open_display(device)
    assert "94%" in texts(device)
    tap(device, desc="Increase brightness")
    tap(device, desc="Increase brightness")
    assert device.state.settings.brightness == 255 and "100%" in texts(device)
    for _ in range(11):
        tap(device, desc="Decrease brightness")
    assert device.state.settings.brightness == 0


def test_the_brightness_dialog_sets_a_percentage_and_reports_a_wrong_one():
    device = phone(settings=Settings(brightness=128))
    open_display(device)
    tap(device, desc="Brightness level")
    assert "Not set" in type_into(device, "brightness_percent", "150")
    assert device.state.settings.brightness == 128 and device.page.dialog == "brightness"
    with pytest.raises(DeviceError, match="percentage"):
        tap(device, text="OK")
    tap(device, text="Cancel")
    assert device.state.settings.brightness == 128 and device.page.dialog is None
    tap(device, desc="Brightness level")
    type_into(device, "brightness_percent", "100")
    assert device.state.settings.brightness == 255 and device.page.dialog is None
    tap(device, text="Dark theme")
    assert device.state.settings.dark_theme
