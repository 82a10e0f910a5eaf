"""Expenses (after Arduia Pro Expense): the list of expenses, a form to add one, its details, and deletion.

Routes: ``main`` (the list, newest date first, among a date the latest added first), ``add`` (the form),
``details`` (``expense``).

- A row shows the expense's name as its text and ``amount | category | date`` as its content description.
- The form takes a name, an amount (digits with at most two decimals), a category chosen in a dialog (``Others``
  until one is chosen) and a note; ``Save`` checks them and adds the expense dated today.
- An expense is deleted from its details page (``Delete``) or by a long press on its row, both behind a
  confirmation. The phone holds at most ``MAX_EXPENSES`` expenses.
"""

from __future__ import annotations

import re

from rlfactory_tool_servers.android.phone.apps.widgets import (
    back, button, confirm, icon_button, label, row, text_field, up_button)
from rlfactory_tool_servers.android.phone.device import Device, DeviceError, Dialog, ListBlock, Page, Screen
from rlfactory_tool_servers.android.phone.state import Expense

ORDER = 70
MAX_EXPENSES = 300
MAX_NAME_CHARS = 60
CATEGORIES = ("Food", "Transportation", "Housing", "Utilities", "Health", "Entertainment", "Social", "Clothing",
              "Education", "Others")
DEFAULT_CATEGORY = "Others"
_AMOUNT = re.compile(r"\d{1,7}(\.\d{1,2})?")


class ExpensesApp:
    name = "Pro Expense"
    package = "com.arduia.expense"
    aliases = ("Expense", "Arduia Pro Expense", "Expenses")

    def render(self, device: Device, page: Page) -> Screen:
        if page.route == "add":
            return _form(device, page)
        if page.route == "details":
            return _details(device, page)
        return _list(device, page)


def summary(expense: Expense) -> str:
    """What a row shows besides the name: ``12.50 | Food | 2023-10-15``."""
    return f"{expense.amount:.2f} | {expense.category} | {expense.date.isoformat()}"


def _list(device: Device, page: Page) -> Screen:
    expense: Expense | None = page.dialog_args.get("expense")
    if page.dialog == "delete" and expense is not None:
        return Screen("Pro Expense", dialog=_delete_dialog(expense))
    dated = sorted(enumerate(device.state.expenses), key=lambda pair: (pair[1].date, pair[0]), reverse=True)
    items = [row(e.name, _open(e), "expense_name", long_press=_ask_delete(e), description=summary(e))
             for _, e in dated]
    return Screen("Pro Expense", [ListBlock("expense_list", items, empty_text="No expenses yet"),
                                  icon_button("Add expense", lambda d: d.push("add"), "fab")])


def _open(expense: Expense):
    def open_expense(device: Device) -> None:
        device.push("details", expense=expense)
    return open_expense


def _ask_delete(expense: Expense):
    def ask(device: Device) -> str:
        device.open_dialog("delete", expense=expense)
        return f"Asked whether to delete {expense.name}."
    return ask


def _delete_dialog(expense: Expense) -> Dialog:
    return confirm("Delete expense", f"Delete {expense.name} ({summary(expense)})?", "Delete", _delete(expense))


def _delete(expense: Expense):
    def delete(device: Device) -> str:
        device.state.expenses = [e for e in device.state.expenses if e is not expense]
        if device.page.route == "details":
            back(device)
        return f"Deleted {expense.name}."
    return delete


def _details(device: Device, page: Page) -> Screen:
    expense: Expense = page.args["expense"]
    if page.dialog == "delete":
        return Screen("Expense", dialog=_delete_dialog(expense))
    body = [up_button(), label(expense.name, "detail_name"),
            label(f"{expense.amount:.2f}", "detail_amount", description="Amount"),
            label(expense.category, "detail_category", description="Category"),
            label(expense.date.isoformat(), "detail_date", description="Date")]
    if expense.note:
        body.append(label(expense.note, "detail_note", description="Note"))
    body.append(icon_button("Delete", lambda d: d.open_dialog("delete"), "delete"))
    return Screen("Expense", body)


def _form(device: Device, page: Page) -> Screen:
    if page.dialog == "category":
        choices = [row(c, _choose(c), "category_option", selected=c == _category(device)) for c in CATEGORIES]
        return Screen("Add expense", dialog=Dialog("Choose category", choices))
    return Screen("Add expense", [
        up_button(), text_field("name", "Name", "expense_name_input"),
        text_field("amount", "Amount", "expense_amount_input"),
        button(_category(device), lambda d: d.open_dialog("category"), "category_button", description="Category"),
        text_field("note", "Note", "expense_note_input"), button("Save", _save, "save"),
    ])


def _category(device: Device) -> str:
    return device.form("category", DEFAULT_CATEGORY)


def _choose(category: str):
    def choose(device: Device) -> str:
        device.page.form["category"] = category
        device.close_dialog()
        return f"Chose the category {category}."
    return choose


def _save(device: Device) -> str:
    name = device.form("name").strip()
    amount = device.form("amount").strip()
    if not name or len(name) > MAX_NAME_CHARS:
        raise DeviceError(f"the expense needs a name of 1 to {MAX_NAME_CHARS} characters")
    if not _AMOUNT.fullmatch(amount):
        raise DeviceError(f"the amount must be a number like 12.50 (digits, at most two decimals), not {amount!r}")
    state = device.state
    if len(state.expenses) >= MAX_EXPENSES:
        raise DeviceError(f"the app holds at most {MAX_EXPENSES} expenses; delete one first")
    expense = Expense(name, float(amount), _category(device), device.form("note").strip(), state.now.date())
    state.expenses.append(expense)
    back(device)
    return f"Saved {name}."


APP = ExpensesApp()
