"""Simple Calendar Pro: an agenda of every event by day, a day's events, an event's details, and a form to create or
edit one; deletion behind a confirmation.

Routes: ``main`` (the agenda: a header row per day with events, ``Sunday, October 15, 2023``, then its events,
``10:00 Title`` with the location as content description), ``day`` (``date``: that day's events, with the previous
and next day a tap away), ``event`` (``event``: its details), ``edit`` (``event``, or none for a new one; ``date``
prefills a new one's date). Dialog on ``event``: ``delete``.

Today is ``state.now``'s date. Opening a day records ``Simple Calendar Pro/day/<YYYY-MM-DD>`` in
``device.visited`` (evidence that the agent looked at that day). The form takes the date as ``YYYY-MM-DD``, the
start as ``HH:MM`` and the duration in minutes; saving checks them (``DeviceError`` naming the bad field)."""

from __future__ import annotations

import datetime
import re

from rlfactory_tool_servers.android.phone.apps.widgets import (
    back, button, confirm, icon_button, label, row, text_field, up_button)
from rlfactory_tool_servers.android.phone.device import Device, DeviceError, ListBlock, Page, Screen
from rlfactory_tool_servers.android.phone.state import Event

ORDER = 40
APP_NAME = "Simple Calendar Pro"
MAX_EVENTS = 500
MAX_DURATION_MIN = 24 * 60
FIELDS = (("title", "Title"), ("date", "Date (YYYY-MM-DD)"), ("start", "Start time (HH:MM)"),
          ("duration", "Duration (minutes)"), ("location", "Location"), ("description", "Description"))
DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
TIME = re.compile(r"(\d{1,2}):(\d{2})")


class CalendarApp:
    name = APP_NAME
    package = "com.simplemobiletools.calendar.pro"
    aliases = ("Calendar", "Simple Calendar")

    def render(self, device: Device, page: Page) -> Screen:
        if page.route == "day":
            return _day(device, page)
        if page.route == "event":
            return _details(device, page)
        if page.route == "edit":
            return _edit(page)
        return _agenda(device)


def day_text(date: datetime.date) -> str:
    """A day as the headers show it: ``Sunday, October 15, 2023``."""
    return f"{date:%A, %B} {date.day}, {date.year}"


def event_text(event: Event) -> str:
    """An event as the lists show it: ``10:00 Title``."""
    return f"{event.start:%H:%M} {event.title}"


def _event_row(event: Event):
    return row(event_text(event), _open_event(event), "event_item", description=event.location or None)


def _sorted(events: list[Event]) -> list[Event]:
    return sorted(events, key=lambda e: (e.start, e.title))


# -- the agenda and a day --------------------------------------------------------------------------------------

def _agenda(device: Device) -> Screen:
    items = []
    shown_day = None
    for event in _sorted(device.state.events):
        if event.start.date() != shown_day:
            shown_day = event.start.date()
            items.append(row(day_text(shown_day), _open_day(shown_day), "day_header"))
        items.append(_event_row(event))
    return Screen(APP_NAME, [
        label(f"Today is {day_text(device.state.now.date())}", "today"),
        ListBlock("agenda", items, empty_text="No events"),
        icon_button("New event", _new_event(None), "new_event"),
    ])


def _open_day(date: datetime.date, replace: bool = False):
    def open_day(device: Device) -> None:
        if replace:
            device.replace("day", date=date)
        else:
            device.push("day", date=date)
        device.visited.add(f"{APP_NAME}/day/{date.isoformat()}")
    return open_day


def _day(device: Device, page: Page) -> Screen:
    date: datetime.date = page.args["date"]
    items = [_event_row(e) for e in _sorted(device.state.events) if e.start.date() == date]
    one_day = datetime.timedelta(days=1)
    return Screen(day_text(date), [
        up_button(),
        icon_button("Previous day", _open_day(date - one_day, replace=True), "previous_day"),
        icon_button("Next day", _open_day(date + one_day, replace=True), "next_day"),
        ListBlock("day_events", items, empty_text="No events on this day"),
        icon_button("New event", _new_event(date), "new_event"),
    ])


# -- an event --------------------------------------------------------------------------------------------------

def _open_event(event: Event):
    def open_event(device: Device) -> None:
        device.push("event", event=event)
    return open_event


def _details(device: Device, page: Page) -> Screen:
    event: Event = page.args["event"]
    if page.dialog == "delete":
        return Screen(event.title, dialog=confirm("Delete event", f"Are you sure you want to delete "
                                                  f"{event.title}?", "Delete", _delete(event)))
    end = event.start + datetime.timedelta(minutes=event.duration_min)
    body = [up_button(), label(event.title, "event_title"), label(day_text(event.start.date()), "event_date"),
            label(f"{event.start:%H:%M} - {end:%H:%M}", "event_time"),
            label(f"{event.duration_min} minutes", "event_duration"),
            label(event.location or "No location", "event_location", description="Location")]
    if event.description:
        body.append(label(event.description, "event_description", description="Description"))
    body += [icon_button("Edit", _edit_event(event), "edit"),
             icon_button("Delete", lambda d: d.open_dialog("delete"), "delete")]
    return Screen("Event", body)


def _delete(event: Event):
    def delete(device: Device) -> str:
        device.state.events = [e for e in device.state.events if e is not event]
        device.pop()
        return f"Deleted {event.title}."
    return delete


# -- the form --------------------------------------------------------------------------------------------------

def _new_event(date: datetime.date | None):
    def new_event(device: Device) -> None:
        now = device.state.now
        next_hour = (now + datetime.timedelta(hours=1)).replace(minute=0)
        device.push("edit")
        device.page.form.update({"date": (date or now.date()).isoformat(), "start": f"{next_hour:%H:%M}",
                                 "duration": "60"})
    return new_event


def _edit_event(event: Event):
    def edit(device: Device) -> None:
        device.push("edit", event=event)
        device.page.form.update({"title": event.title, "date": event.start.date().isoformat(),
                                 "start": f"{event.start:%H:%M}", "duration": str(event.duration_min),
                                 "location": event.location, "description": event.description})
    return edit


def _edit(page: Page) -> Screen:
    body = [up_button()] + [text_field(key, hint, f"event_{key}_input") for key, hint in FIELDS]
    body.append(button("Save", _save, "save"))
    return Screen("Edit event" if page.args.get("event") else "New event", body)


def _start_of(date_text: str, time_text: str) -> datetime.datetime:
    date_match, time_match = DATE.fullmatch(date_text), TIME.fullmatch(time_text)
    if date_match is None:
        raise DeviceError(f"the date must be YYYY-MM-DD, e.g. 2023-10-15; got {date_text[:30]!r}")
    try:
        date = datetime.date(*(int(part) for part in date_match.groups()))
    except ValueError:
        raise DeviceError(f"{date_text!r} is not a date on the calendar") from None
    if time_match is None or int(time_match.group(1)) > 23 or int(time_match.group(2)) > 59:
        raise DeviceError(f"the start time must be HH:MM on a 24-hour clock, e.g. 09:30; got {time_text[:30]!r}")
    return datetime.datetime.combine(date, datetime.time(int(time_match.group(1)), int(time_match.group(2))))


def _duration_of(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_DURATION_MIN:
        raise DeviceError(f"the duration must be a whole number of minutes from 1 to {MAX_DURATION_MIN}; "
                          f"got {text[:30]!r}")
    return int(text)


def _save(device: Device) -> str:
    page = device.page
    values = {key: page.form.get(key, "").strip() for key, _ in FIELDS}
    if not values["title"]:
        raise DeviceError("the event needs a title before it can be saved")
    start = _start_of(values["date"], values["start"])
    duration = _duration_of(values["duration"])
    event = page.args.get("event")
    if event is None:
        if len(device.state.events) >= MAX_EVENTS:
            raise DeviceError(f"the calendar holds at most {MAX_EVENTS} events")
        event = Event(values["title"], start, duration, values["location"], values["description"])
        device.state.events.append(event)
    else:
        event.title, event.start, event.duration_min = values["title"], start, duration
        event.location, event.description = values["location"], values["description"]
    back(device)
    return f"Saved {event.title} on {day_text(start.date())} at {start:%H:%M}."


APP = CalendarApp()
