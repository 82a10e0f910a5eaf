"""The Markor, Pro Expense and Tasks apps on a real simulated device, driven through their screens: dialogs
cancel, invalid input changes nothing, lists scroll, and each app's semantics (save, move, delete, complete)."""

from __future__ import annotations

import copy
import datetime

import pytest

from rlfactory_tool_servers.android.phone.actions import perform
from rlfactory_tool_servers.android.phone.apps import default_apps
from rlfactory_tool_servers.android.phone.apps.notes import MAX_NOTES
from rlfactory_tool_servers.android.phone.device import Device, DeviceError
from rlfactory_tool_servers.android.phone.plans import Target
from rlfactory_tool_servers.android.phone.state import DEVICE_NOW, Expense, Note, PhoneState, Task
from rlfactory_tool_servers.android.phone.ui import parse_t3a


def phone(**state) -> Device:
    return Device(default_apps(), PhoneState(**state))


def find(device: Device, **target) -> dict | None:
    return Target(**target).find(parse_t3a(device.screen_text()))


def index(device: Device, **target) -> int:
    found = find(device, **target)
    assert found is not None, (target, device.screen_text())
    return found["index"]


def act(device: Device, action_type: str, **arguments) -> str:
    return perform(device, action_type, arguments)


def tap(device: Device, **target) -> str:
    return act(device, "click", index=index(device, **target))


def type_into(device: Device, text: str, clear: bool = False, **target) -> str:
    return act(device, "input_text", index=index(device, **target), text=text, clear_text=clear)


def unchanged_after_error(device: Device, action_type: str, **arguments) -> None:
    before = (copy.deepcopy(device.state), device.screen_text())
    with pytest.raises(DeviceError):
        perform(device, action_type, arguments)
    assert (device.state, device.screen_text()) == before


def minutes_ago(minutes: int) -> datetime.datetime:
    return DEVICE_NOW - datetime.timedelta(minutes=minutes)


# -- Markor --------------------------------------------------------------------------------------------------

def test_markor_lists_folders_first_then_notes_newest_first_and_sorts_by_name():
    device = phone(notes=[Note("b.md", "", "", minutes_ago(50)), Note("a.md", "", "", minutes_ago(10)),
                          Note("c.md", "", "Work")], note_folders=["Work"])
    act(device, "open_app", app_name="Notes")
    names = [e["text"] for e in parse_t3a(device.screen_text()) if e.get("text") in ("Work", "a.md", "b.md")]
    assert names == ["Work", "a.md", "b.md"]
    assert find(device, text="c.md") is None
    tap(device, desc="Sort by name")
    names = [e["text"] for e in parse_t3a(device.screen_text()) if e.get("text") in ("a.md", "b.md")]
    assert names == ["a.md", "b.md"] and find(device, desc="Sort by date")


def test_markor_creates_a_note_and_saves_only_on_save():
    device = phone(notes=[Note("old.md", "kept", "")])
    act(device, "open_app", app_name="Markor")
    tap(device, desc="Create new file")
    unchanged_after_error(device, "click", index=index(device, text="OK"))  # no name typed
    type_into(device, "old.md", rid="new_file_name")
    unchanged_after_error(device, "click", index=index(device, text="OK"))  # the name is taken
    type_into(device, "new.md", clear=True, rid="new_file_name")
    tap(device, text="OK")
    assert device.page.route == "editor" and find(device, text="new.md", rid="toolbar_title")
    type_into(device, "hello", rid="note_content")
    tap(device, desc="Save")
    assert [n.content.strip() for n in device.state.notes if n.name == "new.md"] == ["hello"]
    type_into(device, "unsaved", rid="note_content")
    act(device, "navigate_back")  # the keyboard
    act(device, "navigate_back")  # the editor, unsaved
    assert [n.content.strip() for n in device.state.notes if n.name == "new.md"] == ["hello"]


def test_markor_name_dialog_cancels_and_folders_open_and_hold_new_notes():
    device = phone()
    act(device, "open_app", app_name="Markor")
    tap(device, desc="Create folder")
    tap(device, text="Cancel")
    assert device.state.note_folders == [] and device.page.dialog is None
    tap(device, desc="Create folder")
    type_into(device, "Trips", rid="new_folder_name")
    tap(device, text="OK")
    tap(device, text="Trips", rid="folder_name")
    assert find(device, text="This folder is empty")
    tap(device, desc="Create new file")
    type_into(device, "plan.md", rid="new_file_name")
    tap(device, text="OK")
    assert device.state.notes[0].folder == "Trips"
    tap(device, desc="Navigate up")
    tap(device, desc="Navigate up")
    assert find(device, text="Markor", rid="toolbar_title") and find(device, text="Trips", rid="folder_name")


def test_markor_long_press_deletes_behind_a_confirmation_and_moves():
    device = phone(notes=[Note("a.md", "x", ""), Note("b.md", "y", "")], note_folders=["Work"])
    act(device, "open_app", app_name="Markor")
    act(device, "long_press", index=index(device, text="a.md"))
    tap(device, text="Delete", rid="file_action")
    tap(device, text="Cancel")
    assert len(device.state.notes) == 2
    act(device, "long_press", index=index(device, text="a.md"))
    tap(device, text="Delete", rid="file_action")
    tap(device, text="Delete")
    assert [n.name for n in device.state.notes] == ["b.md"]
    act(device, "long_press", index=index(device, text="b.md"))
    tap(device, text="Move")
    assert find(device, text="Notebook root") is None  # the note is already there
    tap(device, text="Work", rid="move_target")
    assert device.state.notes[0].folder == "Work" and device.state.notes[0].content == "y"
    unchanged_after_error(device, "long_press", index=index(device, text="Work"))  # folders have no menu


def test_markor_list_scrolls_to_its_end_and_notes_are_bounded():
    device = phone(notes=[Note(f"n{i:02}.md", "", "", minutes_ago(i)) for i in range(12)])
    act(device, "open_app", app_name="Markor")
    assert find(device, text="n11.md") is None and "Markor/notes_list" not in device.lists_seen_to_end
    act(device, "scroll", direction="down")
    assert find(device, text="n11.md") and "Markor/notes_list" in device.lists_seen_to_end
    device.state.notes = [Note(f"n{i}.md") for i in range(MAX_NOTES)]
    tap(device, desc="Create new file")
    type_into(device, "one_more.md", rid="new_file_name")
    unchanged_after_error(device, "click", index=index(device, text="OK"))


# -- Pro Expense ---------------------------------------------------------------------------------------------

def test_expense_form_checks_the_amount_and_saves_with_the_chosen_category():
    device = phone(expenses=[Expense("Rent", 900.0, "Housing", "", DEVICE_NOW.date() - datetime.timedelta(days=3))])
    act(device, "open_app", app_name="Arduia Pro Expense")
    tap(device, desc="Add expense")
    type_into(device, "Coffee", rid="expense_name_input")
    type_into(device, "twelve", rid="expense_amount_input")
    unchanged_after_error(device, "click", index=index(device, text="Save"))
    type_into(device, "12.5", clear=True, rid="expense_amount_input")
    tap(device, rid="category_button")
    act(device, "navigate_back")  # closes the category dialog, the form stays
    assert find(device, text="Others", rid="category_button") and device.form("name") == "Coffee"
    tap(device, rid="category_button")
    tap(device, text="Food", rid="category_option")
    tap(device, text="Save")
    assert device.state.expenses[-1] == Expense("Coffee", 12.5, "Food", "", DEVICE_NOW.date())
    rows = [e for e in parse_t3a(device.screen_text()) if (e.get("resource_name") or "").endswith("expense_name")]
    assert [r["text"] for r in rows] == ["Coffee", "Rent"]  # newest date first
    assert rows[0]["content_description"] == f"12.50 | Food | {DEVICE_NOW.date().isoformat()}"


def test_expense_deletes_from_a_long_press_or_the_details_page_behind_confirmations():
    twins = [Expense("Tea", 3.0), Expense("Tea", 3.0), Expense("Bus", 2.0)]
    device = phone(expenses=twins)
    act(device, "open_app", app_name="Expenses")
    act(device, "long_press", index=index(device, text="Tea"))
    tap(device, text="Cancel")
    assert len(device.state.expenses) == 3
    act(device, "long_press", index=index(device, text="Tea"))
    tap(device, text="Delete")
    assert [e.name for e in device.state.expenses] == ["Tea", "Bus"]  # one of the twins only
    tap(device, text="Bus")
    assert find(device, text="2.00", rid="detail_amount")
    tap(device, desc="Delete")
    tap(device, text="Delete")
    assert [e.name for e in device.state.expenses] == ["Tea"] and device.page.route == "main"


# -- Tasks ---------------------------------------------------------------------------------------------------

def tasks_phone() -> Device:
    today = DEVICE_NOW.date()
    device = phone(tasks=[Task("Later", today + datetime.timedelta(days=3)), Task("Soon", today, "high"),
                          Task("Someday", None, "low"), Task("Done", today, completed=True)])
    act(device, "open_app", app_name="To-do")
    return device


def titles(device: Device) -> list[str]:
    return [e["text"] for e in parse_t3a(device.screen_text())
            if (e.get("resource_name") or "").endswith(":id/task_title")]


def test_tasks_list_orders_by_due_date_and_checkboxes_complete_tasks():
    device = tasks_phone()
    assert titles(device) == ["Soon", "Later", "Someday", "Done"]
    assert find(device, text="Soon")["content_description"] == f"Due {DEVICE_NOW.date().isoformat()}, high priority"
    act(device, "click", index=index(device, desc="Later", rid="task_checkbox"))
    assert device.state.tasks[0].completed and titles(device)[-2:] in (["Done", "Later"], ["Later", "Done"])
    act(device, "click", index=index(device, desc="Done", rid="task_checkbox"))
    assert not device.state.tasks[3].completed


def test_tasks_search_matches_due_dates_and_sort_by_title():
    device = tasks_phone()
    type_into(device, DEVICE_NOW.date().isoformat(), rid="search_field")
    assert titles(device) == ["Soon", "Done"]
    type_into(device, "", clear=True, rid="search_field")
    tap(device, desc="Sort")
    tap(device, text="By title")
    assert titles(device) == ["Later", "Someday", "Soon", "Done"]


def test_tasks_details_check_the_date_and_save_the_priority():
    device = tasks_phone()
    tap(device, text="Later", rid="task_title")
    before = copy.deepcopy(device.state)
    type_into(device, "next week", clear=True, rid="task_due_input")
    unchanged_after_error(device, "click", index=index(device, text="Save"))
    type_into(device, "2023-10-30", clear=True, rid="task_due_input")
    tap(device, text="High priority")
    act(device, "navigate_back")  # the keyboard
    act(device, "navigate_back")  # the form, unsaved
    assert device.state.tasks == before.tasks
    tap(device, text="Later", rid="task_title")
    type_into(device, "2023-10-30", clear=True, rid="task_due_input")
    tap(device, text="High priority")
    tap(device, text="Save")
    assert device.state.tasks[0] == Task("Later", datetime.date(2023, 10, 30), "high")


def test_tasks_create_and_delete_behind_a_confirmation():
    device = tasks_phone()
    tap(device, desc="Create task")
    assert find(device, desc="Delete") is None
    unchanged_after_error(device, "click", index=index(device, text="Save"))  # no title
    type_into(device, "New one", rid="task_title_input")
    tap(device, text="Save")
    assert device.state.tasks[-1] == Task("New one")
    tap(device, text="New one", rid="task_title")
    tap(device, desc="Delete")
    tap(device, text="Cancel")
    tap(device, desc="Delete")
    tap(device, text="Delete")
    assert [t.title for t in device.state.tasks] == ["Later", "Soon", "Someday", "Done"]


def test_tasks_list_longer_than_a_screen_scrolls():
    device = phone(tasks=[Task(f"Task {i:02}", DEVICE_NOW.date() + datetime.timedelta(days=i)) for i in range(9)])
    act(device, "open_app", app_name="Tasks")
    assert titles(device) == [f"Task {i:02}" for i in range(4)]
    act(device, "swipe", direction="up")
    assert titles(device) == [f"Task {i:02}" for i in range(3, 7)] and "Tasks/task_list" not in device.lists_seen_to_end
    act(device, "scroll", direction="down")
    assert titles(device)[-1] == "Task 08" and "Tasks/task_list" in device.lists_seen_to_end
