"""Contacts (after Simple Contacts Pro): the list sorted by name with a search field, a contact's details, a
form to create or edit one, and deletion behind a confirmation.

Routes: ``main`` (the list), ``details`` (``contact``), ``edit`` (``contact``, or none for a new one)."""

from __future__ import annotations

from rlfactory_tool_servers.android.phone.apps.widgets import (
    back, button, confirm, icon_button, label, row, text_field, up_button)
from rlfactory_tool_servers.android.phone.device import Device, DeviceError, ListBlock, Page, Screen
from rlfactory_tool_servers.android.phone.state import Contact

ORDER = 10
MAX_CONTACTS = 500
FIELDS = (("first", "First name"), ("last", "Last name"), ("phone", "Phone number"), ("email", "Email"))


class ContactsApp:
    name = "Contacts"
    package = "com.simplemobiletools.contacts.pro"
    aliases = ("Simple Contacts", "Simple Contacts Pro", "Contact")

    def render(self, device: Device, page: Page) -> Screen:
        if page.route == "details":
            return _details(device, page)
        if page.route == "edit":
            return _edit(device, page)
        return _list(device, page)


def _list(device: Device, page: Page) -> Screen:
    query = device.form("search").strip().casefold()
    contacts = sorted(device.state.contacts, key=lambda c: (c.name.casefold(), c.phone))
    if query:
        contacts = [c for c in contacts if query in c.name.casefold() or query in c.phone]
    items = [row(c.name, _open(c), "contact_name", description=c.phone) for c in contacts]
    return Screen("Contacts", [
        text_field("search", "Search contacts", "search_field"),
        ListBlock("contacts_list", items, empty_text="No contacts found"),
        icon_button("Create new contact", _new, "fab"),
    ])


def _open(contact: Contact):
    def open_contact(device: Device) -> None:
        device.push("details", contact=contact)
    return open_contact


def _new(device: Device) -> None:
    device.push("edit")


def _details(device: Device, page: Page) -> Screen:
    contact: Contact = page.args["contact"]
    if page.dialog == "delete":
        return Screen(contact.name, dialog=confirm("Delete contact", f"Are you sure you want to delete "
                                                   f"{contact.name}?", "Delete", _delete(contact)))
    body = [up_button(), label(contact.name, "contact_full_name"),
            label(contact.phone or "No phone number", "contact_number", description="Phone")]
    if contact.email:
        body.append(label(contact.email, "contact_email", description="Email"))
    body += [icon_button("Edit", _edit_contact(contact), "edit"),
             icon_button("Delete", lambda d: d.open_dialog("delete"), "delete")]
    return Screen("Contact details", body)


def _edit_contact(contact: Contact):
    def edit(device: Device) -> None:
        device.push("edit", contact=contact)
        device.page.form.update({key: getattr(contact, key) for key, _ in FIELDS})
    return edit


def _delete(contact: Contact):
    def delete(device: Device) -> str:
        device.state.contacts = [c for c in device.state.contacts if c is not contact]
        device.pop()
        return f"Deleted {contact.name}."
    return delete


def _edit(device: Device, page: Page) -> Screen:
    contact = page.args.get("contact")
    body = [up_button()] + [text_field(key, hint, f"contact_{key}") for key, hint in FIELDS]
    body.append(button("Save", _save, "save"))
    return Screen("Edit contact" if contact else "New contact", body)


def _save(device: Device) -> str:
    page = device.page
    values = {key: page.form.get(key, "").strip() for key, _ in FIELDS}
    if not values["first"] and not values["last"]:
        raise DeviceError("the contact needs a first or last name before it can be saved")
    contact = page.args.get("contact")
    if contact is None:
        if len(device.state.contacts) >= MAX_CONTACTS:
            raise DeviceError(f"the phone holds at most {MAX_CONTACTS} contacts")
        contact = Contact(**values)
        device.state.contacts.append(contact)
        back(device)
        device.push("details", contact=contact)
    else:
        for key, value in values.items():
            setattr(contact, key, value)
        back(device)
    return f"Saved {contact.name}."


APP = ContactsApp()
