"""Tasks (after org.tasks): the task list with a checkbox per task, a search, a sort, and a task's details form.

Routes: ``main`` (the list), ``details`` (``task``, or none for a new one).

- Each task takes two rows of the list: a checkbox (content description: the title; ticking it completes the task,
  unticking reopens it) and the title (content description: ``Due YYYY-MM-DD`` or ``No due date``, then ``high
  priority`` / ``low priority`` when not normal); tapping the title opens the details.
- Open tasks come first, then completed ones; within each, the sort chosen in the ``Sort`` dialog (due date, the
  default, with undated tasks last; priority, high first; or title).
- The search keeps the tasks whose title contains the text, or whose due date (``YYYY-MM-DD``) does.
- The details form edits the title, the due date (``YYYY-MM-DD``, empty for none), the priority (Low / Normal /
  High) and notes; ``Save`` checks and stores them, ``Delete`` removes the task behind a confirmation. The phone
  holds at most ``MAX_TASKS`` tasks.
"""

from __future__ import annotations

import datetime
import re

from rlfactory_tool_servers.android.phone.apps.widgets import (
    back, button, confirm, icon_button, row, text_field, up_button)
from rlfactory_tool_servers.android.phone.device import Device, DeviceError, Dialog, ListBlock, Page, Screen
from rlfactory_tool_servers.android.phone.state import Task
from rlfactory_tool_servers.android.phone.ui import Element

ORDER = 80
MAX_TASKS = 300
MAX_TITLE_CHARS = 80
PRIORITIES = ("low", "normal", "high")
SORTS = {"due": "By due date", "priority": "By priority", "title": "By title"}
SORT_KEYS = {
    "due": lambda t: (t.completed, t.due or datetime.date.max, t.title.casefold()),
    "priority": lambda t: (t.completed, -PRIORITIES.index(t.priority), t.due or datetime.date.max, t.title.casefold()),
    "title": lambda t: (t.completed, t.title.casefold()),
}
"""Open tasks first, then completed ones; within each, the chosen order."""
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class TasksApp:
    name = "Tasks"
    package = "org.tasks"
    aliases = ("Tasks app", "To-do")

    def render(self, device: Device, page: Page) -> Screen:
        if page.route == "details":
            return _details(device, page)
        return _list(device, page)


def description(task: Task) -> str:
    """The title row's content description: ``Due 2023-10-20, high priority``."""
    due = f"Due {task.due.isoformat()}" if task.due else "No due date"
    return due if task.priority == "normal" else f"{due}, {task.priority} priority"


# -- the list ------------------------------------------------------------------------------------------------

def _list(device: Device, page: Page) -> Screen:
    if page.dialog == "sort":
        choices = [row(text, _sort_by(key), "sort_option", selected=key == device.form("sort", "due"))
                   for key, text in SORTS.items()]
        return Screen("Tasks", dialog=Dialog("Sort", choices))
    items: list[Element] = []
    for task in _shown(device):
        items += [_checkbox(task), row(task.title, _open(task), "task_title", description=description(task))]
    return Screen("Tasks", [
        text_field("search", "Search tasks", "search_field"),
        icon_button("Sort", lambda d: d.open_dialog("sort"), "sort"),
        ListBlock("task_list", items, page_size=8, empty_text="No tasks"),
        icon_button("Create task", lambda d: d.push("details"), "fab"),
    ])


def _shown(device: Device) -> list[Task]:
    query = device.form("search").strip().casefold()
    tasks = [t for t in device.state.tasks
             if not query or query in t.title.casefold() or (t.due is not None and query in t.due.isoformat())]
    return sorted(tasks, key=SORT_KEYS[device.form("sort", "due")])


def _checkbox(task: Task) -> Element:
    return Element(content_description=task.title, class_name="android.widget.CheckBox", resource_id="task_checkbox",
                   checkable=True, checked=task.completed, clickable=True, on_click=_toggle(task))


def _toggle(task: Task):
    def toggle(device: Device) -> str:
        task.completed = not task.completed
        return f"Marked {task.title} as {'completed' if task.completed else 'not completed'}."
    return toggle


def _sort_by(key: str):
    def sort(device: Device) -> str:
        device.page.form["sort"] = key
        device.close_dialog()
        return f"Sorted tasks {SORTS[key].lower()}."
    return sort


def _open(task: Task):
    def open_task(device: Device) -> None:
        device.push("details", task=task)
        device.page.form.update({"title": task.title, "due": task.due.isoformat() if task.due else "",
                                 "priority": task.priority, "notes": task.notes})
    return open_task


# -- the details form ----------------------------------------------------------------------------------------

def _details(device: Device, page: Page) -> Screen:
    task: Task | None = page.args.get("task")
    title = "Edit task" if task else "New task"
    if page.dialog == "delete" and task is not None:
        return Screen(title, dialog=confirm("Delete task", f"Delete {task.title}?", "Delete", _delete(task)))
    body: list = [up_button(), text_field("title", "Task title", "task_title_input"),
                  text_field("due", "Due date (YYYY-MM-DD)", "task_due_input")]
    body += [_priority_choice(device, priority) for priority in PRIORITIES]
    body += [text_field("notes", "Notes", "task_notes_input", multiline=True), button("Save", _save, "save")]
    if task is not None:
        body.append(icon_button("Delete", lambda d: d.open_dialog("delete"), "delete"))
    return Screen(title, body)


def _priority_choice(device: Device, priority: str) -> Element:
    def choose(device: Device) -> str:
        device.page.form["priority"] = priority
        return f"Priority set to {priority}."
    chosen = device.form("priority", "normal") == priority
    return Element(text=f"{priority.capitalize()} priority", class_name="android.widget.RadioButton",
                   resource_id=f"priority_{priority}", checkable=True, checked=chosen, clickable=True,
                   on_click=choose)


def _due_date(text: str) -> datetime.date | None:
    text = text.strip()
    if not text:
        return None
    date = None
    if _DATE.fullmatch(text):
        try:
            date = datetime.date.fromisoformat(text)
        except ValueError:
            pass
    if date is None:
        raise DeviceError(f"the due date must be a date written YYYY-MM-DD, like 2023-10-22 (or empty), not {text!r}")
    return date


def _save(device: Device) -> str:
    title = device.form("title").strip()
    if not title or len(title) > MAX_TITLE_CHARS:
        raise DeviceError(f"the task needs a title of 1 to {MAX_TITLE_CHARS} characters")
    due = _due_date(device.form("due"))
    values = {"title": title, "due": due, "priority": device.form("priority", "normal"),
              "notes": device.form("notes").strip()}
    task = device.page.args.get("task")
    state = device.state
    if task is None:
        if len(state.tasks) >= MAX_TASKS:
            raise DeviceError(f"the app holds at most {MAX_TASKS} tasks; delete one first")
        state.tasks.append(Task(**values))
    else:
        for key, value in values.items():
            setattr(task, key, value)
    back(device)
    return f"Saved {title}."


def _delete(task: Task):
    def delete(device: Device) -> str:
        device.state.tasks = [t for t in device.state.tasks if t is not task]
        back(device)
        return f"Deleted {task.title}."
    return delete


APP = TasksApp()
