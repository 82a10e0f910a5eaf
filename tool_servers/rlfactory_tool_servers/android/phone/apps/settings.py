"""Settings (after Android's Settings app): the list of categories, the ones this phone does not simulate shown
disabled, and three pages whose switches take effect at once.

Routes:
- ``main``: the categories, each a row with its summary as content description;
- ``network`` (Network & internet): the Wi-Fi and Airplane mode switches (independent here: airplane mode does not
  turn the radios off);
- ``connected`` (Connected devices): the Bluetooth switch;
- ``display`` (Display): the brightness level, shown as a percentage of its 0..255 range, with Decrease /
  Increase buttons (10 % steps); tapping the level opens a dialog to type the percentage (Enter or OK sets it);
  and the Dark theme switch.
"""

from __future__ import annotations

from rlfactory_tool_servers.android.phone.apps.widgets import (
    button,
    go,
    icon_button,
    label,
    row,
    switch,
    text_field,
    up_button,
)
from rlfactory_tool_servers.android.phone.device import Device, DeviceError, Dialog, ListBlock, Page, Screen
from rlfactory_tool_servers.android.phone.ui import Element

ORDER = 50
MAX_BRIGHTNESS = 255
STEP_PERCENT = 10
CATEGORIES = (
    ("Network & internet", "Wi-Fi, airplane mode", "network"),
    ("Connected devices", "Bluetooth, pairing", "connected"),
    ("Apps", "Recent apps, default apps", None),
    ("Notifications", "Notification history, conversations", None),
    ("Battery", "Battery usage, battery saver", None),
    ("Storage", "34% used", None),
    ("Sound & vibration", "Volume, haptics, Do Not Disturb", None),
    ("Display", "Dark theme, brightness", "display"),
    ("Wallpaper & style", "Colors, themed icons, app grid", None),
    ("Accessibility", "Display, interaction, audio", None),
    ("Security & privacy", "App security, device lock, permissions", None),
    ("Location", "Apps with access to location", None),
    ("System", "Languages, gestures, time, backup", None),
    ("About phone", "Pixel 6", None),
)
SWITCHES = {"wifi": "Wi-Fi", "airplane_mode": "Airplane mode", "bluetooth": "Bluetooth", "dark_theme": "Dark theme"}


class SettingsApp:
    name = "Settings"
    package = "com.android.settings"
    aliases = ("Settings app", "System settings", "Android settings")

    def render(self, device: Device, page: Page) -> Screen:
        if page.route == "network":
            return Screen("Network & internet", [up_button(), _switch(device, "wifi"),
                                                 _switch(device, "airplane_mode")])
        if page.route == "connected":
            return Screen("Connected devices", [up_button(), _switch(device, "bluetooth"),
                                                label("No devices connected", "connected_devices")])
        if page.route == "display":
            return _display(device, page)
        return Screen("Settings", [ListBlock("settings_list", [_category(*entry) for entry in CATEGORIES])])


def _category(title: str, summary: str, route: str | None) -> Element:
    if route is not None:
        return row(title, go(route), "title", description=summary)
    return Element(text=title, content_description=summary, resource_id="title", enabled=False)


def _switch(device: Device, setting: str) -> Element:
    """The switch of a ``Settings`` field, by its name."""
    return switch(SWITCHES[setting], getattr(device.state.settings, setting), _toggle(setting),
                  f"{setting}_switch")


def _toggle(setting: str):
    def toggle(device: Device) -> str:
        value = not getattr(device.state.settings, setting)
        setattr(device.state.settings, setting, value)
        return f"Turned {SWITCHES[setting]} {'on' if value else 'off'}."
    return toggle


# -- display ---------------------------------------------------------------------------------------------------

def percent(brightness: int) -> int:
    """The brightness (0..255) as the percentage the page shows."""
    return round(brightness * 100 / MAX_BRIGHTNESS)


def _set_percent(device: Device, value: int) -> str:
    value = max(0, min(100, value))
    device.state.settings.brightness = round(value * MAX_BRIGHTNESS / 100)
    return f"Brightness set to {value}%."


def _display(device: Device, page: Page) -> Screen:
    if page.dialog == "brightness":
        return Screen("Display", dialog=Dialog("Brightness level", [
            text_field("brightness", "Brightness (0-100 %)", "brightness_percent", on_enter=_enter_level),
            button("Cancel", _cancel, "android:id/button2"), button("OK", _apply_level, "android:id/button1")]))
    settings = device.state.settings
    level = Element(text=f"{percent(settings.brightness)}%", content_description="Brightness level",
                    class_name="android.widget.SeekBar", resource_id="brightness_level", clickable=True,
                    on_click=_open_level)
    return Screen("Display", [up_button(), level, icon_button("Decrease brightness", _step(-1), "brightness_down"),
                              icon_button("Increase brightness", _step(1), "brightness_up"),
                              _switch(device, "dark_theme")])


def _step(direction: int):
    def step(device: Device) -> str:
        return _set_percent(device, percent(device.state.settings.brightness) + direction * STEP_PERCENT)
    return step


def _open_level(device: Device) -> None:
    device.open_dialog("brightness")
    device.page.form["brightness"] = str(percent(device.state.settings.brightness))


def _level(device: Device) -> int:
    value = device.form("brightness").strip().rstrip("%").strip()
    if not value.isdigit() or int(value) > 100:
        raise DeviceError(f"the brightness must be a whole percentage from 0 to 100, not {value[:20]!r}")
    return int(value)


def _apply_level(device: Device) -> str:
    value = _level(device)
    device.close_dialog()
    return _set_percent(device, value)


def _enter_level(device: Device) -> str:
    # Enter runs after the typed text is stored, so a wrong value is reported rather than raised
    try:
        return _apply_level(device)
    except DeviceError as error:
        return f"Not set: {error}."


def _cancel(device: Device) -> str:
    device.close_dialog()
    return "Cancelled."


APP = SettingsApp()
