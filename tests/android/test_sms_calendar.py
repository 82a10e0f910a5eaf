"""Simple SMS Messenger and Simple Calendar Pro on the simulated phone: their screens, what touching them does, and
that invalid actions change nothing."""

from __future__ import annotations

import copy
import datetime

import pytest

from rlfactory_tool_servers.android.phone.apps import calendar, default_apps, sms
from rlfactory_tool_servers.android.phone.device import Device, DeviceError
from rlfactory_tool_servers.android.phone.state import DEVICE_NOW, Contact, Event, Message, PhoneState

ALICE, BOB, CAROL = "+15551230001", "+15551230002", "+15551230003"


def minutes_ago(minutes: int) -> datetime.datetime:
    return DEVICE_NOW - datetime.timedelta(minutes=minutes)


def phone(**state) -> Device:
    return Device(default_apps(), PhoneState(**state))


def index_of(device: Device, *, text: str | None = None, desc: str | None = None, rid: str | None = None,
             nth: int = 0) -> int:
    found = [i for i, e in enumerate(device.elements())
             if (text is None or e.text == text) and (desc is None or e.content_description == desc)
             and (rid is None or e.resource_id == rid)]
    assert len(found) > nth, (text, desc, rid, device.screen_text())
    return found[nth]


def texts(device: Device, rid: str) -> list[str]:
    return [e.text for e in device.elements() if e.resource_id == rid]


def sms_phone() -> Device:
    return phone(contacts=[Contact("Alice", "Abbott", ALICE)], messages=[
        Message(ALICE, "Lunch tomorrow?", False, minutes_ago(60)),
        Message(BOB, "Call me back", False, minutes_ago(30), read=False),
        Message(ALICE, "Sure, at noon", True, minutes_ago(50)),
        Message(CAROL, "Old news", False, minutes_ago(500)),
    ])


# -- Simple SMS Messenger --------------------------------------------------------------------------------------

def test_conversations_one_per_number_newest_first_with_names_and_last_messages():
    device = sms_phone()
    device.open_app("Messages")
    rows = [e for e in device.elements() if e.resource_id == "conversation_address"]
    assert [e.text for e in rows] == [BOB, "Alice Abbott", CAROL]
    assert [e.content_description for e in rows] == ["Unread: Call me back", "You: Sure, at noon", "Old news"]


def test_a_conversation_lists_its_messages_oldest_first_and_marks_them_read():
    device = sms_phone()
    device.open_app("SMS")
    device.click(index_of(device, text=BOB))
    assert device.state.messages[1].read
    device.navigate_back()
    device.click(index_of(device, text="Alice Abbott"))
    assert texts(device, "received_message") + texts(device, "sent_message") == ["Lunch tomorrow?", "Sure, at noon"]
    assert index_of(device, rid="received_message") < index_of(device, rid="sent_message")
    assert ALICE in texts(device, "thread_number")


def test_a_long_conversation_opens_at_its_newest_message_and_scrolls_back():
    device = phone(messages=[Message(BOB, f"message {i}", i % 2 == 0, minutes_ago(100 - i)) for i in range(20)])
    device.open_app("Simple SMS Messenger")
    device.click(index_of(device, text=BOB))
    shown = [e.text for e in device.elements() if e.resource_id in ("sent_message", "received_message")]
    assert shown[-1] == "message 19" and "message 0" not in shown
    while device.scroll("up") != "Scrolled up; the list is already at its top.":
        pass
    assert "message 0" in [e.text for e in device.elements() if e.resource_id in ("sent_message", "received_message")]


def test_sending_appends_a_sent_message_now_and_an_empty_one_is_refused():
    device = sms_phone()
    device.open_app("SMS")
    device.click(index_of(device, text="Alice Abbott"))
    before = copy.deepcopy(device.state)
    with pytest.raises(DeviceError, match="empty"):
        device.click(index_of(device, text="Send"))
    assert device.state == before
    device.input_text(index_of(device, rid="thread_type_message"), "See you there")
    now = device.state.now
    device.click(index_of(device, text="Send"))
    assert device.state.messages[-1] == Message(ALICE, "See you there", True, now)
    assert texts(device, "sent_message")[-1] == "See you there"
    assert device.form("message") == ""


def test_the_phone_holds_a_bounded_number_of_messages(monkeypatch):
    monkeypatch.setattr(sms, "MAX_MESSAGES", 4)
    device = sms_phone()
    device.open_app("SMS")
    device.click(index_of(device, text="Alice Abbott"))
    device.input_text(index_of(device, rid="thread_type_message"), "one more")
    with pytest.raises(DeviceError, match="at most 4 messages"):
        device.click(index_of(device, text="Send"))
    assert len(device.state.messages) == 4


def test_long_pressing_a_sent_message_offers_resend_copy_and_delete():
    device = sms_phone()
    device.open_app("SMS")
    device.click(index_of(device, text="Alice Abbott"))
    device.long_press(index_of(device, text="Sure, at noon"))
    assert [e.text for e in device.elements() if e.clickable] == ["Resend", "Copy text", "Delete"]
    device.click(index_of(device, text="Copy text"))
    assert device.state.clipboard == "Sure, at noon" and device.page.dialog is None
    device.long_press(index_of(device, text="Sure, at noon"))
    device.click(index_of(device, text="Resend"))
    assert [m.text for m in device.state.messages if m.sent] == ["Sure, at noon", "Sure, at noon"]
    assert device.state.messages[-1].time > minutes_ago(1)


def test_a_received_message_cannot_be_resent_and_deleting_asks_first():
    device = sms_phone()
    device.open_app("SMS")
    device.click(index_of(device, text="Alice Abbott"))
    device.long_press(index_of(device, text="Lunch tomorrow?"))
    assert "Resend" not in [e.text for e in device.elements()]
    device.navigate_back()
    assert device.page.dialog is None
    device.long_press(index_of(device, text="Lunch tomorrow?"))
    device.click(index_of(device, text="Delete"))
    device.click(index_of(device, text="Cancel"))
    assert len(device.state.messages) == 4
    device.long_press(index_of(device, text="Lunch tomorrow?"))
    device.click(index_of(device, text="Delete"))
    device.click(index_of(device, text="Delete"))
    assert "Lunch tomorrow?" not in [m.text for m in device.state.messages]


def test_starting_a_conversation_with_a_contact_name_or_a_number():
    device = sms_phone()
    device.open_app("SMS")
    device.click(index_of(device, desc="Start a conversation"))
    device.input_text(index_of(device, rid="new_conversation_address"), "Alice Abbott")
    assert device.page.route == "thread" and device.page.args["number"] == ALICE
    device.navigate_back()
    assert device.page.route == "main"
    device.click(index_of(device, desc="Start a conversation"))
    note = device.input_text(index_of(device, rid="new_conversation_address"), "Nobody")
    assert "No contact is named 'Nobody'" in note and device.page.route == "new"
    device.input_text(index_of(device, rid="new_conversation_address"), "+1 555 123 0002", clear_text=True)
    assert device.page.args["number"] == BOB and "Call me back" in texts(device, "received_message")


def test_the_contact_suggestions_filter_as_the_recipient_is_typed():
    device = sms_phone()
    device.state.contacts.append(Contact("Alan", "Brennan", "+15559990000"))
    device.open_app("SMS")
    device.click(index_of(device, desc="Start a conversation"))
    assert texts(device, "suggestion_name") == ["Alan Brennan", "Alice Abbott"]
    device.input_text(index_of(device, rid="new_conversation_address"), "ali")
    assert texts(device, "suggestion_name") == ["Alice Abbott"]
    device.click(index_of(device, text="Alice Abbott"))
    assert device.page.route == "thread" and device.page.args["number"] == ALICE


# -- Simple Calendar Pro ---------------------------------------------------------------------------------------

def at(day: int, hour: int, minute: int = 0) -> datetime.datetime:
    return datetime.datetime.combine(DEVICE_NOW.date() + datetime.timedelta(days=day), datetime.time(hour, minute))


def calendar_phone() -> Device:
    return phone(events=[Event("Yoga class", at(1, 9), 60, "Sunset Gym"), Event("Dentist", at(0, 10), 30),
                         Event("Book club", at(1, 18, 30), 90, "City Library", "Chapter 3")])


def test_the_agenda_lists_days_then_their_events_by_time():
    device = calendar_phone()
    device.open_app("Calendar")
    rows = [(e.resource_id, e.text, e.content_description) for e in device.elements()
            if e.resource_id in ("day_header", "event_item")]
    assert rows == [("day_header", "Sunday, October 15, 2023", None), ("event_item", "10:00 Dentist", None),
                    ("day_header", "Monday, October 16, 2023", None), ("event_item", "09:00 Yoga class", "Sunset Gym"),
                    ("event_item", "18:30 Book club", "City Library")]
    assert "Today is Sunday, October 15, 2023" in texts(device, "today")


def test_a_long_agenda_scrolls_and_records_its_end():
    device = phone(events=[Event(f"Event {i:02d}", at(i, 9)) for i in range(10)])
    device.open_app("Simple Calendar Pro")
    assert "Simple Calendar Pro/agenda" not in device.lists_seen_to_end
    while device.scroll("down") != "Scrolled down; the list is already at its end.":
        pass
    assert "09:00 Event 09" in texts(device, "event_item")
    assert "Simple Calendar Pro/agenda" in device.lists_seen_to_end


def test_a_day_shows_its_events_and_steps_to_the_next_and_previous_days():
    device = calendar_phone()
    device.open_app("Calendar")
    device.click(index_of(device, text="Sunday, October 15, 2023"))
    assert texts(device, "event_item") == ["10:00 Dentist"]
    device.click(index_of(device, desc="Next day"))
    assert texts(device, "event_item") == ["09:00 Yoga class", "18:30 Book club"]
    device.click(index_of(device, desc="Next day"))
    assert "No events on this day" in texts(device, "day_events_empty")
    assert {"Simple Calendar Pro/day/2023-10-15", "Simple Calendar Pro/day/2023-10-17"} <= device.visited
    device.navigate_back()
    assert device.page.route == "main"


def test_an_event_shows_its_details_and_deleting_asks_first():
    device = calendar_phone()
    device.open_app("Calendar")
    device.click(index_of(device, text="18:30 Book club"))
    assert [e.text for e in device.elements()[2:8]] == ["Book club", "Monday, October 16, 2023", "18:30 - 20:00",
                                                         "90 minutes", "City Library", "Chapter 3"]
    device.click(index_of(device, desc="Delete"))
    device.click(index_of(device, text="Cancel"))
    assert len(device.state.events) == 3 and device.page.route == "event"
    device.click(index_of(device, desc="Delete"))
    device.click(index_of(device, text="Delete"))
    assert [e.title for e in device.state.events] == ["Yoga class", "Dentist"] and device.page.route == "main"


def fill_form(device: Device, **values: str) -> None:
    for key, value in values.items():
        device.input_text(index_of(device, rid=f"event_{key}_input"), value, clear_text=True)


def test_a_new_event_is_prefilled_and_saved_from_the_form():
    device = calendar_phone()
    device.open_app("Calendar")
    device.click(index_of(device, desc="New event"))
    assert (device.form("date"), device.form("start"), device.form("duration")) == ("2023-10-15", "16:00", "60")
    fill_form(device, title="Haircut", date="2023-10-20", start="14:30", duration="45", location="Studio 5")
    device.click(index_of(device, text="Save"))
    assert device.state.events[-1] == Event("Haircut", datetime.datetime(2023, 10, 20, 14, 30), 45, "Studio 5")
    assert device.page.route == "main" and "14:30 Haircut" in texts(device, "event_item")


@pytest.mark.parametrize("field, value, message", [
    ("title", " ", "needs a title"), ("date", "2023-10-152023-10-20", "YYYY-MM-DD"),
    ("date", "2023-02-30", "not a date"), ("start", "24:00", "HH:MM"), ("start", "9am", "HH:MM"),
    ("duration", "0", "from 1 to"), ("duration", "an hour", "whole number")])
def test_saving_a_bad_form_is_refused_and_changes_nothing(field, value, message):
    device = calendar_phone()
    device.open_app("Calendar")
    device.click(index_of(device, desc="New event"))
    fill_form(device, title="Haircut")
    fill_form(device, **{field: value})
    before = copy.deepcopy(device.state)
    with pytest.raises(DeviceError, match=message):
        device.click(index_of(device, text="Save"))
    assert device.state == before and device.page.route == "edit"


def test_editing_an_event_changes_it_in_place():
    device = calendar_phone()
    device.open_app("Calendar")
    device.click(index_of(device, text="09:00 Yoga class"))
    device.click(index_of(device, desc="Edit"))
    assert device.form("title") == "Yoga class" and device.form("start") == "09:00"
    fill_form(device, start="07:15")
    device.click(index_of(device, text="Save"))
    assert device.page.route == "event" and "07:15 - 08:15" in texts(device, "event_time")
    assert len(device.state.events) == 3


def test_the_calendar_holds_a_bounded_number_of_events(monkeypatch):
    monkeypatch.setattr(calendar, "MAX_EVENTS", 3)
    device = calendar_phone()
    device.open_app("Calendar")
    device.click(index_of(device, desc="New event"))
    fill_form(device, title="One too many")
    with pytest.raises(DeviceError, match="at most 3 events"):
        device.click(index_of(device, text="Save"))
    assert len(device.state.events) == 3
