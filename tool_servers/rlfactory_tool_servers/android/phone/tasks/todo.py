"""Tasks-app tasks, after AndroidWorld's TasksDueOnDate and TasksHighPriorityTasks, plus completing a task.

Titles come in look-alike pairs (``Pay electricity bill`` / ``Pay water bill``) and hold no commas or "and", so a
comma-separated answer splits back into them. Distractors are due the day before or after, or carry another
priority. The app's database is not readable over ``adb shell`` without root, so no check here works on a real
device.
"""

from __future__ import annotations

import datetime
import random

from rlfactory_tool_servers.android.phone.plans import DONE, Answer, Open, Tap, Target, Type
from rlfactory_tool_servers.android.phone.state import DEVICE_NOW, PhoneState, Task
from rlfactory_tool_servers.android.phone.tasks.base import TaskTemplate, pick, titles_match

PAIRS = (("Pay electricity bill", "Pay water bill"), ("Renew passport", "Renew library card"),
         ("Call the plumber", "Call the dentist"), ("Book flight to Lisbon", "Book hotel in Lisbon"),
         ("Submit expense report", "Submit tax return"), ("Buy birthday gift", "Buy groceries"),
         ("Water the plants", "Repot the plants"), ("Prepare slides for review", "Prepare agenda for review"),
         ("Return library books", "Return rental skis"), ("Schedule car service", "Schedule haircut"),
         ("Clean the garage", "Clean the fridge"), ("Update resume", "Update phone software"),
         ("Send invoice to client", "Send thank-you notes"), ("Cancel gym trial", "Cancel magazine subscription"),
         ("Fix leaking tap", "Fix bike brakes"), ("Plan weekend hike", "Plan team lunch"),
         ("Order printer ink", "Order new headphones"), ("Email the landlord", "Email the accountant"),
         ("Wash the car", "Wash the curtains"), ("Pick up dry cleaning", "Pick up prescription"),
         ("Charge the camera", "Charge the scooter"), ("Read chapter four", "Read the lease"),
         ("Back up laptop", "Back up phone photos"), ("Mow the lawn", "Rake the leaves"),
         ("Sort old receipts", "Sort winter clothes"), ("Visit grandma", "Visit the museum"),
         ("Defrost the freezer", "Descale the kettle"), ("Replace smoke alarm battery", "Replace wiper blades"),
         ("Pay parking ticket", "Pay credit card bill"), ("Book dentist checkup", "Book vet appointment"),
         ("Write birthday card", "Write project summary"), ("Check tyre pressure", "Check bank statement"))
"""64 titles: a question whose answer is one task ("due on this day") has no answer a guess gets right often."""
TITLES = tuple(title for pair in PAIRS for title in pair)
NOTES = ("", "", "before noon", "ask for a receipt", "check the email thread", "takes about an hour")
APP_NAME = "Tasks"
ANSWER_FORMAT = ("Answer with the titles only. If there are multiples titles, format your answer in a comma separated "
                 "list.")


def _spoken(date: datetime.date) -> str:
    """``October 22, 2023``."""
    return f"{date:%B} {date.day}, {date.year}"


def _task(rng: random.Random, title: str, due: datetime.date | None, priority: str | None = None,
          completed: bool = False) -> Task:
    return Task(title, due, priority or rng.choice(("low", "normal", "normal")), completed, rng.choice(NOTES))


def _some_day(rng: random.Random, avoid: datetime.date | None = None) -> datetime.date | None:
    """A due date within three weeks of today (sometimes none), never ``avoid``."""
    while True:
        due = DEVICE_NOW.date() + datetime.timedelta(days=rng.randint(-5, 16)) if rng.random() < 0.85 else None
        if due is None or due != avoid:
            return due


def _titles_on_screen(elements, keep=lambda element: True) -> str:
    return ", ".join(e["text"] for e in elements
                     if (e.get("resource_name") or "").endswith(":id/task_title") and keep(e))


def _titles(state: PhoneState, wanted) -> str:
    return ", ".join(t.title for t in state.tasks if wanted(t))


class TasksDueOnDate(TaskTemplate):
    name = "TasksDueOnDate"
    app = APP_NAME
    kind = "answer"
    goal = "What tasks do I have due on {date} in Tasks app? " + ANSWER_FORMAT
    guarded = ("tasks",)

    def params(self, rng):
        due = DEVICE_NOW.date() + datetime.timedelta(days=rng.randint(-2, 12))
        return {"date": _spoken(due), "due": due.isoformat(), "count": rng.randint(1, 3)}

    def setup(self, state, params, rng):
        due = datetime.date.fromisoformat(params["due"])
        titles = pick(rng, TITLES, rng.randint(10, 15) + params["count"])
        targets = [_task(rng, title, due) for title in titles[:params["count"]]]
        near = [_task(rng, title, due + datetime.timedelta(days=rng.choice((-1, 1))))
                for title in titles[params["count"]:params["count"] + 3]]
        rest = [_task(rng, title, _some_day(rng, due), completed=rng.random() < 0.2)
                for title in titles[params["count"] + 3:]]
        state.tasks = targets + near + rest
        rng.shuffle(state.tasks)

    def plan(self, params):
        return [Open(APP_NAME), Type(Target(rid="search_field"), params["due"]), Answer(_titles_on_screen)]

    def expected_answer(self, state, params):
        due = datetime.date.fromisoformat(params["due"])
        return _titles(state, lambda t: t.due == due and not t.completed)

    def answer_matches(self, answer, expected):
        return titles_match(answer, expected)


class TasksHighPriorityTasks(TaskTemplate):
    name = "TasksHighPriorityTasks"
    app = APP_NAME
    kind = "answer"
    goal = "What are my high priority tasks in Tasks app? " + ANSWER_FORMAT
    guarded = ("tasks",)

    def params(self, rng):
        return {"count": rng.randint(2, 3)}

    def setup(self, state, params, rng):
        titles = pick(rng, TITLES, rng.randint(10, 15) + params["count"])
        high = [_task(rng, title, _some_day(rng), "high") for title in titles[:params["count"]]]
        rest = [_task(rng, title, _some_day(rng), completed=rng.random() < 0.2) for title in titles[params["count"]:]]
        state.tasks = high + rest
        rng.shuffle(state.tasks)

    def plan(self, params):
        def high(element) -> bool:
            return (element.get("content_description") or "").endswith("high priority")
        return [Open(APP_NAME), Tap(Target(desc="Sort")), Tap(Target(text="By priority")),
                Answer(lambda elements: _titles_on_screen(elements, high))]

    def expected_answer(self, state, params):
        return _titles(state, lambda t: t.priority == "high" and not t.completed)

    def answer_matches(self, answer, expected):
        return titles_match(answer, expected)


class TasksCompleteTask(TaskTemplate):
    name = "TasksCompleteTask"
    app = APP_NAME
    goal = "Mark the task \"{title}\" as completed in the Tasks app."

    def params(self, rng):
        pair = rng.choice(PAIRS)
        return {"title": pair[0] if rng.random() < 0.5 else pair[1]}

    def setup(self, state, params, rng):
        title = params["title"]
        partner = next(t for pair in PAIRS if title in pair for t in pair if t != title)
        others = pick(rng, [t for t in TITLES if t not in (title, partner)], rng.randint(7, 13))
        state.tasks = ([_task(rng, title, _some_day(rng)), _task(rng, partner, _some_day(rng))]
                       + [_task(rng, t, _some_day(rng), completed=rng.random() < 0.2) for t in others])
        rng.shuffle(state.tasks)

    def plan(self, params):
        return [Open(APP_NAME), Tap(Target(desc=params["title"], rid="task_checkbox")), DONE]

    def subgoals(self, device, initial, params):
        tasks = device.state.tasks
        return {"task completed": any(t.title == params["title"] and t.completed for t in tasks),
                "other tasks unchanged": all(t in tasks for t in initial.tasks if t.title != params["title"]),
                "no task added": len(tasks) == len(initial.tasks)}


TEMPLATES = [TasksDueOnDate(), TasksHighPriorityTasks(), TasksCompleteTask()]
