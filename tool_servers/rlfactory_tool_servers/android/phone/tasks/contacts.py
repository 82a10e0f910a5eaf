"""Contacts tasks, after AndroidWorld's ContactsAddContact, plus deleting, editing, a look-up and an infeasible
deletion."""

from __future__ import annotations

import random
import re
from rlfactory_tool_servers.android.phone.plans import DONE, INFEASIBLE, Answer, Open, Tap, Target, Type
from rlfactory_tool_servers.android.phone.state import Contact, PhoneState
from rlfactory_tool_servers.android.phone.tasks.base import TaskTemplate
from rlfactory_tool_servers.android.phone.tasks.names import FIRST_NAMES, LAST_NAMES, phone_number


def _people(rng: random.Random, n: int, exclude: tuple[str, ...] = ()) -> list[Contact]:
    """``n`` contacts with distinct names, none of them named in ``exclude``."""
    out: list[Contact] = []
    names = {c for c in exclude}
    while len(out) < n:
        contact = Contact(rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES), phone_number(rng))
        if contact.name not in names:
            names.add(contact.name)
            out.append(contact)
    return out


def _digits(number: str) -> str:
    return "".join(ch for ch in number if ch.isdigit())


def _named(state: PhoneState, name: str) -> list[Contact]:
    return [c for c in state.contacts if c.name.casefold() == name.casefold()]


class ContactsAddContact(TaskTemplate):
    name = "ContactsAddContact"
    app = "Contacts"
    goal = "Create a new contact for {name}. Their number is {number}."

    def params(self, rng):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        return {"first": first, "last": last, "name": f"{first} {last}", "number": phone_number(rng)}

    def setup(self, state, params, rng):
        state.contacts = _people(rng, rng.randint(4, 12), exclude=(params["name"],))

    def plan(self, params):
        return [Open("Contacts"), Tap(Target(desc="Create new contact")),
                Type(Target(rid="contact_first"), params["first"]), Type(Target(rid="contact_last"), params["last"]),
                Type(Target(rid="contact_phone"), params["number"]), Tap(Target(text="Save")), DONE]

    def subgoals(self, device, initial, params):
        found = _named(device.state, params["name"])
        return {"contact exists": bool(found),
                "number saved": any(_digits(c.phone) == _digits(params["number"]) for c in found),
                "other contacts kept": _kept(device.state, initial, params["name"])}


class ContactsDeleteContact(TaskTemplate):
    name = "ContactsDeleteContact"
    app = "Contacts"
    goal = "Delete the contact {name} from my contacts."

    def params(self, rng):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        return {"name": f"{first} {last}", "first": first, "last": last}

    def setup(self, state, params, rng):
        target = Contact(params["first"], params["last"], phone_number(rng))
        others = _people(rng, rng.randint(8, 16), exclude=(params["name"],))
        state.contacts = others[: len(others) // 2] + [target] + others[len(others) // 2:]

    def plan(self, params):
        return [Open("Contacts"), Tap(Target(text=params["name"], rid="contact_name")), Tap(Target(desc="Delete")),
                Tap(Target(text="Delete")), DONE]

    def subgoals(self, device, initial, params):
        return {"contact deleted": not _named(device.state, params["name"]),
                "other contacts kept": _kept(device.state, initial, params["name"])}


def _kept(state: PhoneState, initial: PhoneState, name: str) -> bool:
    """Whether every contact of ``initial`` not named ``name`` is still there, unchanged."""
    return all(c in state.contacts for c in initial.contacts if c.name.casefold() != name.casefold())


class ContactsEditNumber(TaskTemplate):
    name = "ContactsEditNumber"
    app = "Contacts"
    goal = "Change the phone number of my contact {name} to {number}."

    def params(self, rng):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        return {"name": f"{first} {last}", "first": first, "last": last, "number": phone_number(rng)}

    def setup(self, state, params, rng):
        state.contacts = _people(rng, rng.randint(6, 14), exclude=(params["name"],))
        state.contacts.insert(rng.randrange(len(state.contacts) + 1),
                              Contact(params["first"], params["last"], phone_number(rng)))

    def plan(self, params):
        return [Open("Contacts"), Tap(Target(text=params["name"], rid="contact_name")), Tap(Target(desc="Edit")),
                Type(Target(rid="contact_phone"), params["number"], clear=True), Tap(Target(text="Save")), DONE]

    def subgoals(self, device, initial, params):
        found = _named(device.state, params["name"])
        return {"contact kept": len(found) == 1, "other contacts kept": _kept(device.state, initial, params["name"]),
                "new number saved": any(_digits(c.phone) == _digits(params["number"]) for c in found)}


class ContactsPhoneNumber(TaskTemplate):
    name = "ContactsPhoneNumber"
    app = "Contacts"
    kind = "answer"
    goal = "What is the phone number of my contact {name}? Answer with the number only."
    guarded = ("contacts",)

    def params(self, rng):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        return {"name": f"{first} {last}", "first": first, "last": last}

    def setup(self, state, params, rng):
        state.contacts = _people(rng, rng.randint(10, 20), exclude=(params["name"],))
        state.contacts.insert(rng.randrange(len(state.contacts) + 1),
                              Contact(params["first"], params["last"], phone_number(rng)))

    def plan(self, params):
        return [Open("Contacts"), Tap(Target(text=params["name"], rid="contact_name")),
                Answer(lambda elements: next(e["text"] for e in elements
                                             if (e.get("resource_name") or "").endswith(":id/contact_number")))]

    def expected_answer(self, state, params):
        return _named(state, params["name"])[0].phone

    def answer_matches(self, answer, expected):
        """The number, with or without its country code, and little else (no names or buttons around it)."""
        words = re.sub(r"[\d\s+().-]", "", answer)
        return len(words) <= 12 and _digits(answer) in (_digits(expected), _digits(expected)[1:])


class ContactsDeleteMissingContact(TaskTemplate):
    name = "ContactsDeleteMissingContact"
    app = "Contacts"
    kind = "infeasible"
    goal = "Delete the contact {name} from my contacts."
    guarded = ("contacts",)

    def params(self, rng):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        return {"name": f"{first} {last}"}

    def setup(self, state, params, rng):
        state.contacts = _people(rng, rng.randint(9, 16), exclude=(params["name"],))

    def plan(self, params):
        return [Open("Contacts"), Type(Target(rid="search_field"), params["name"]), INFEASIBLE]

    def evidence(self, device, initial, params):
        return {"looked for the contact": "Contacts/contacts_list" in device.lists_seen_to_end}


TEMPLATES = [ContactsAddContact(), ContactsDeleteContact(), ContactsEditNumber(), ContactsPhoneNumber(),
             ContactsDeleteMissingContact()]
