"""UI elements and the text forms of a screen.

An ``Element`` carries AndroidWorld's ``UIElement`` attributes (text, content description, class, resource id,
bounds and the clickable / long-clickable / editable / scrollable / checkable / checked / selected / focused
flags) plus, on the simulated device, what touching it does. A screen is shown to a text agent as

- ``t3a`` (default): T3A's numbered list, ``UI element 3: UIElement(text='Wi-Fi', class_name=..., ...)``, one line
  per element, listing the attributes that are set (``None`` text and false flags left out; ``is_checked``
  always shown for a checkable element);
- ``xml``: a compressed view in the spirit of AndroidLab's XML mode, one ``<node>`` per element with ``index``,
  ``text``, ``content-desc``, ``class``, ``resource-id``, ``bounds`` and the true flags, a list's items nested in
  its container node.

``parse_t3a`` reads the ``t3a`` form back (what the scripted policy and the tests do).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any
from xml.sax.saxutils import quoteattr

SCREEN_WIDTH = 1080
SCREEN_HEIGHT = 2400
OBSERVATIONS = ("t3a", "xml")


@dataclass(frozen=True, slots=True)
class Bounds:
    """An element's rectangle on the 1080 x 2400 screen, in pixels."""

    x_min: int
    y_min: int
    x_max: int
    y_max: int

    @property
    def center(self) -> tuple[int, int]:
        return (self.x_min + self.x_max) // 2, (self.y_min + self.y_max) // 2


Action = Callable[[Any], "str | None"]
"""What touching an element does: called with the device, returns an optional note for the agent."""


@dataclass(slots=True)
class Element:
    """One UI element. The ``on_*`` callables are the simulated device's behaviour and are never shown;
    ``field`` names the page's form value an editable element holds (``text`` is then that value)."""

    text: str | None = None
    content_description: str | None = None
    class_name: str = "android.widget.TextView"
    resource_id: str | None = None
    hint_text: str | None = None
    bounds: Bounds | None = None
    checkable: bool = False
    checked: bool = False
    clickable: bool = False
    long_clickable: bool = False
    editable: bool = False
    scrollable: bool = False
    selected: bool = False
    focused: bool = False
    enabled: bool = True
    package: str = ""
    on_click: Action | None = None
    on_long_press: Action | None = None
    field: str | None = None
    multiline: bool = False
    on_enter: Action | None = None
    list_id: str | None = None  # a scrollable container: the list it scrolls
    parent: int | None = None  # the index of the container the element sits in (a list's items)

    @property
    def resource_name(self) -> str | None:
        """The full resource name, ``package:id/name``, as uiautomator reports it."""
        if self.resource_id is None:
            return None
        return self.resource_id if ":id/" in self.resource_id else f"{self.package}:id/{self.resource_id}"


_FLAGS = ("checkable", "checked", "clickable", "editable", "enabled", "focused", "long_clickable", "scrollable",
          "selected")


def shown_flags(element: Element) -> list[tuple[str, bool]]:
    """The flags a screen text shows, ``(attribute, value)``: those that are true, ``enabled`` only when false
    (the rule, not the exception), and ``checked`` of a checkable element either way."""
    shown = []
    for attribute in _FLAGS:
        value = getattr(element, attribute)
        if (not value) if attribute == "enabled" else (value or (attribute == "checked" and element.checkable)):
            shown.append((attribute, value))
    return shown


def describe_t3a(index: int, element: Element) -> str:
    """One line of T3A's list: ``UI element {index}: UIElement(...)`` with the attributes that are set."""
    parts = []
    for name, value in (("text", element.text), ("content_description", element.content_description),
                        ("hint_text", element.hint_text), ("class_name", element.class_name),
                        ("resource_name", element.resource_name)):
        if value is not None:
            parts.append(f"{name}={value!r}")
    if element.bounds is not None:
        b = element.bounds
        parts.append(f"bbox_pixels=BoundingBox(x_min={b.x_min}, x_max={b.x_max}, y_min={b.y_min}, y_max={b.y_max})")
    parts += [f"is_{attribute}={value}" for attribute, value in shown_flags(element)]
    return f"UI element {index}: UIElement({', '.join(parts)})"


def describe_xml(index: int, element: Element, children: str = "") -> str:
    """One ``<node ...>`` of the compressed XML view, holding ``children`` (self-closed without)."""
    attributes = [f'index="{index}"']
    for name, value in (("text", element.text), ("content-desc", element.content_description),
                        ("hint", element.hint_text), ("class", element.class_name),
                        ("resource-id", element.resource_name)):
        if value:
            attributes.append(f"{name}={quoteattr(value)}")
    if element.bounds is not None:
        b = element.bounds
        attributes.append(f'bounds="[{b.x_min},{b.y_min}][{b.x_max},{b.y_max}]"')
    attributes += [f'{attribute.replace("_", "-")}="{str(value).lower()}"' for attribute, value in shown_flags(element)]
    if children:
        return f"<node {' '.join(attributes)}>\n{children}\n</node>"
    return f"<node {' '.join(attributes)}/>"


def render_elements(elements: Sequence[Element], observation: str = "t3a") -> str:
    """The screen's elements in the chosen text form."""
    if observation == "xml":
        inside: dict[int, list[int]] = {}
        for i, element in enumerate(elements):
            if element.parent is not None:
                inside.setdefault(element.parent, []).append(i)

        def node(i: int) -> str:
            return describe_xml(i, elements[i], "\n".join(node(child) for child in inside.get(i, ())))

        top = (node(i) for i, element in enumerate(elements) if element.parent is None)
        return "<hierarchy>\n" + "\n".join(top) + "\n</hierarchy>"
    return "\n".join([T3A_LINES.line(i, e) for i, e in enumerate(elements)])


class T3ALines:
    """``describe_t3a``'s lines by what they show, shared by every phone of the process: most lines of a screen
    (a launcher icon, a settings row, a list item in its place) are the same on every phone and turn that shows
    it. Bounded in characters: a line longer than ``max_line_chars`` is not kept, and the cache empties once the
    lines it holds reach ``max_chars`` (each line's key holds no more than the line shows)."""

    def __init__(self, max_chars: int = 2_000_000, max_line_chars: int = 1_000):
        self.max_chars = max_chars
        self.max_line_chars = max_line_chars
        self.chars = 0
        self._lines: dict[tuple[Any, ...], str] = {}

    def line(self, index: int, element: Element) -> str:
        """``describe_t3a(index, element)``, made once per distinct line."""
        bounds = element.bounds
        key = (index, _shown(element), None if bounds is None else _corners(bounds))
        line = self._lines.get(key)
        if line is None:
            line = describe_t3a(index, element)
            self._keep(key, line)
        return line

    def _keep(self, key: tuple[Any, ...], line: str) -> None:
        if len(line) > self.max_line_chars:
            return
        if self.chars + len(line) > self.max_chars:
            self._lines.clear()
            self.chars = 0
        self._lines[key] = line
        self.chars += len(line)


_shown = attrgetter("text", "content_description", "hint_text", "class_name", "resource_id", "package", *_FLAGS)
"""What of an element a t3a line shows, besides its index and bounds."""
_corners = attrgetter("x_min", "y_min", "x_max", "y_max")
"""A ``Bounds`` as a tuple, which hashes in C (the dataclass's ``__hash__`` is Python)."""
T3A_LINES = T3ALines()


_LINE = re.compile(r"^UI element (\d+): UIElement\((.*)\)$")
_FIELD = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|BoundingBox\([^)]*\)|True|False|None)")


def parse_t3a(text: str) -> list[dict[str, Any]]:
    """The elements of a ``t3a`` screen text, as dicts (``index``, ``text``, ``resource_name``, ``is_clickable``
    ...); lines that are not elements are skipped."""
    elements = []
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if not match:
            continue
        element: dict[str, Any] = {"index": int(match.group(1))}
        for name, raw in _FIELD.findall(match.group(2)):
            if raw.startswith("BoundingBox"):
                numbers = dict(re.findall(r"(\w+)=(-?\d+)", raw))
                element[name] = {key: int(value) for key, value in numbers.items()}
            else:
                element[name] = ast.literal_eval(raw)
        elements.append(element)
    return elements
