"""The server's phones, one per episode: created by ``open``, dropped by ``close``, and bounded.

At most ``max_devices`` phones live at once (opening one more drops the least recently used) and a phone unused
for ``idle_s`` seconds is dropped at the next open, so an env that never closes its episodes cannot grow the
server without bound. A session's phone is made from a task instance (template, seed or parameters): a simulated
one by ``tasks.base.set_up_device``, or a real one over ADB (``RealPhone``, one session at a time); the state as set
up is made again from the seed for the verdict (a phone holds one copy of its state).
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rlfactory_tool_servers.android.phone.device import Device, DeviceError
from rlfactory_tool_servers.android.phone.state import PhoneState
from rlfactory_tool_servers.android.phone.tasks import template_named
from rlfactory_tool_servers.android.phone.tasks.base import (
    TaskTemplate, Verdict, initial_state, instance_params, set_up_device)
from rlfactory_tool_servers.android.phone.ui import OBSERVATIONS

DEFAULT_MAX_DEVICES = 16_384
DEFAULT_IDLE_S = 3_600.0


@dataclass
class Session:
    """One episode's phone, what it was set up as, and how its screen is shown."""

    device: Any  # a Device, or an AdbDevice for the real-device backend
    template: TaskTemplate | None
    seed: int
    params: dict[str, Any]
    observation: str = "t3a"
    touched: float = field(default_factory=time.monotonic)
    initial: PhoneState | None = None
    """The state as set up, when it cannot be set up again from the seed (a real phone's, read at open)."""

    def screen(self) -> str:
        return self.device.screen_text(self.observation)

    def verdict(self, ending: dict[str, Any] | None) -> Verdict:
        if self.template is None:
            return Verdict(False, {}, "this phone was opened without a task, so there is nothing to check")
        initial = self.initial or initial_state(self.template, self.seed, self.params)
        return self.template.verdict(self.device, initial, self.params, ending)


def short_hash(session: str) -> str:
    """Eight hex digits naming a session in a message another client reads, without telling it the id (an
    episode id is what a client sends to act as that episode)."""
    return hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:8]


class DeviceStore:
    """Sessions by id. ``make`` builds a session's phone for (template, seed, params); the default builds a
    simulated one."""

    def __init__(self, max_devices: int = DEFAULT_MAX_DEVICES, idle_s: float = DEFAULT_IDLE_S,
                 make: Callable[[TaskTemplate | None, int, dict[str, Any] | None], Session] | None = None,
                 exclusive: bool = False):
        self.max_devices = max_devices
        self.idle_s = idle_s
        self.make = make or simulated_session
        self.exclusive = exclusive  # one phone, one session at a time: a real device
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def open(self, session: str, template: str | None, seed: int, params: dict[str, Any] | None,
             observation: str) -> Session:
        """A new phone for ``session`` (replacing one it had)."""
        if observation not in OBSERVATIONS:
            raise DeviceError(f"observation must be one of {', '.join(OBSERVATIONS)}, got {observation[:20]!r}")
        try:
            found = template_named(template) if template else None
        except KeyError as exc:
            raise DeviceError(exc.args[0]) from None
        self.close(session)
        self._drop_idle()
        if self.exclusive and self._sessions:
            holder = next(iter(self._sessions))
            raise DeviceError(f"the phone is in use by another episode (#{short_hash(holder)}): a real device runs one "
                              "episode at a time (one env, or one server per phone)")
        while len(self._sessions) >= self.max_devices:
            self._sessions.popitem(last=False)
            self.dropped += 1
        opened = self.make(found, seed, params)
        opened.observation = observation
        self._sessions[session] = opened
        return opened

    def get(self, session: str) -> Session:
        opened = self._sessions.get(session)
        if opened is None:
            raise DeviceError(f"there is no phone for episode {session[:80]!r}: open one with device_open (an env "
                              "does so at reset); a phone unused for a long time is dropped")
        opened.touched = time.monotonic()
        self._sessions.move_to_end(session)
        return opened

    def close(self, session: str) -> bool:
        return self._sessions.pop(session, None) is not None

    def _drop_idle(self) -> None:
        limit = time.monotonic() - self.idle_s
        while self._sessions:
            oldest = next(iter(self._sessions.values()))
            if oldest.touched >= limit:
                return
            self._sessions.popitem(last=False)
            self.dropped += 1


class RealPhone:
    """Sessions on one real phone over ADB (``make`` for a ``DeviceStore`` of one device): a template that runs
    on a real phone (``real_device``) has its settings applied and the phone sent home; the state as set up is
    read back from the phone for the verdict."""

    def __init__(self, serial: str | None, adb_path: str = "adb"):
        self.serial = serial
        self.adb_path = adb_path

    def __call__(self, template: TaskTemplate | None, seed: int, params: dict[str, Any] | None) -> Session:
        from rlfactory_tool_servers.android.phone.adb import AdbDevice

        if template is not None and not template.real_device:
            raise DeviceError(f"{template.name} cannot run on a real phone: its setup or check reads app data adb "
                              "does not reach; the settings templates (System*) can")
        device = AdbDevice(self.serial, self.adb_path)
        if template is not None:
            params = instance_params(template, seed) if params is None else params
            device.apply_settings(initial_state(template, seed, params).settings)
        device.adb("shell", "input", "keyevent", "KEYCODE_HOME")
        return Session(device, template, seed, params or {}, initial=device.state)


def simulated_session(template: TaskTemplate | None, seed: int, params: dict[str, Any] | None) -> Session:
    """A simulated phone set up for the instance (a bare phone on the home screen when there is no template)."""
    if template is None:
        from rlfactory_tool_servers.android.phone.apps import default_apps

        return Session(Device(default_apps()), None, seed, {}, initial=PhoneState())
    device, params = set_up_device(template, seed, params)
    return Session(device, template, seed, params)
