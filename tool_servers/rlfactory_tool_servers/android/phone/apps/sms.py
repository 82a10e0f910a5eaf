"""Simple SMS Messenger: the conversations (one per phone number, newest first), a conversation's messages, and a
page to start a conversation with a number or a contact.

Routes: ``main`` (the conversations), ``thread`` (``number``: one conversation, messages oldest to newest, opened
scrolled to the newest), ``new`` (a recipient field and the contacts matching it).
Dialogs on ``thread``: ``message`` (``message``: Resend for a sent one, Copy text, Delete) and ``delete``
(``message``: the confirmation).

A conversation row shows the contact's name when the number belongs to a contact (else the number) and, as its
content description, the last message (``You: `` before a sent one, ``Unread: `` while a received one is unread).
Numbers are the same when their last ten digits are. Opening a conversation marks its messages read; sending
appends ``Message(sent=True, time=now)``."""

from __future__ import annotations

import re

from rlfactory_tool_servers.android.phone.apps.widgets import (
    button, confirm, icon_button, label, row, text_field, up_button)
from rlfactory_tool_servers.android.phone.device import Device, DeviceError, Dialog, ListBlock, Page, Screen
from rlfactory_tool_servers.android.phone.state import Contact, Message, PhoneState

ORDER = 20
APP_NAME = "Simple SMS Messenger"
MAX_MESSAGES = 1000
"""The most messages the phone holds; sending past it is refused."""
THREAD_PAGE = 7
NUMBER = re.compile(r"\+?[\d\s\-().]+")


class SmsApp:
    name = APP_NAME
    package = "com.simplemobiletools.smsmessenger"
    aliases = ("SMS", "Messages", "Messaging", "Simple SMS")

    def render(self, device: Device, page: Page) -> Screen:
        if page.route == "thread":
            return _thread(device, page)
        if page.route == "new":
            return _new_conversation(device)
        return _conversations(device)


# -- numbers and names -----------------------------------------------------------------------------------------

def number_key(number: str) -> str:
    """What identifies a phone number: its last ten digits."""
    return "".join(ch for ch in number if ch.isdigit())[-10:]


def same_number(a: str, b: str) -> bool:
    return bool(number_key(a)) and number_key(a) == number_key(b)


def contact_for(state: PhoneState, number: str) -> Contact | None:
    return next((c for c in state.contacts if c.phone and same_number(c.phone, number)), None)


def display_name(state: PhoneState, number: str) -> str:
    """The contact's name for ``number``, or the number itself."""
    contact = contact_for(state, number)
    return contact.name if contact else number


def conversations(state: PhoneState) -> list[list[Message]]:
    """The messages grouped by number, each group oldest to newest, the group with the newest message first."""
    groups: dict[str, list[Message]] = {}
    for message in state.messages:
        groups.setdefault(number_key(message.number) or message.number, []).append(message)
    threads = [sorted(group, key=lambda m: m.time) for group in groups.values()]
    return sorted(threads, key=lambda thread: thread[-1].time, reverse=True)


def thread_of(state: PhoneState, number: str) -> list[Message]:
    return sorted((m for m in state.messages if same_number(m.number, number) or m.number == number),
                  key=lambda m: m.time)


# -- the conversations -----------------------------------------------------------------------------------------

def _conversations(device: Device) -> Screen:
    items = [row(display_name(device.state, thread[-1].number), _opener(thread[-1].number), "conversation_address",
                 description=_snippet(thread)) for thread in conversations(device.state)]
    return Screen(APP_NAME, [
        ListBlock("conversations_list", items, empty_text="No stored conversations have been found"),
        icon_button("Start a conversation", _start, "conversations_fab"),
    ])


def _snippet(thread: list[Message]) -> str:
    last = thread[-1]
    prefix = "You: " if last.sent else ("Unread: " if any(not m.read for m in thread) else "")
    return prefix + last.text


def _opener(number: str):
    def open_conversation(device: Device) -> None:
        device.push("thread", number=number)
        _arrive(device)
    return open_conversation


def _arrive(device: Device) -> None:
    """On entering a conversation: its messages are read, and the newest are in view."""
    thread = thread_of(device.state, device.page.args["number"])
    for message in thread:
        message.read = True
    _scroll_to_newest(device, len(thread))


def _scroll_to_newest(device: Device, count: int) -> None:
    device.page.scroll["thread_messages"] = max(0, count - THREAD_PAGE)


def _start(device: Device) -> None:
    device.push("new")


# -- starting a conversation -----------------------------------------------------------------------------------

def _new_conversation(device: Device) -> Screen:
    query = device.form("recipient").strip().casefold()
    contacts = sorted((c for c in device.state.contacts if c.phone), key=lambda c: (c.name.casefold(), c.phone))
    if query:
        digits = number_key(query)
        contacts = [c for c in contacts if query in c.name.casefold() or (digits and digits in number_key(c.phone))]
    items = [row(c.name, _recipient(c.phone), "suggestion_name", description=c.phone) for c in contacts]
    return Screen("New conversation", [
        up_button(),
        text_field("recipient", "Add Contact or Number", "new_conversation_address", on_enter=_go_to_recipient),
        ListBlock("suggestions", items, empty_text="No contacts match"),
    ])


def _recipient(number: str):
    def open_conversation(device: Device) -> None:
        device.replace("thread", number=_known_number(device.state, number))
        _arrive(device)
    return open_conversation


def _known_number(state: PhoneState, number: str) -> str:
    """``number`` as an existing conversation spells it, or as typed without spaces."""
    existing = next((m.number for m in state.messages if same_number(m.number, number)), None)
    return existing or re.sub(r"[\s\-().]", "", number)


def _go_to_recipient(device: Device) -> str:
    typed = device.form("recipient").strip()
    contact = next((c for c in device.state.contacts if c.phone and c.name.casefold() == typed.casefold()), None)
    if contact is not None:
        number = contact.phone
    elif NUMBER.fullmatch(typed) and len(number_key(typed)) >= 3:
        number = typed
    else:
        return (f"No contact is named {typed[:40]!r}; type a phone number or a contact's full name, or tap a "
                "contact in the list.")
    _recipient(number)(device)
    return f"Opened the conversation with {display_name(device.state, device.page.args['number'])}."


# -- a conversation --------------------------------------------------------------------------------------------

def _thread(device: Device, page: Page) -> Screen:
    number = page.args["number"]
    title = display_name(device.state, number)
    if page.dialog == "message":
        return Screen(title, dialog=_message_options(page.dialog_args["message"]))
    if page.dialog == "delete":
        return Screen(title, dialog=confirm("Delete message", "Are you sure you want to delete this message?",
                                            "Delete", _delete(page.dialog_args["message"])))
    items = [row(m.text, None, "sent_message" if m.sent else "received_message", long_press=_options(m),
                 description=f"{'Sent' if m.sent else 'Received'}, {m.time:%b %-d %H:%M}")
             for m in thread_of(device.state, number)]
    body = [up_button()]
    if title != number:
        body.append(label(number, "thread_number"))
    body += [ListBlock("thread_messages", items, page_size=THREAD_PAGE, empty_text="No messages yet"),
             text_field("message", "Type a message", "thread_type_message"),
             button("Send", _send, "thread_send_message")]
    return Screen(title, body)


def _options(message: Message):
    def open_options(device: Device) -> None:
        device.open_dialog("message", message=message)
    return open_options


def _message_options(message: Message) -> Dialog:
    buttons = [button("Resend", _resend(message), "resend")] if message.sent else []
    buttons += [button("Copy text", _copy(message), "copy_text"),
                button("Delete", lambda d: d.open_dialog("delete", message=message), "delete")]
    return Dialog("Message options", buttons, message.text)


def _append_sent(device: Device, number: str, text: str) -> None:
    state = device.state
    if len(state.messages) >= MAX_MESSAGES:
        raise DeviceError(f"the phone holds at most {MAX_MESSAGES} messages; delete some before sending more")
    state.messages.append(Message(number, text, sent=True, time=state.now))
    _scroll_to_newest(device, len(thread_of(state, number)))


def _send(device: Device) -> str:
    page = device.page
    text = page.form.get("message", "").strip()
    if not text:
        raise DeviceError("the message is empty; type it into the message field (Type a message) first")
    _append_sent(device, page.args["number"], text)
    page.form["message"] = ""
    return f"Sent the message to {display_name(device.state, page.args['number'])}."


def _resend(message: Message):
    def resend(device: Device) -> str:
        _append_sent(device, device.page.args["number"], message.text)
        device.close_dialog()
        return "Resent the message."
    return resend


def _copy(message: Message):
    def copy(device: Device) -> str:
        device.state.clipboard = message.text
        device.close_dialog()
        return "Copied the message text to the clipboard."
    return copy


def _delete(message: Message):
    def delete(device: Device) -> str:
        device.state.messages = [m for m in device.state.messages if m is not message]
        return "Deleted the message."
    return delete


APP = SmsApp()
