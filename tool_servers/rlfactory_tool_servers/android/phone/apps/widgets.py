"""The elements apps are made of: buttons, text fields, switches, list rows, confirmation dialogs."""

from __future__ import annotations

from collections.abc import Callable

from rlfactory_tool_servers.android.phone.device import Device, Dialog
from rlfactory_tool_servers.android.phone.ui import Element

Action = Callable[[Device], "str | None"]


def button(text: str, action: Action, resource_id: str | None = None, *, description: str | None = None) -> Element:
    return Element(text=text, content_description=description, class_name="android.widget.Button",
                   resource_id=resource_id, clickable=True, on_click=action)


def icon_button(description: str, action: Action, resource_id: str | None = None) -> Element:
    """An image button known only by its content description (a floating action button, a toolbar icon)."""
    return Element(content_description=description, class_name="android.widget.ImageButton",
                   resource_id=resource_id, clickable=True, on_click=action)


def text_field(field: str, hint: str, resource_id: str | None = None, *, multiline: bool = False,
               on_enter: Action | None = None) -> Element:
    """An editable field holding the page's form value ``field`` (shown as its text; ``hint`` when empty)."""
    return Element(hint_text=hint, class_name="android.widget.EditText", resource_id=resource_id or field,
                   clickable=True, editable=True, field=field, multiline=multiline, on_enter=on_enter)


def label(text: str, resource_id: str | None = None, *, description: str | None = None) -> Element:
    return Element(text=text, content_description=description, resource_id=resource_id)


def row(text: str, action: Action | None, resource_id: str, *, long_press: Action | None = None,
        description: str | None = None, selected: bool = False) -> Element:
    """A list item: clickable when it has an action, long-clickable when it has a long-press action."""
    return Element(text=text, content_description=description, resource_id=resource_id,
                   clickable=action is not None, on_click=action, long_clickable=long_press is not None,
                   on_long_press=long_press, selected=selected)


def switch(text: str, checked: bool, action: Action, resource_id: str) -> Element:
    return Element(text=text, class_name="android.widget.Switch", resource_id=resource_id, checkable=True,
                   checked=checked, clickable=True, on_click=action)


def checkbox(text: str, checked: bool, action: Action, resource_id: str) -> Element:
    return Element(text=text, class_name="android.widget.CheckBox", resource_id=resource_id, checkable=True,
                   checked=checked, clickable=True, on_click=action)


def confirm(title: str, message: str, confirm_text: str, on_confirm: Action) -> Dialog:
    """A confirmation dialog: ``confirm_text`` runs ``on_confirm`` and closes it, Cancel closes it."""

    def accept(device: Device) -> str | None:
        device.close_dialog()
        return on_confirm(device)

    def cancel(device: Device) -> str:
        device.close_dialog()
        return "Cancelled."

    return Dialog(title, [button("Cancel", cancel, "android:id/button2"),
                          button(confirm_text, accept, "android:id/button1")], message)


def go(route: str, **args) -> Action:
    """An action that opens ``route`` of the current app."""
    def open_route(device: Device) -> None:
        device.push(route, **args)
    return open_route


def back(device: Device) -> None:
    """An action that leaves the current page (a toolbar's up arrow)."""
    device.pop()


def up_button() -> Element:
    return icon_button("Navigate up", back, "toolbar_up")
