"""The phone's data: what the apps show and change and what the success checks read. Plain dataclasses, copied
with ``copy.deepcopy`` (a task's setup is applied to a fresh ``PhoneState``)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

DEVICE_NOW = datetime.datetime(2023, 10, 15, 15, 34)
"""The simulated phone's clock at the start of every episode (AndroidWorld pins its emulator's date to
October 15, 2023)."""


@dataclass
class Contact:
    first: str
    last: str = ""
    phone: str = ""
    email: str = ""

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}".strip()


@dataclass
class Message:
    number: str
    text: str
    sent: bool  # True: sent by the phone's owner; False: received
    time: datetime.datetime
    read: bool = True


@dataclass
class Alarm:
    hour: int
    minute: int
    label: str = ""
    enabled: bool = True


@dataclass
class Timer:
    hours: int
    minutes: int
    seconds: int
    running: bool = False


@dataclass
class Stopwatch:
    running: bool = False
    elapsed_s: float = 0.0
    laps: list[float] = field(default_factory=list)


@dataclass
class Event:
    title: str
    start: datetime.datetime
    duration_min: int = 60
    location: str = ""
    description: str = ""


@dataclass
class Settings:
    wifi: bool = True
    bluetooth: bool = False
    airplane_mode: bool = False
    brightness: int = 128  # 0..255
    dark_theme: bool = False


@dataclass
class Note:
    name: str  # a file name, e.g. "groceries.md"
    content: str = ""
    folder: str = ""  # "" is the notebook's root
    modified: datetime.datetime = DEVICE_NOW


@dataclass
class Expense:
    name: str
    amount: float
    category: str = "Others"
    note: str = ""
    date: datetime.date = DEVICE_NOW.date()


@dataclass
class Task:
    title: str
    due: datetime.date | None = None
    priority: str = "normal"  # "low", "normal" or "high"
    completed: bool = False
    notes: str = ""


@dataclass
class PhoneState:
    """Everything on the phone. ``now`` advances a little with every action."""

    now: datetime.datetime = DEVICE_NOW
    contacts: list[Contact] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    alarms: list[Alarm] = field(default_factory=list)
    timers: list[Timer] = field(default_factory=list)
    stopwatch: Stopwatch = field(default_factory=Stopwatch)
    events: list[Event] = field(default_factory=list)
    settings: Settings = field(default_factory=Settings)
    notes: list[Note] = field(default_factory=list)
    note_folders: list[str] = field(default_factory=list)
    expenses: list[Expense] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)
    clipboard: str = ""
