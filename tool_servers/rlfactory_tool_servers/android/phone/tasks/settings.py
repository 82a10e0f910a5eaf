"""Settings tasks, after AndroidWorld's SystemWifiTurnOn/Off, SystemBluetoothTurnOn/Off and
SystemBrightnessMax/Min, plus airplane mode, dark theme, and turning on a feature this phone does not have
(infeasible). Each setup starts from the opposite state with the other settings drawn at random; the checks read
only what ``adb shell settings get`` reads on a real phone."""

from __future__ import annotations

import random
from typing import ClassVar

from rlfactory_tool_servers.android.phone.apps.settings import MAX_BRIGHTNESS
from rlfactory_tool_servers.android.phone.plans import DONE, INFEASIBLE, Open, Tap, Target, Type
from rlfactory_tool_servers.android.phone.state import Settings
from rlfactory_tool_servers.android.phone.tasks.base import TaskTemplate

MISSING_FEATURES = (("NFC", "Connected devices", "connected"), ("the mobile hotspot", "Network & internet", "network"),
                    ("Night Light", "Display", "display"))
"""Features this phone's Settings lacks: the name, the category where a phone would have it, and its route."""


def _random_settings(rng: random.Random) -> Settings:
    return Settings(wifi=rng.random() < 0.7, bluetooth=rng.random() < 0.5, airplane_mode=rng.random() < 0.2,
                    brightness=rng.randint(30, 225), dark_theme=rng.random() < 0.4)


class _SwitchTask(TaskTemplate):
    """Turn one switch ``on_or_off``: a ``Settings`` field, the category whose page holds its switch."""

    app = "Settings"
    real_device = True
    setting: ClassVar[str]
    category: ClassVar[str]
    wanted: ClassVar[bool | None] = None  # None: drawn

    def params(self, rng):
        wanted = rng.random() < 0.5 if self.wanted is None else self.wanted
        return {"on_or_off": "on" if wanted else "off"}

    def setup(self, state, params, rng):
        state.settings = _random_settings(rng)
        setattr(state.settings, self.setting, params["on_or_off"] == "off")

    def plan(self, params):
        return [Open("Settings"), Tap(Target(text=self.category)), Tap(Target(rid=f"{self.setting}_switch")), DONE]

    def subgoals(self, device, initial, params):
        value = getattr(device.state.settings, self.setting)
        return {f"{self.setting} {params['on_or_off']}": value == (params["on_or_off"] == "on")}


class SystemWifiTurnOn(_SwitchTask):
    name = "SystemWifiTurnOn"
    goal = "Turn wifi {on_or_off}."
    setting, category, wanted = "wifi", "Network & internet", True


class SystemWifiTurnOff(_SwitchTask):
    name = "SystemWifiTurnOff"
    goal = "Turn wifi {on_or_off}."
    setting, category, wanted = "wifi", "Network & internet", False


class SystemBluetoothTurnOn(_SwitchTask):
    name = "SystemBluetoothTurnOn"
    goal = "Turn bluetooth {on_or_off}."
    setting, category, wanted = "bluetooth", "Connected devices", True


class SystemBluetoothTurnOff(_SwitchTask):
    name = "SystemBluetoothTurnOff"
    goal = "Turn bluetooth {on_or_off}."
    setting, category, wanted = "bluetooth", "Connected devices", False


class SystemAirplaneMode(_SwitchTask):
    name = "SystemAirplaneMode"
    goal = "Turn airplane mode {on_or_off}."
    setting, category = "airplane_mode", "Network & internet"


class SystemDarkTheme(_SwitchTask):
    name = "SystemDarkTheme"
    goal = "Turn the dark theme {on_or_off}."
    setting, category = "dark_theme", "Display"


class _BrightnessTask(TaskTemplate):
    """Brightness to its ``max_or_min`` value, typed as a percentage in the Display page's level dialog."""

    app = "Settings"
    goal = "Turn brightness to the {max_or_min} value."
    real_device = True
    max_or_min: ClassVar[str]

    def params(self, rng):
        return {"max_or_min": self.max_or_min}

    def setup(self, state, params, rng):
        state.settings = _random_settings(rng)

    def plan(self, params):
        return [Open("Settings"), Tap(Target(text="Display")), Tap(Target(desc="Brightness level")),
                Type(Target(rid="brightness_percent"), "100" if params["max_or_min"] == "max" else "0", clear=True),
                DONE]

    def subgoals(self, device, initial, params):
        brightness = device.state.settings.brightness
        at_end = brightness >= MAX_BRIGHTNESS if params["max_or_min"] == "max" else brightness <= 1
        return {f"brightness at its {params['max_or_min']}": at_end}  # a real phone's slider stops at 1


class SystemBrightnessMax(_BrightnessTask):
    name = "SystemBrightnessMax"
    max_or_min = "max"


class SystemBrightnessMin(_BrightnessTask):
    name = "SystemBrightnessMin"
    max_or_min = "min"


class SystemMissingFeature(TaskTemplate):
    name = "SystemMissingFeature"
    app = "Settings"
    kind = "infeasible"
    goal = "Turn on {feature}."
    guarded = ("settings",)

    def params(self, rng):
        feature, category, route = rng.choice(MISSING_FEATURES)
        return {"feature": feature, "category": category, "route": route}

    def setup(self, state, params, rng):
        state.settings = _random_settings(rng)

    def plan(self, params):
        return [Open("Settings"), Tap(Target(text=params["category"])), INFEASIBLE]

    def evidence(self, device, initial, params):
        return {f"looked in {params['category']}": f"Settings/{params['route']}" in device.visited}


TEMPLATES = [SystemWifiTurnOn(), SystemWifiTurnOff(), SystemBluetoothTurnOn(), SystemBluetoothTurnOff(),
             SystemAirplaneMode(), SystemDarkTheme(), SystemBrightnessMax(), SystemBrightnessMin(),
             SystemMissingFeature()]
