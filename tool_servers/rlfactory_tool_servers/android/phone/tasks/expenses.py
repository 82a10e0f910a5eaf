"""Pro Expense tasks, after AndroidWorld's ExpenseAddSingle, ExpenseDeleteSingle and ExpenseDeleteDuplicates, plus
an infeasible deletion of an expense that is not there.

Expense names come in look-alike pairs (``Coffee`` / ``Coffee beans``); a target's partner sits in the list with
the same amount. Dates spread over a month, so a target sometimes sits below the first screen. The app's database
is not readable over ``adb shell`` without root, so no check here works on a real device.
"""

from __future__ import annotations

import datetime
import math
import random

from rlfactory_tool_servers.android.phone.apps.expenses import summary
from rlfactory_tool_servers.android.phone.plans import DONE, INFEASIBLE, LongPress, Open, Scroll, Tap, Target, Type
from rlfactory_tool_servers.android.phone.state import DEVICE_NOW, Expense, PhoneState
from rlfactory_tool_servers.android.phone.tasks.base import TaskTemplate, pick

PAIRS = ((("Coffee", "Coffee beans"), "Food"), (("Groceries", "Groceries delivery"), "Food"),
         (("Taxi ride", "Taxi to airport"), "Transportation"), (("Bus pass", "Bus ticket"), "Transportation"),
         (("Electricity bill", "Electricity deposit"), "Utilities"),
         (("Internet bill", "Internet router"), "Utilities"),
         (("Movie tickets", "Movie snacks"), "Entertainment"), (("Gym membership", "Gym towel"), "Health"),
         (("Birthday gift", "Birthday cake"), "Social"), (("Running shoes", "Running socks"), "Clothing"),
         (("Online course", "Online course books"), "Education"), (("Rent", "Rent insurance"), "Housing"),
         (("Pharmacy", "Pharmacy delivery"), "Health"), (("Concert", "Concert parking"), "Entertainment"))
NOTES = ("", "", "paid by card", "reimbursable", "split with Maya", "monthly", "cash")
APP_NAME = "Pro Expense"
PAGE = 7  # the list's page size


def _names() -> list[tuple[str, str]]:
    """Every (name, category) of the pool."""
    return [(name, category) for names, category in PAIRS for name in names]


def _partner(name: str) -> str:
    return next(pair[1 - pair.index(name)] for pair, _ in PAIRS if name in pair)


def _category(name: str) -> str:
    return next(category for pair, category in PAIRS if name in pair)


def _amount(rng: random.Random) -> float:
    return round(rng.uniform(3, 250), 2)


def _date(rng: random.Random) -> datetime.date:
    return DEVICE_NOW.date() - datetime.timedelta(days=rng.randrange(0, 30))


def _expense(rng: random.Random, name: str, amount: float | None = None) -> Expense:
    return Expense(name, _amount(rng) if amount is None else amount, _category(name), rng.choice(NOTES), _date(rng))


def _others(rng: random.Random, n: int, exclude: set[str]) -> list[Expense]:
    """``n`` expenses with distinct names from the pool, none named in ``exclude``."""
    names = [name for name, _ in _names() if name not in exclude]
    return [_expense(rng, name) for name in pick(rng, names, min(n, len(names)))]


def _shuffled(rng: random.Random, expenses: list[Expense]) -> list[Expense]:
    rng.shuffle(expenses)
    return expenses


def _kept(state: PhoneState, initial: PhoneState, name: str) -> bool:
    """Whether every expense of ``initial`` not named ``name`` is still there as often, unchanged."""
    return all(state.expenses.count(e) >= initial.expenses.count(e) for e in initial.expenses if e.name != name)


class ExpenseAddSingle(TaskTemplate):
    name = "ExpenseAddSingle"
    app = APP_NAME
    goal = "Add the following expenses into the arduia pro expense: {expense}"

    def params(self, rng):
        name, category = rng.choice(_names())
        amount, note = f"{_amount(rng):.2f}", rng.choice([n for n in NOTES if n])
        return {"name": name, "amount": amount, "category": category, "note": note,
                "expense": f"name: {name}, amount: {amount}, category: {category}, note: {note}"}

    def setup(self, state, params, rng):
        lookalike = _expense(rng, _partner(params["name"]), float(params["amount"]))
        state.expenses = _shuffled(rng, _others(rng, rng.randint(4, 10), {params["name"], lookalike.name})
                                   + [lookalike, _expense(rng, params["name"])])

    def plan(self, params):
        return [Open(APP_NAME), Tap(Target(desc="Add expense")), Type(Target(rid="expense_name_input"), params["name"]),
                Type(Target(rid="expense_amount_input"), params["amount"]), Tap(Target(rid="category_button")),
                Tap(Target(text=params["category"], rid="category_option")),
                Type(Target(rid="expense_note_input"), params["note"]), Tap(Target(text="Save")), DONE]

    def subgoals(self, device, initial, params):
        wanted = [e for e in device.state.expenses if e not in initial.expenses and e.name == params["name"]]
        return {"expense added": len(wanted) == 1 and len(device.state.expenses) == len(initial.expenses) + 1,
                "amount right": any(abs(e.amount - float(params["amount"])) < 0.005 for e in wanted),
                "category right": any(e.category == params["category"] for e in wanted),
                "note right": any(e.note == params["note"] for e in wanted),
                "other expenses kept": _kept(device.state, initial, "")}


class ExpenseDeleteSingle(TaskTemplate):
    name = "ExpenseDeleteSingle"
    app = APP_NAME
    goal = "Delete the following expenses from arduia pro expense: {name}."

    def params(self, rng):
        return {"name": rng.choice(_names())[0]}

    def setup(self, state, params, rng):
        target = _expense(rng, params["name"])
        lookalike = _expense(rng, _partner(params["name"]), target.amount)
        state.expenses = _shuffled(rng, _others(rng, rng.randint(6, 13), {target.name, lookalike.name})
                                   + [target, lookalike])

    def plan(self, params):
        return [Open(APP_NAME), LongPress(Target(text=params["name"], rid="expense_name")), Tap(Target(text="Delete")),
                DONE]

    def subgoals(self, device, initial, params):
        return {"expense deleted": all(e.name != params["name"] for e in device.state.expenses),
                "other expenses kept": _kept(device.state, initial, params["name"])}


class ExpenseDeleteDuplicates(TaskTemplate):
    name = "ExpenseDeleteDuplicates"
    app = APP_NAME
    goal = ("Delete all but one of any expenses in arduia pro expense that are exact duplicates, ensuring at least "
            "one instance of each unique expense remains.")

    def params(self, rng):
        name = rng.choice(_names())[0]
        return {"name": name, "amount": _amount(rng), "date": _date(rng).isoformat(), "copies": rng.randint(2, 3),
                "note": rng.choice(NOTES)}

    def _duplicate(self, params) -> Expense:
        return Expense(params["name"], params["amount"], _category(params["name"]), params["note"],
                       datetime.date.fromisoformat(params["date"]))

    def setup(self, state, params, rng):
        duplicate = self._duplicate(params)
        near = Expense(duplicate.name, duplicate.amount, duplicate.category, duplicate.note,
                       duplicate.date - datetime.timedelta(days=rng.randint(1, 6)))
        lookalike = _expense(rng, _partner(duplicate.name), duplicate.amount)
        copies = [self._duplicate(params) for _ in range(params["copies"])]
        state.expenses = _shuffled(rng, _others(rng, rng.randint(5, 10), {duplicate.name, lookalike.name})
                                   + copies + [near, lookalike])

    def plan(self, params):
        row = Target(text=params["name"], desc=summary(self._duplicate(params)), rid="expense_name")
        return [Open(APP_NAME)] + [LongPress(row), Tap(Target(text="Delete"))] * (params["copies"] - 1) + [DONE]

    def subgoals(self, device, initial, params):
        expenses = device.state.expenses
        return {"one of each expense kept": all(e in expenses for e in initial.expenses),
                "no exact duplicates left": all(expenses.count(e) == 1 for e in expenses),
                "nothing added": all(e in initial.expenses for e in expenses)}


class ExpenseDeleteMissingExpense(TaskTemplate):
    name = "ExpenseDeleteMissingExpense"
    app = APP_NAME
    kind = "infeasible"
    goal = "Delete the following expenses from arduia pro expense: {name}."
    guarded = ("expenses",)

    def params(self, rng):
        return {"name": rng.choice(_names())[0], "expenses": rng.randint(10, 16)}

    def setup(self, state, params, rng):
        lookalike = _expense(rng, _partner(params["name"]))
        state.expenses = _shuffled(rng, _others(rng, params["expenses"] - 1, {params["name"], lookalike.name})
                                   + [lookalike])

    def plan(self, params):
        scrolls = max(0, math.ceil((params["expenses"] - PAGE) / (PAGE - 1)))
        return [Open(APP_NAME), *[Scroll("down")] * scrolls, INFEASIBLE]

    def evidence(self, device, initial, params):
        return {"looked through the expenses": f"{APP_NAME}/expense_list" in device.lists_seen_to_end}


TEMPLATES = [ExpenseAddSingle(), ExpenseDeleteSingle(), ExpenseDeleteDuplicates(), ExpenseDeleteMissingExpense()]
