"""The simulated phone: a back stack of app pages over a ``PhoneState``, and AndroidWorld's actions on it.

Every action either changes the phone and returns a short note, or raises ``DeviceError`` and changes nothing
(an index that is not on the screen, typing into an element that is not a text field, an unknown app). Pages are
rendered from the state on demand (``elements``), so what the agent reads is always the state's truth; the
rendered elements are kept until the next action.

Semantics, after Android and AndroidWorld's actuation:
- ``input_text(index, text, clear_text)`` focuses the field, types (appending unless ``clear_text``) and presses
  Enter; Enter in a one-line field runs its action (a search, the next field), in a multi-line one adds a line.
- ``navigate_back`` first hides the keyboard when a field has focus, then closes a dialog, then leaves the page;
  on the home screen it does nothing. ``navigate_home`` leaves every app.
- ``scroll(direction)`` moves a list by a page less one item (``down``: later items); ``swipe`` moves the content
  the other way (swipe up = scroll down). Lists record when their last item has been on screen.
- ``open_app(app_name)`` matches app names and aliases case-insensitively and starts the app afresh.
- Each action moves the phone's clock 2 seconds (``wait``: 5), so a running stopwatch runs.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rlfactory_tool_servers.android.phone.state import PhoneState
from rlfactory_tool_servers.android.phone.ui import SCREEN_HEIGHT, SCREEN_WIDTH, Bounds, Element, render_elements

MAX_FIELD_CHARS = 2000
"""The most characters a text field holds; longer input is cut with a note."""
MAX_STACK = 32
"""The deepest back stack: a page opened past it replaces the top one."""
ROW_HEIGHT = 132
TOP = 80  # below the status bar
DIRECTIONS = ("up", "down", "left", "right")
_SECONDS = {2: datetime.timedelta(seconds=2), 5: datetime.timedelta(seconds=5)}
"""The clock's steps of an action and of ``wait``, made once."""


class DeviceError(Exception):
    """An action that cannot be done on this screen; the phone did not change."""


@dataclass
class ListBlock:
    """A scrollable list: ``items`` shown ``page_size`` at a time below a scrollable container element."""

    list_id: str
    items: list[Element]
    page_size: int = 7
    empty_text: str | None = None
    description: str | None = None


@dataclass
class Dialog:
    """A modal window over the page: its title, message and elements (buttons, fields, choices)."""

    title: str
    elements: list[Element]
    message: str | None = None


@dataclass
class Screen:
    """What an app shows for a page: a title and a body of elements and lists; a dialog covers it all."""

    title: str
    body: list[Element | ListBlock] = field(default_factory=list)
    dialog: Dialog | None = None


@dataclass
class Page:
    """One entry of the back stack: an app's route and arguments, its form values, scroll offsets and focus."""

    app: str
    route: str
    args: dict[str, Any] = field(default_factory=dict)
    form: dict[str, str] = field(default_factory=dict)
    scroll: dict[str, int] = field(default_factory=dict)
    focus: str | None = None
    dialog: str | None = None  # the name of the open dialog, rendered by the app
    dialog_args: dict[str, Any] = field(default_factory=dict)


class App(Protocol):
    """An app: its display name, package, the names ``open_app`` also accepts, and its screens."""

    name: str
    package: str
    aliases: tuple[str, ...]

    def render(self, device: Device, page: Page) -> Screen: ...


@dataclass
class Device:
    """One phone. ``apps`` maps a display name to its app; the first page is the launcher's home."""

    apps: Mapping[str, App]
    state: PhoneState = field(default_factory=PhoneState)
    stack: list[Page] = field(default_factory=list)
    visited: set[str] = field(default_factory=set)
    lists_seen_to_end: set[str] = field(default_factory=set)
    actions: int = 0
    ending: dict[str, Any] | None = None
    _elements: list[Element] | None = None
    _list_sizes: dict[str, tuple[int, int]] = field(default_factory=dict)  # of the lists on _elements' screen

    def __post_init__(self) -> None:
        if not self.stack:
            self.stack.append(Page("Launcher", "home"))
        self.visited.add(self.page_key)

    # -- navigation (what element actions call) ---------------------------------------------------------------

    @property
    def page(self) -> Page:
        return self.stack[-1]

    @property
    def page_key(self) -> str:
        return f"{self.page.app}/{self.page.route}"

    def push(self, route: str, app: str | None = None, **args: Any) -> None:
        """Open ``route`` of ``app`` (default: the current app) on top of the stack."""
        page = Page(app or self.page.app, route, dict(args))
        if len(self.stack) >= MAX_STACK:
            self.stack[-1] = page
        else:
            self.stack.append(page)
        self.visited.add(self.page_key)

    def replace(self, route: str, **args: Any) -> None:
        """Replace the current page by ``route`` of the same app."""
        self.stack[-1] = Page(self.page.app, route, dict(args))
        self.visited.add(self.page_key)

    def pop(self) -> None:
        """Leave the current page (never the home screen)."""
        if len(self.stack) > 1:
            self.stack.pop()
            self.visited.add(self.page_key)

    def open_dialog(self, name: str, **args: Any) -> None:
        page = self.page
        page.dialog, page.dialog_args, page.focus = name, dict(args), None
        self.visited.add(f"{self.page_key}#{name}")

    def close_dialog(self) -> None:
        page = self.page
        page.dialog, page.dialog_args, page.focus = None, {}, None

    def form(self, key: str, default: str = "") -> str:
        """The current page's value of the form field ``key``."""
        return self.page.form.get(key, default)

    # -- the screen --------------------------------------------------------------------------------------------

    def app(self, name: str | None = None) -> App:
        return self.apps[name or self.page.app]

    def elements(self) -> list[Element]:
        """The elements on screen now, laid out, in index order."""
        if self._elements is None:
            page = self.page
            app = self.app()
            screen = app.render(self, page)
            self._list_sizes = {block.list_id: (len(block.items), block.page_size) for block in screen.body
                                if isinstance(block, ListBlock)}
            self._elements = _layout(screen, page, app.package, self.lists_seen_to_end)
        return self._elements

    def screen_text(self, observation: str = "t3a") -> str:
        return render_elements(self.elements(), observation)

    def element(self, index: Any) -> Element:
        elements = self.elements()
        return elements[parse_index(index, len(elements))]

    # -- the actions -------------------------------------------------------------------------------------------

    def _acted(self, seconds: int = 2) -> None:
        self.actions += 1
        self._elements = None
        self.state.now += _SECONDS[seconds] if seconds in _SECONDS else datetime.timedelta(seconds=seconds)
        stopwatch = self.state.stopwatch
        if stopwatch.running:
            stopwatch.elapsed_s += seconds

    def _touch(self, index: Any, kind: str) -> str:
        element = self.element(index)
        label = element_label(element)
        if not element.enabled:
            raise DeviceError(f"UI element {index} ({label}) is disabled")
        if kind == "long_press":
            action = element.on_long_press
            if action is None:
                raise DeviceError(f"UI element {index} ({label}) does nothing on a long press")
        elif element.editable:
            self.page.focus = element.field
            self._acted()
            return f"Focused the text field {label}; the keyboard is open."
        else:
            action = element.on_click
            if action is None:
                raise DeviceError(f"UI element {index} ({label}) is not clickable")
        note = action(self)
        self._acted()
        return note or f"Tapped UI element {index} ({label})."

    def click(self, index: Any) -> str:
        return self._touch(index, "click")

    def double_tap(self, index: Any) -> str:
        return self._touch(index, "click")

    def long_press(self, index: Any) -> str:
        return self._touch(index, "long_press")

    def input_text(self, index: Any, text: str, clear_text: bool = False) -> str:
        element = self.element(index)
        if not element.editable or element.field is None:
            raise DeviceError(f"UI element {index} ({element_label(element)}) is not a text field; input_text needs "
                              "one whose is_editable is True")
        text = str(text)
        page = self.page
        value = text if clear_text else page.form.get(element.field, "") + text
        note = ""
        if len(value) > MAX_FIELD_CHARS:
            note = f" The field holds at most {MAX_FIELD_CHARS} characters; the rest was cut."
            value = value[:MAX_FIELD_CHARS]
        before = page.focus, dict(page.form)
        page.focus = element.field
        page.form[element.field] = value
        try:
            entered = self._enter(element)
        except DeviceError:  # Enter refused what was typed: the phone is left as it was
            page.focus, page.form = before
            raise
        self._acted()
        return f"Typed {len(text)} characters into {element_label(element)}.{note}" + (f" {entered}" if entered else "")

    def _enter(self, element: Element) -> str | None:
        if element.multiline:
            page = self.page
            value = page.form.get(element.field or "", "")
            if len(value) < MAX_FIELD_CHARS:
                page.form[element.field or ""] = value + "\n"
            return None
        if element.on_enter is not None:
            return element.on_enter(self)
        return None

    def keyboard_enter(self) -> str:
        focus = self.page.focus
        focused = next((e for e in self.elements() if e.editable and e.field == focus), None) if focus else None
        if focused is None:
            self._acted()
            return "Pressed Enter; no text field has focus, so nothing happened."
        note = self._enter(focused)
        self._acted()
        return note or "Pressed Enter."

    def scroll(self, direction: str, index: Any = None) -> str:
        direction = parse_direction(direction)
        if index is None or index == "":
            container = next((e for e in self.elements() if e.scrollable and e.list_id), None)
            if container is None:
                self._acted()
                return "Scrolled; nothing on this screen scrolls, so nothing moved."
        else:
            container = self.element(index)
            if not container.scrollable or container.list_id is None:
                raise DeviceError(f"UI element {index} ({element_label(container)}) is not scrollable")
        return self._scroll_list(container.list_id, direction)

    def swipe(self, direction: str) -> str:
        opposite = {"up": "down", "down": "up", "left": "right", "right": "left"}[parse_direction(direction)]
        return self.scroll(opposite)

    def _scroll_list(self, list_id: str, direction: str) -> str:
        self.elements()
        size, page_size = self._list_sizes.get(list_id, (0, 1))
        page = self.page
        offset = page.scroll.get(list_id, 0)
        if direction in ("left", "right"):
            self._acted()
            return f"Scrolled {direction}; this list scrolls up and down, so nothing moved."
        step = max(1, page_size - 1)
        new = offset + step if direction == "down" else offset - step
        new = max(0, min(new, max(0, size - page_size)))
        page.scroll[list_id] = new
        self._acted()
        if new == offset:
            return f"Scrolled {direction}; the list is already at its {'end' if direction == 'down' else 'top'}."
        return f"Scrolled {direction}."

    def navigate_back(self) -> str:
        page = self.page
        if page.focus is not None:
            page.focus = None
            note = "Closed the keyboard."
        elif page.dialog is not None:
            self.close_dialog()
            note = "Closed the dialog."
        elif len(self.stack) > 1:
            self.pop()
            note = "Went back."
        else:
            note = "Already on the home screen; nothing happened."
        self._acted()
        return note

    def navigate_home(self) -> str:
        del self.stack[1:]
        self.page.focus = None
        self.visited.add(self.page_key)
        self._acted()
        return "Went to the home screen."

    def start_app(self, name: str) -> str:
        """Open the app ``name`` (a display name) afresh over the home screen, as its launcher icon does."""
        del self.stack[1:]
        self.stack[0].focus = None
        self.push("main", app=name)
        return f"Opened {name}."

    def open_app(self, app_name: str) -> str:
        note = self.start_app(find_app(self.apps, app_name))
        self._acted()
        return note

    def wait(self) -> str:
        self._acted(5)
        return "Waited 5 seconds."


def find_app(apps: Mapping[str, App], app_name: Any) -> str:
    """The display name of the app ``app_name`` names (its name or an alias, any case); ``DeviceError`` if none."""
    wanted = " ".join(str(app_name).split()).casefold()
    for name, app in apps.items():
        if name == "Launcher":
            continue
        if wanted == name.casefold() or wanted in (alias.casefold() for alias in app.aliases):
            return name
    installed = ", ".join(name for name in apps if name != "Launcher")
    raise DeviceError(f"no app named {str(app_name)[:60]!r} is installed; the apps are: {installed}")


def parse_index(index: Any, count: int) -> int:
    """``index`` as the position of one of ``count`` elements on screen; ``DeviceError`` naming the range."""
    if isinstance(index, bool) or not isinstance(index, int):
        try:
            index = int(str(index).strip())
        except ValueError:
            raise DeviceError(f"index must be a whole number, got {str(index)[:40]!r}") from None
    if not 0 <= index < count:
        raise DeviceError(f"there is no UI element {index} on this screen (indexes 0 to {count - 1})")
    return index


def parse_direction(direction: Any) -> str:
    """``direction`` as one of up, down, left, right; ``DeviceError`` otherwise."""
    value = str(direction).strip().lower()
    if value not in DIRECTIONS:
        raise DeviceError(f"direction must be one of up, down, left, right; got {str(direction)[:20]!r}")
    return value


def element_label(element: Element) -> str:
    """How a note names an element: its text (or description, hint, id), cut to 40 characters."""
    text = element.text or element.content_description or element.hint_text or element.resource_id or ""
    text = text if len(text) <= 40 else text[:37] + "..."
    return repr(text) if text else element.class_name.rsplit(".", 1)[-1]


@functools.lru_cache(maxsize=1024)
def row_bounds(y: int, height: int) -> Bounds:
    """The bounds of a full-width row ``height`` pixels tall from ``y`` down, cut at the screen's bottom: one
    shared (frozen) object per row, as a screen's rows fall on a few positions."""
    return Bounds(0, y, SCREEN_WIDTH, min(y + height, SCREEN_HEIGHT))


def _layout(screen: Screen, page: Page, package: str, seen_to_end: set[str]) -> list[Element]:
    """The screen as a flat list of elements with bounds: the title, then the body, a list as its container
    followed by the items in view; a dialog replaces the body."""
    out: list[Element] = []
    y = TOP

    def place(element: Element, height: int = ROW_HEIGHT) -> None:
        nonlocal y
        element.bounds = row_bounds(y, height)
        element.package = element.package or package
        if element.editable and element.field is not None:
            element.text = page.form.get(element.field, element.text or "") or None
            element.focused = page.focus == element.field
        out.append(element)
        y += height

    if screen.dialog is not None:
        dialog = screen.dialog
        place(Element(text=dialog.title, class_name="android.widget.TextView", resource_id="android:id/alertTitle"))
        if dialog.message:
            place(Element(text=dialog.message, class_name="android.widget.TextView", resource_id="android:id/message"))
        for element in dialog.elements:
            place(element)
        return out
    place(Element(text=screen.title, class_name="android.widget.TextView", resource_id="toolbar_title"))
    for block in screen.body:
        if isinstance(block, Element):
            place(block)
            continue
        offset = min(page.scroll.get(block.list_id, 0), max(0, len(block.items) - block.page_size))
        shown = block.items[offset:offset + block.page_size]
        container = Element(content_description=block.description,
                            class_name="androidx.recyclerview.widget.RecyclerView", resource_id=block.list_id,
                            scrollable=len(block.items) > block.page_size, list_id=block.list_id)
        container.bounds = row_bounds(y, ROW_HEIGHT * max(1, len(shown)))
        container.package = package
        out.append(container)
        parent = len(out) - 1
        if not shown and block.empty_text:
            place(Element(text=block.empty_text, resource_id=f"{block.list_id}_empty"))
        for item in shown:
            item.parent = parent
            place(item)
        if offset + block.page_size >= len(block.items):
            seen_to_end.add(f"{page.app}/{block.list_id}")
    return out


def rows(items: Sequence[tuple[str, Callable[[Device], str | None] | None]], resource_id: str) -> list[Element]:
    """Clickable text rows (``text``, action) with one resource id: a menu or a list's items."""
    return [Element(text=text, resource_id=resource_id, clickable=action is not None, on_click=action)
            for text, action in items]
