"""A ``uiautomator dump`` of a real screen, read into the ``ui.Element`` list the simulated phone shows.

The dump is a ``<hierarchy>`` of nested ``<node>`` elements (``text``, ``resource-id``, ``class``, ``package``,
``content-desc``, the ``checkable`` / ``checked`` / ``clickable`` / ``enabled`` / ``focused`` / ``scrollable`` /
``long-clickable`` / ``selected`` flags and ``bounds="[x1,y1][x2,y2]"``). The nodes are flattened in document
order and, after AndroidWorld's filtering idea, only those an agent can read or act on are kept: a node with text
or a content description, or one that is clickable, long-clickable, editable, scrollable or checkable. Layout-only
containers and zero-size (invisible) nodes are left out. ``EditText`` classes (and auto-complete fields) are the
editable ones. The dump may come with text around it (``exec-out uiautomator dump /dev/tty`` appends a line);
only the ``<hierarchy>`` is read.

Bounded: a dump over ``MAX_DUMP_CHARS`` is refused, at most ``MAX_ELEMENTS`` elements are kept and every text is
cut at ``MAX_TEXT_CHARS``. A dump that is not well-formed XML raises ``DeviceError`` naming where it breaks.
"""

from __future__ import annotations

import re
from xml.etree import ElementTree

from rlfactory_tool_servers.android.phone.device import DeviceError
from rlfactory_tool_servers.android.phone.ui import Bounds, Element

MAX_DUMP_CHARS = 16_000_000
MAX_ELEMENTS = 500
MAX_TEXT_CHARS = 1_000

_BOUNDS = re.compile(r"^\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]$")
_XML_START = re.compile(r"<\?xml|<hierarchy\b")
_XML_END = "</hierarchy>"
# Characters XML 1.0 forbids, raw or as character references: some apps put them in their texts.
_INVALID_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_INVALID_REFS = re.compile(r"&#(?:0*(?:[0-8]|1[124-9]|2\d|3[01])|x0*(?:[0-8bcef]|1[0-9a-f]));", re.IGNORECASE)
_EDITABLE_CLASSES = ("EditText", "AutoCompleteTextView")


def hierarchy_xml(output: str) -> str | None:
    """The ``<hierarchy>`` document in ``output`` (a dump with text around it), or ``None`` if it holds none."""
    start = _XML_START.search(output)
    end = output.rfind(_XML_END)
    if start is None or end < start.start():
        return None
    return output[start.start():end + len(_XML_END)]


def parse_dump(output: str) -> list[Element]:
    """The elements of a ``uiautomator dump`` (see the module docstring); ``DeviceError`` if it is not one."""
    if len(output) > MAX_DUMP_CHARS:
        raise DeviceError(f"the uiautomator dump is {len(output):,} characters long, over the "
                          f"{MAX_DUMP_CHARS:,} this reader takes; go to a simpler screen")
    if "<!DOCTYPE" in output or "<!ENTITY" in output:
        raise DeviceError("the uiautomator dump declares a DOCTYPE or entities, which a real dump never does; "
                          "refusing to read it")
    document = hierarchy_xml(output)
    if document is None:
        first = output.strip().splitlines()[0][:120] if output.strip() else "nothing"
        raise DeviceError(f"uiautomator gave no <hierarchy> dump (it said: {first!r}); the screen may be "
                          "changing, so wait and read it again")
    document = _INVALID_REFS.sub("", _INVALID_CHARS.sub("", document))
    try:
        root = ElementTree.fromstring(document)
    except ElementTree.ParseError as exc:
        raise DeviceError(f"the uiautomator dump is not well-formed XML ({exc}); read the screen again") from None
    if root.tag != "hierarchy":
        raise DeviceError(f"the uiautomator dump's root is <{root.tag[:40]}>, not <hierarchy>")
    elements = []
    for node in root.iter("node"):
        element = node_element(node.attrib)
        if element is not None:
            elements.append(element)
            if len(elements) == MAX_ELEMENTS:
                break
    return elements


def node_element(attributes: dict[str, str]) -> Element | None:
    """The element for one ``<node>``'s attributes, or ``None`` when the node is left out."""
    class_name = attributes.get("class") or "android.view.View"
    element = Element(
        text=_text(attributes.get("text")),
        content_description=_text(attributes.get("content-desc")),
        class_name=class_name,
        resource_id=_text(attributes.get("resource-id")),
        hint_text=_text(attributes.get("hint")),
        bounds=parse_bounds(attributes.get("bounds", "")),
        checkable=_flag(attributes, "checkable"),
        checked=_flag(attributes, "checked"),
        clickable=_flag(attributes, "clickable"),
        long_clickable=_flag(attributes, "long-clickable"),
        editable=class_name.endswith(_EDITABLE_CLASSES),
        scrollable=_flag(attributes, "scrollable"),
        selected=_flag(attributes, "selected"),
        focused=_flag(attributes, "focused"),
        enabled=attributes.get("enabled", "true") != "false",
        package=attributes.get("package", ""),
    )
    bounds = element.bounds
    if bounds is not None and (bounds.x_max <= bounds.x_min or bounds.y_max <= bounds.y_min):
        return None
    wanted = (element.text or element.content_description or element.clickable or element.long_clickable
              or element.editable or element.scrollable or element.checkable)
    return element if wanted else None


def parse_bounds(value: str) -> Bounds | None:
    """``[x1,y1][x2,y2]`` as ``Bounds``; ``None`` if it is not in that form."""
    match = _BOUNDS.match(value.strip())
    if match is None:
        return None
    x_min, y_min, x_max, y_max = (int(number) for number in match.groups())
    return Bounds(x_min, y_min, x_max, y_max)


def _text(value: str | None) -> str | None:
    if not value:
        return None
    return value if len(value) <= MAX_TEXT_CHARS else value[:MAX_TEXT_CHARS - 3] + "..."


def _flag(attributes: dict[str, str], name: str) -> bool:
    return attributes.get(name) == "true"
