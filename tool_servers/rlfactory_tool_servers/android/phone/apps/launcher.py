"""The home screen: one icon per installed app (tapping it opens the app) and the clock."""

from __future__ import annotations

import functools

from rlfactory_tool_servers.android.phone.device import Device, Page, Screen
from rlfactory_tool_servers.android.phone.ui import Element

ORDER = 0


class Launcher:
    name = "Launcher"
    package = "com.google.android.apps.nexuslauncher"
    aliases: tuple[str, ...] = ()

    def render(self, device: Device, page: Page) -> Screen:
        now = device.state.now
        body: list = [Element(text=now.strftime("%-I:%M"), content_description=now.strftime("%A, %B %-d"),
                              resource_id="clock")]
        for name in device.apps:
            if name != self.name:
                body.append(Element(text=name, content_description=name, resource_id="icon", clickable=True,
                                    on_click=_opener(name)))
        return Screen("Home", body)


@functools.cache  # one per app, not one per icon drawn
def _opener(name: str):
    def open_app(device: Device) -> str:
        return device.start_app(name)
    return open_app


APP = Launcher()
