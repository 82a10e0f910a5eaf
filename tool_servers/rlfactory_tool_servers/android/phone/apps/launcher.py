"""The home screen: one icon per installed app (tapping it opens the app) and the clock."""

from __future__ import annotations

import datetime
import functools

from rlfactory_tool_servers.android.phone.device import Device, Page, Screen
from rlfactory_tool_servers.android.phone.ui import Element

ORDER = 0


class Launcher:
    name = "Launcher"
    package = "com.google.android.apps.nexuslauncher"
    aliases: tuple[str, ...] = ()

    def render(self, device: Device, page: Page) -> Screen:
        time_text, date_text = clock_texts(device.state.now.replace(second=0, microsecond=0))
        body: list = [Element(text=time_text, content_description=date_text, resource_id="clock")]
        for name in device.apps:
            if name != self.name:
                body.append(Element(text=name, content_description=name, resource_id="icon", clickable=True,
                                    on_click=_opener(name)))
        return Screen("Home", body)


@functools.lru_cache(maxsize=4096)
def clock_texts(minute: datetime.datetime) -> tuple[str, str]:
    """The home screen's time and date at ``minute`` (``strftime`` is slow, and phones share their minutes)."""
    return minute.strftime("%-I:%M"), minute.strftime("%A, %B %-d")


@functools.cache  # one per app, not one per icon drawn
def _opener(name: str):
    def open_app(device: Device) -> str:
        return device.start_app(name)
    return open_app


APP = Launcher()
