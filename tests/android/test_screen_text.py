"""The t3a screen text is made from lines kept across phones and turns (``ui.T3ALines``): a kept line must be the
line ``describe_t3a`` makes for the element as it is now, and the cache stays within its bound."""

from __future__ import annotations

import dataclasses

import pytest

from rlfactory_tool_servers.android.phone.actions import perform
from rlfactory_tool_servers.android.phone.device import DeviceError, row_bounds
from rlfactory_tool_servers.android.phone.tasks import all_templates
from rlfactory_tool_servers.android.phone.tasks.base import set_up_device
from rlfactory_tool_servers.android.phone.ui import Bounds, Element, T3ALines, _FLAGS, describe_t3a, render_elements

CHANGES = {"text": "Other", "content_description": "Other", "hint_text": "Other", "class_name": "android.widget.X",
           "resource_id": "other_id", "package": "com.other", "bounds": Bounds(0, 10, 1080, 20),
           **{flag: True for flag in _FLAGS}, "enabled": False}


def element() -> Element:
    return Element(text="Wi-Fi", content_description="wifi", class_name="android.widget.Switch", resource_id="wifi",
                   package="com.android.settings", bounds=Bounds(0, 80, 1080, 212))


@pytest.mark.parametrize("attribute", sorted(CHANGES))
def test_a_kept_line_follows_every_attribute_the_line_shows(attribute):
    lines = T3ALines()
    before = element()
    assert lines.line(3, before) == describe_t3a(3, before)
    changed = dataclasses.replace(before, **{attribute: CHANGES[attribute]})
    assert describe_t3a(3, changed) != describe_t3a(3, before)
    assert lines.line(3, changed) == describe_t3a(3, changed)
    assert lines.line(4, before) == describe_t3a(4, before)


def test_screens_of_every_template_read_as_before_while_the_lines_are_kept():
    for number, template in enumerate(all_templates()):
        device, _ = set_up_device(template, number, None)
        for action, arguments in (("open_app", {"app_name": template.app}), ("scroll", {"direction": "down"}),
                                  ("click", {"index": 2}), ("navigate_back", {})):
            try:
                perform(device, action, arguments)
            except DeviceError:
                pass
            elements = device.elements()
            expected = "\n".join(describe_t3a(i, e) for i, e in enumerate(elements))
            assert device.screen_text() == render_elements(elements) == expected


def test_the_cache_holds_at_most_its_characters_and_no_long_line():
    lines = T3ALines(max_chars=2_000, max_line_chars=300)
    for y in range(200):
        lines.line(0, dataclasses.replace(element(), bounds=row_bounds(y, 10)))
        assert lines.chars <= 2_000
    assert 0 < len(lines._lines) < 200
    long = dataclasses.replace(element(), text="x" * 400)
    assert lines.line(0, long) == describe_t3a(0, long) and lines.line(0, long) not in lines._lines.values()
