"""Simple SMS Messenger tasks, after AndroidWorld's SimpleSmsSend, SimpleSmsReply, SimpleSmsReplyMostRecent and
SimpleSmsResend, plus a question about the last message a contact sent.

Distractors: conversations with numbers one digit away from the target's, contacts sharing the target's first
name, and conversations whose last message is newer or says something similar."""

from __future__ import annotations

import datetime
import random

from rlfactory_tool_servers.android.phone.apps.sms import APP_NAME, same_number
from rlfactory_tool_servers.android.phone.plans import DONE, Answer, LongPress, Open, Tap, Target, Type
from rlfactory_tool_servers.android.phone.state import DEVICE_NOW, Contact, Message, PhoneState
from rlfactory_tool_servers.android.phone.tasks.base import TaskTemplate, pick
from rlfactory_tool_servers.android.phone.tasks.names import FIRST_NAMES, LAST_NAMES, WORDS, phone_number

CHAT_LINES = ("Are we still on for lunch tomorrow?", "I'll be there in 10 minutes", "Can you send me the address?",
              "Thanks for the help today!", "Did you see the game last night?", "Running a bit late, sorry",
              "Let's meet at the library", "Happy birthday!", "Don't forget the tickets",
              "Call me when you get a chance", "The package arrived this morning", "See you at the station at 6",
              "Can you pick up some milk?", "Great news about the job!", "What time does the movie start?",
              "I left my keys at your place", "The meeting moved to Thursday", "Good luck on your exam",
              "Dinner is at 7:30", "Sounds good to me", "How was the trip?", "Send me the photos please",
              "The plumber comes at noon", "Can we reschedule to Friday?")
GOAL_LINES = ("Meet me at the {word} cafe at {hour} pm", "The {word} report is ready for review at {hour}",
              "Bring the {word} tickets by {hour} tonight", "Let's talk about the {word} plan at {hour}",
              "I booked the {word} room for {hour} o'clock", "Pick up the {word} order before {hour}")
"""Every line names a word and an hour: 1,344 messages, so no guess at "the last message" is right often."""


def new_line(rng: random.Random) -> str:
    """A message that no setup line says: what the goals ask to send."""
    return rng.choice(GOAL_LINES).format(word=rng.choice(WORDS), hour=rng.randint(2, 9))


def similar_number(rng: random.Random, number: str) -> str:
    """``number`` with its last digit changed."""
    last = int(number[-1])
    return number[:-1] + str((last + rng.randint(1, 9)) % 10)


def chat(rng: random.Random, number: str, last_time: datetime.datetime, count: int,
         ending: tuple[tuple[bool, str], ...] = ()) -> list[Message]:
    """``count`` messages with ``number``, a few minutes apart, the newest at ``last_time``; the last ones are
    ``ending`` (``(sent, text)`` pairs), the rest random chat lines of either direction."""
    texts = pick(rng, [line for line in CHAT_LINES if line not in {text for _, text in ending}], count - len(ending))
    lines = [(rng.random() < 0.5, text) for text in texts] + list(ending)
    return [Message(number, text, sent, last_time - datetime.timedelta(minutes=7 * (count - 1 - i)))
            for i, (sent, text) in enumerate(lines)]


def conversation_times(rng: random.Random, n: int) -> list[datetime.datetime]:
    """``n`` distinct times before now, the newest first (one per conversation's last message)."""
    minutes = sorted(rng.sample(range(20, 4000), n))
    return [DEVICE_NOW - datetime.timedelta(minutes=m) for m in minutes]


def fill(state: PhoneState, rng: random.Random, times: list[datetime.datetime], avoid: tuple[str, ...]) -> None:
    """Conversations ending at ``times`` with new numbers (half of them new contacts), none of the numbers in
    ``avoid`` nor of the names already in the contacts."""
    for time in times:
        number = phone_number(rng)
        while any(same_number(number, other) for other in avoid):
            number = phone_number(rng)
        avoid += (number,)
        if rng.random() < 0.5:
            contact = Contact(rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES), number)
            if all(c.name != contact.name for c in state.contacts):
                state.contacts.append(contact)
        state.messages += chat(rng, number, time, rng.randint(1, 5))


def new_messages(state: PhoneState, initial: PhoneState) -> list[Message]:
    return [m for m in state.messages if m not in initial.messages]


def sent_only(state: PhoneState, initial: PhoneState, number: str, text: str) -> dict[str, bool]:
    """The sub-goals of sending ``text`` to ``number``: it was sent, once, nothing else was, nothing was lost."""
    new = new_messages(state, initial)
    wanted = [m for m in new if m.sent and same_number(m.number, number) and m.text.strip() == text]
    return {f"message sent to {number}": bool(wanted), "sent once": len(wanted) == 1,
            "nothing else sent": len(new) == len(wanted),
            "old messages kept": all(m in state.messages for m in initial.messages)}


def people_named_like(rng: random.Random, first: str, last: str, n: int) -> list[Contact]:
    """``n`` contacts sharing ``first`` as first name, none named ``first last``."""
    others = pick(rng, [name for name in LAST_NAMES if name != last], n)
    return [Contact(first, other, phone_number(rng)) for other in others]


class SimpleSmsSend(TaskTemplate):
    name = "SimpleSmsSend"
    app = APP_NAME
    goal = "Send a text message using Simple SMS Messenger to {number} with message: {message}"

    def params(self, rng):
        return {"number": phone_number(rng), "message": new_line(rng)}

    def setup(self, state, params, rng):
        times = conversation_times(rng, rng.randint(4, 10))
        close = similar_number(rng, params["number"])
        state.messages += chat(rng, close, times.pop(rng.randrange(len(times))), rng.randint(2, 5))
        fill(state, rng, times, (params["number"], close))

    def plan(self, params):
        return [Open(APP_NAME), Tap(Target(desc="Start a conversation")),
                Type(Target(rid="new_conversation_address"), params["number"]),
                Type(Target(rid="thread_type_message"), params["message"]), Tap(Target(text="Send")), DONE]

    def subgoals(self, device, initial, params):
        return sent_only(device.state, initial, params["number"], params["message"])


class SimpleSmsReply(TaskTemplate):
    name = "SimpleSmsReply"
    app = APP_NAME
    goal = "Reply to {number} with message: {message} in Simple SMS Messenger"

    def params(self, rng):
        return {"number": phone_number(rng), "message": new_line(rng)}

    def setup(self, state, params, rng):
        times = conversation_times(rng, rng.randint(6, 12))
        state.messages += chat(rng, params["number"], times.pop(rng.randrange(len(times))), rng.randint(2, 6),
                               ending=((False, rng.choice(CHAT_LINES)),))
        close = similar_number(rng, params["number"])
        state.messages += chat(rng, close, times.pop(rng.randrange(len(times))), rng.randint(1, 4))
        fill(state, rng, times, (params["number"], close))

    def plan(self, params):
        return [Open(APP_NAME), Tap(Target(text=params["number"], rid="conversation_address")),
                Type(Target(rid="thread_type_message"), params["message"]), Tap(Target(text="Send")), DONE]

    def subgoals(self, device, initial, params):
        return sent_only(device.state, initial, params["number"], params["message"])


class SimpleSmsReplyMostRecent(TaskTemplate):
    name = "SimpleSmsReplyMostRecent"
    app = APP_NAME
    goal = "Reply to the most recent text message using Simple SMS Messenger with message: {message}"

    def params(self, rng):
        is_contact = rng.random() < 0.5
        return {"number": phone_number(rng), "message": new_line(rng),
                "sender": f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}" if is_contact else ""}

    def setup(self, state, params, rng):
        times = conversation_times(rng, rng.randint(5, 10))
        if params["sender"]:
            first, last = params["sender"].split(" ")
            state.contacts.append(Contact(first, last, params["number"]))
        state.messages += chat(rng, params["number"], times[0], rng.randint(1, 5),
                               ending=((False, rng.choice(CHAT_LINES)),))
        fill(state, rng, times[1:], (params["number"],))
        # a number one digit away texted a minute earlier
        state.messages.append(Message(similar_number(rng, params["number"]), rng.choice(CHAT_LINES), False,
                                      times[0] - datetime.timedelta(minutes=1)))

    def plan(self, params):
        shown = params["sender"] or params["number"]
        return [Open(APP_NAME), Tap(Target(text=shown, rid="conversation_address")),
                Type(Target(rid="thread_type_message"), params["message"]), Tap(Target(text="Send")), DONE]

    def subgoals(self, device, initial, params):
        return sent_only(device.state, initial, params["number"], params["message"])


class SimpleSmsResend(TaskTemplate):
    name = "SimpleSmsResend"
    app = APP_NAME
    goal = "Resend the message I just sent to {name} in Simple SMS Messenger"

    def params(self, rng):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        return {"name": f"{first} {last}", "first": first, "last": last, "number": phone_number(rng),
                "text": new_line(rng)}

    def setup(self, state, params, rng):
        times = conversation_times(rng, rng.randint(5, 10))
        state.contacts.append(Contact(params["first"], params["last"], params["number"]))
        state.messages += chat(rng, params["number"], times.pop(rng.randrange(len(times))), rng.randint(3, 6),
                               ending=((True, new_line(rng)), (False, rng.choice(CHAT_LINES)),
                                       (True, params["text"])))
        for namesake in people_named_like(rng, params["first"], params["last"], 2):
            state.contacts.append(namesake)
            state.messages += chat(rng, namesake.phone, times.pop(rng.randrange(len(times))), rng.randint(2, 4),
                                   ending=((True, new_line(rng)),))
        fill(state, rng, times, tuple(c.phone for c in state.contacts))

    def plan(self, params):
        return [Open(APP_NAME), Tap(Target(text=params["name"], rid="conversation_address")),
                LongPress(Target(text=params["text"], rid="sent_message")), Tap(Target(text="Resend")), DONE]

    def subgoals(self, device, initial, params):
        return sent_only(device.state, initial, params["number"], params["text"])


class SimpleSmsLastMessageFrom(TaskTemplate):
    name = "SimpleSmsLastMessageFrom"
    app = APP_NAME
    kind = "answer"
    goal = "What was the last message {name} sent me in Simple SMS Messenger? Answer with the message text only."
    guarded = ("messages", "contacts")

    def params(self, rng):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        return {"name": f"{first} {last}", "first": first, "last": last}

    def setup(self, state, params, rng):
        times = conversation_times(rng, rng.randint(5, 10))
        number = phone_number(rng)
        state.contacts.append(Contact(params["first"], params["last"], number))
        replies = tuple((True, line) for line in pick(rng, CHAT_LINES, rng.randint(1, 2)))
        state.messages += chat(rng, number, times.pop(rng.randrange(len(times))), rng.randint(3, 7),
                               ending=((False, new_line(rng)),) + replies)
        namesake = people_named_like(rng, params["first"], params["last"], 1)[0]
        state.contacts.append(namesake)
        state.messages += chat(rng, namesake.phone, times.pop(rng.randrange(len(times))), rng.randint(2, 4),
                               ending=((False, new_line(rng)),))
        fill(state, rng, times, tuple(c.phone for c in state.contacts))

    def plan(self, params):
        return [Open(APP_NAME), Tap(Target(text=params["name"], rid="conversation_address")),
                Answer(lambda elements: [e for e in elements
                                         if (e.get("resource_name") or "").endswith(":id/received_message")][-1]
                       ["text"])]

    def expected_answer(self, state, params):
        number = next(c.phone for c in state.contacts if c.name == params["name"])
        received = [m for m in state.messages if not m.sent and same_number(m.number, number)]
        return max(received, key=lambda m: m.time).text


TEMPLATES = [SimpleSmsSend(), SimpleSmsReply(), SimpleSmsReplyMostRecent(), SimpleSmsResend(),
             SimpleSmsLastMessageFrom()]
