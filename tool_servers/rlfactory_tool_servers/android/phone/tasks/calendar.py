"""Simple Calendar Pro tasks, after AndroidWorld's SimpleCalendarAddOneEvent, SimpleCalendarDeleteOneEvent,
SimpleCalendarEventsOnDate, SimpleCalendarLocationOfEvent and SimpleCalendarNextEvent, plus deleting an event that
is not on the day the goal names (infeasible).

The calendar holds 8 to 20 events from two days ago to two weeks ahead (the agenda scrolls); distractors
are other events on the target's day and the target's title on another day."""

from __future__ import annotations

import datetime
import random
from collections.abc import Sequence

from rlfactory_tool_servers.android.phone.apps.calendar import APP_NAME, day_text
from rlfactory_tool_servers.android.phone.plans import DONE, INFEASIBLE, Answer, Open, Tap, Target, Type
from rlfactory_tool_servers.android.phone.state import DEVICE_NOW, Event, PhoneState
from rlfactory_tool_servers.android.phone.tasks.base import TaskTemplate, normalize, pick, titles_match

PERSONAL_TITLES = ("Dentist appointment", "Yoga class", "Lunch with Sam", "Book club", "Piano lesson", "Car service",
                   "Parent-teacher meeting", "Gym session", "Coffee with Lena", "Flight to Berlin", "Haircut",
                   "Doctor checkup", "Movie night", "Volunteer shift", "Birthday dinner", "Guitar practice",
                   "Tax consultation", "Board game night", "Vet visit", "Swim lesson", "Interview prep",
                   "Farmers market")
WORK_TOPICS = ("Team", "Project", "Budget", "Design", "Client", "Sprint", "Quarterly", "Roadmap", "Hiring", "Vendor",
               "Marketing", "Security", "Product", "Sales", "Onboarding", "Research")
WORK_KINDS = ("standup", "review", "meeting", "workshop", "planning", "call", "retrospective", "demo", "sync",
              "check-in")
TITLES = PERSONAL_TITLES + tuple(f"{topic} {kind}" for topic in WORK_TOPICS for kind in WORK_KINDS)
"""182 titles: a question whose answer is a title ("my next event") has no answer that a guess gets right often."""
PLACE_NAMES = ("Oak Street", "Riverside", "Lincoln", "Harbor", "Sunset", "Maple", "Cedar", "Hillcrest", "Lakeview",
               "Central", "Willow", "Granite", "Elm Park", "Northgate", "Bayview", "Kingsley")
PLACE_KINDS = ("Library", "Clinic", "Cafe", "Park", "Station", "Gym", "Town Hall", "Garage", "Elementary", "Pool",
               "Studio", "Community Center")
LOCATIONS = tuple(f"{name} {kind}" for name in PLACE_NAMES for kind in PLACE_KINDS)
"""192 places, for the same reason ("where is my event")."""
DESCRIPTIONS = ("Bring the laptop", "Discuss the roadmap", "Remember the receipts", "Prepare questions",
                "Ask about the schedule", "Take the printed agenda", "Confirm the booking the day before")
DURATIONS = (15, 30, 45, 60, 90, 120)
FIRST_DAY, LAST_DAY = -2, 14
DAYS = tuple(range(FIRST_DAY, LAST_DAY + 1))
"""The days, relative to today, that setups fill."""
HOURS = range(8, 21)
TODAY = DEVICE_NOW.date()


def event_at(title: str, day: datetime.date, hour: int, minute: int, rng: random.Random) -> Event:
    return Event(title, datetime.datetime.combine(day, datetime.time(hour, minute)), rng.choice(DURATIONS),
                 rng.choice(LOCATIONS), rng.choice(DESCRIPTIONS) if rng.random() < 0.5 else "")


def add_events(state: PhoneState, rng: random.Random, n: int, days: Sequence[int] = DAYS,
               exclude: tuple[str, ...] = (), hours: Sequence[int] = HOURS) -> None:
    """``n`` events with titles not yet on the calendar (nor in ``exclude``) at free ``hours`` of ``days`` (offsets
    from today)."""
    taken = {e.title for e in state.events} | set(exclude)
    busy = {e.start.replace(minute=0) for e in state.events}
    for title in pick(rng, [t for t in TITLES if t not in taken], n):
        while True:
            day = TODAY + datetime.timedelta(days=rng.choice(days))
            event = event_at(title, day, rng.choice(hours), rng.choice((0, 30)), rng)
            if event.start.replace(minute=0) not in busy:
                break
        busy.add(event.start.replace(minute=0))
        state.events.append(event)


def date_params(day: datetime.date) -> dict[str, str]:
    return {"date": day.isoformat(), "year": f"{day.year}", "month": f"{day.month:02d}", "day": f"{day.day:02d}"}


def relative_date(day: datetime.date) -> str:
    """How a goal names ``day``: ``today``, ``tomorrow`` or ``on October 18, 2023``."""
    offset = (day - TODAY).days
    return {0: "today", 1: "tomorrow"}.get(offset, f"on {day:%B} {day.day}, {day.year}")


def row_titles(elements: list[dict]) -> list[str]:
    """The titles of the event rows on screen (``10:00 Title``)."""
    return [e["text"].split(" ", 1)[1] for e in elements if (e.get("resource_name") or "").endswith(":id/event_item")]


def read_rid(rid: str):
    """A plan's reader: the text of the element with the resource id ``rid``."""
    return lambda elements: next(e["text"] for e in elements if (e.get("resource_name") or "").endswith(f":id/{rid}"))


def others_kept(state: PhoneState, initial: PhoneState, but: Event | None = None) -> bool:
    return all(e in state.events for e in initial.events if e != but)


class SimpleCalendarAddOneEvent(TaskTemplate):
    name = "SimpleCalendarAddOneEvent"
    app = APP_NAME
    goal = ("In Simple Calendar Pro, create a calendar event on {year}-{month}-{day} at {hour}h with the title "
            "'{title}' and the description '{description}'. The event should last for {duration} mins.")

    def params(self, rng):
        day = TODAY + datetime.timedelta(days=rng.randint(1, 20))
        return {**date_params(day), "hour": rng.choice(HOURS), "title": rng.choice(TITLES),
                "description": rng.choice(DESCRIPTIONS), "duration": rng.choice(DURATIONS)}

    def setup(self, state, params, rng):
        add_events(state, rng, rng.randint(8, 14), exclude=(params["title"],))

    def plan(self, params):
        return [Open(APP_NAME), Tap(Target(desc="New event")), Type(Target(rid="event_title_input"), params["title"]),
                Type(Target(rid="event_date_input"), params["date"], clear=True),
                Type(Target(rid="event_start_input"), f"{params['hour']:02d}:00", clear=True),
                Type(Target(rid="event_duration_input"), str(params["duration"]), clear=True),
                Type(Target(rid="event_description_input"), params["description"]), Tap(Target(text="Save")), DONE]

    def subgoals(self, device, initial, params):
        start = datetime.datetime.fromisoformat(params["date"]).replace(hour=params["hour"])
        new = [e for e in device.state.events if e not in initial.events]
        titled = [e for e in new if normalize(e.title) == normalize(params["title"])]
        return {"event created": bool(titled), "one event added": len(new) == 1,
                "date and time": any(e.start == start for e in titled),
                "duration": any(e.duration_min == params["duration"] for e in titled),
                "description": any(normalize(e.description) == normalize(params["description"]) for e in titled),
                "other events kept": others_kept(device.state, initial)}


class SimpleCalendarDeleteOneEvent(TaskTemplate):
    name = "SimpleCalendarDeleteOneEvent"
    app = APP_NAME
    goal = ("In Simple Calendar Pro, delete the calendar event on {year}-{month}-{day} at {hour}h with the title "
            "'{title}'")

    def params(self, rng):
        day = TODAY + datetime.timedelta(days=rng.randint(FIRST_DAY, LAST_DAY))
        return {**date_params(day), "hour": rng.choice(HOURS), "title": rng.choice(TITLES)}

    def setup(self, state, params, rng):
        day = datetime.date.fromisoformat(params["date"])
        state.events.append(event_at(params["title"], day, params["hour"], 0, rng))
        add_events(state, rng, rng.randint(2, 4), days=[(day - TODAY).days])
        add_events(state, rng, rng.randint(8, 12), days=[d for d in DAYS if d != (day - TODAY).days])
        other_day = day + datetime.timedelta(days=rng.choice((-1, 1, 7)))
        state.events.append(event_at(params["title"], other_day, params["hour"], 0, rng))

    def plan(self, params):
        day = datetime.date.fromisoformat(params["date"])
        return [Open(APP_NAME), Tap(Target(text=day_text(day), rid="day_header")),
                Tap(Target(text=f"{params['hour']:02d}:00 {params['title']}", rid="event_item")),
                Tap(Target(desc="Delete")), Tap(Target(text="Delete")), DONE]

    def subgoals(self, device, initial, params):
        target = _the_event(initial, params)
        return {"event deleted": target not in device.state.events,
                "other events kept": others_kept(device.state, initial, but=target)}


def _the_event(state: PhoneState, params: dict) -> Event:
    start = datetime.datetime.fromisoformat(params["date"]).replace(hour=params["hour"])
    return next(e for e in state.events if e.title == params["title"] and e.start == start)


class SimpleCalendarEventsOnDate(TaskTemplate):
    name = "SimpleCalendarEventsOnDate"
    app = APP_NAME
    kind = "answer"
    goal = ("What events do I have {when} in Simple Calendar Pro? Answer with the titles only. If there are "
            "multiple titles, format your answer as a comma separated list.")
    guarded = ("events",)

    def params(self, rng):
        day = TODAY + datetime.timedelta(days=rng.randint(0, 10))
        return {**date_params(day), "when": relative_date(day), "count": rng.randint(1, 4)}

    def setup(self, state, params, rng):
        offset = (datetime.date.fromisoformat(params["date"]) - TODAY).days
        add_events(state, rng, params["count"], days=[offset])
        add_events(state, rng, 2, days=[offset - 1, offset + 1])
        add_events(state, rng, rng.randint(6, 10), days=[d for d in DAYS if d != offset])

    def plan(self, params):
        day = datetime.date.fromisoformat(params["date"])
        return [Open(APP_NAME), Tap(Target(text=day_text(day), rid="day_header")),
                Answer(lambda elements: ", ".join(row_titles(elements)))]

    def expected_answer(self, state, params):
        day = datetime.date.fromisoformat(params["date"])
        return ", ".join(e.title for e in state.events if e.start.date() == day)

    def answer_matches(self, answer, expected):
        return titles_match(answer, expected)


class SimpleCalendarLocationOfEvent(TaskTemplate):
    name = "SimpleCalendarLocationOfEvent"
    app = APP_NAME
    kind = "answer"
    goal = "What is the location of my {title} event in Simple Calendar Pro? Answer with the location only."
    guarded = ("events",)

    def params(self, rng):
        day = TODAY + datetime.timedelta(days=rng.randint(FIRST_DAY, LAST_DAY))
        return {**date_params(day), "title": rng.choice(TITLES), "hour": rng.choice(HOURS)}

    def setup(self, state, params, rng):
        day = datetime.date.fromisoformat(params["date"])
        state.events.append(event_at(params["title"], day, params["hour"], 0, rng))
        add_events(state, rng, rng.randint(10, 16))

    def plan(self, params):
        return [Open(APP_NAME), Tap(Target(text=f"{params['hour']:02d}:00 {params['title']}", rid="event_item")),
                Answer(read_rid("event_location"))]

    def expected_answer(self, state, params):
        return next(e.location for e in state.events if e.title == params["title"])


class SimpleCalendarNextEvent(TaskTemplate):
    name = "SimpleCalendarNextEvent"
    app = APP_NAME
    kind = "answer"
    goal = ("What is my next upcoming event in Simple Calendar Pro? Answer with the title only. If there are "
            "multiples titles, format your answer in a comma separated list.")
    guarded = ("events",)

    def params(self, rng):
        offset = rng.choice((0, 0, 1, 2))
        hour = rng.randint(DEVICE_NOW.hour + 1, 20) if offset == 0 else rng.choice(HOURS)
        return {**date_params(TODAY + datetime.timedelta(days=offset)), "hour": hour, "title": rng.choice(TITLES)}

    def setup(self, state, params, rng):
        day = datetime.date.fromisoformat(params["date"])
        state.events.append(event_at(params["title"], day, params["hour"], 0, rng))
        # earlier today: over by 14:00, before the clock's 15:34
        for title, hour in zip(pick(rng, [t for t in TITLES if t != params["title"]], 2), pick(rng, range(8, 13), 2)):
            state.events.append(Event(title, DEVICE_NOW.replace(hour=hour, minute=0), 60, rng.choice(LOCATIONS)))
        if params["hour"] < HOURS[-1]:
            later = rng.randint(params["hour"] + 1, HOURS[-1])
            add_events(state, rng, 1, days=[(day - TODAY).days], hours=range(later, later + 1))
        add_events(state, rng, rng.randint(6, 10), days=range(FIRST_DAY, 0))
        add_events(state, rng, rng.randint(3, 6), days=range((day - TODAY).days + 1, LAST_DAY + 1))

    def plan(self, params):
        day = datetime.date.fromisoformat(params["date"])
        return [Open(APP_NAME), Tap(Target(text=day_text(day), rid="day_header")),
                Answer(lambda elements: next(e["text"].split(" ", 1)[1] for e in elements
                                             if (e.get("resource_name") or "").endswith(":id/event_item")
                                             and e["text"] >= f"{params['hour']:02d}:00"))]

    def expected_answer(self, state, params):
        return min((e for e in state.events if e.start > state.now), key=lambda e: e.start).title


class SimpleCalendarDeleteMissingEvent(TaskTemplate):
    name = "SimpleCalendarDeleteMissingEvent"
    app = APP_NAME
    kind = "infeasible"
    goal = SimpleCalendarDeleteOneEvent.goal
    guarded = ("events",)

    def params(self, rng):
        day = TODAY + datetime.timedelta(days=rng.randint(0, LAST_DAY - 2))
        return {**date_params(day), "hour": rng.choice(HOURS), "title": rng.choice(TITLES)}

    def setup(self, state, params, rng):
        day = datetime.date.fromisoformat(params["date"])
        offset = (day - TODAY).days
        other_day = day + datetime.timedelta(days=rng.choice((-1, 1, 2)))
        state.events.append(event_at(params["title"], other_day, params["hour"], 0, rng))
        add_events(state, rng, rng.randint(2, 4), days=[offset])
        add_events(state, rng, rng.randint(10, 14), days=[d for d in DAYS if d != offset])

    def plan(self, params):
        day = datetime.date.fromisoformat(params["date"])
        return [Open(APP_NAME), Tap(Target(text=day_text(day), rid="day_header")), INFEASIBLE]

    def evidence(self, device, initial, params):
        return {"looked at the day": f"{APP_NAME}/day/{params['date']}" in device.visited
                or f"{APP_NAME}/agenda" in device.lists_seen_to_end}


TEMPLATES = [SimpleCalendarAddOneEvent(), SimpleCalendarDeleteOneEvent(), SimpleCalendarEventsOnDate(),
             SimpleCalendarLocationOfEvent(), SimpleCalendarNextEvent(), SimpleCalendarDeleteMissingEvent()]
