"""The real-device backend: AndroidWorld's actions on an emulator or phone through ``adb``, with the same methods as
the simulated ``device.Device``, so ``actions.perform`` and the android tool server drive either one.

Each call runs one ``adb -s SERIAL ...`` command line (an argv list, no local shell, with a timeout); a failure
raises ``DeviceError`` with one line naming the problem and its fix (adb not found, no such device, device offline
or unauthorized, a command's error). After AndroidWorld's actuation:

- the screen is ``exec-out uiautomator dump /dev/tty`` (falling back to a dump to ``/sdcard`` read with
  ``exec-out cat``), parsed by ``uiautomator.parse_dump``; it is read once per action, and indexes refer to the
  screen last read;
- ``click`` / ``double_tap`` tap the element's centre (``input tap``, twice); ``long_press`` is a 1 s
  ``input swipe`` that does not move;
- ``input_text`` needs an editable element: it taps it, optionally clears it (``KEYCODE_MOVE_END`` and one
  ``KEYCODE_DEL`` per character it shows), types with ``input text`` in short chunks (spaces as ``%s``, the device
  shell's special characters escaped, accents stripped, characters ``input text`` cannot type left out with a
  note, a newline as ``KEYCODE_ENTER``) and presses Enter;
- ``scroll`` swipes over the element (default: the first scrollable one, else the screen) against the direction
  (scroll down = the finger moves up); ``swipe`` moves the finger that way across the screen; both keep clear of
  the edges, where gesture navigation would take the swipe for Back or Home;
- ``navigate_back`` / ``navigate_home`` / ``keyboard_enter`` are key events; ``wait`` sleeps;
- ``open_app`` starts an app's activity by name (the simulated phone's app names and aliases, and a few more of
  AndroidWorld's apps) with ``am start -n``, or a package name's launcher activity with ``monkey``.

``read_settings`` reads Wi-Fi, Bluetooth, airplane mode, brightness and dark theme from the phone, ``state`` is a
``PhoneState`` holding them, and ``apply_settings`` sets them, so the settings templates are set up and checked on
a real phone unchanged.
"""

from __future__ import annotations

import re
import subprocess
import unicodedata
from time import monotonic, sleep
from collections.abc import Mapping
from typing import Any

from rlfactory_tool_servers.android.phone.device import (
    MAX_FIELD_CHARS, App, DeviceError, element_label, find_app, parse_direction, parse_index)
from rlfactory_tool_servers.android.phone.state import PhoneState, Settings
from rlfactory_tool_servers.android.phone.ui import Bounds, Element, render_elements
from rlfactory_tool_servers.android.phone.uiautomator import hierarchy_xml, parse_dump

DEFAULT_TIMEOUT_S = 20.0
DUMP_PATH = "/sdcard/window_dump.xml"
LONG_PRESS_MS = 1000
SWIPE_MS = 500
EDGE_MARGIN = 0.15
"""The share of a box's width or height a scroll or swipe keeps from each edge."""
TEXT_CHUNK_CHARS = 40
"""The most characters one ``input text`` types: long strings typed at once can arrive out of order."""
MAX_CLEAR_CHARS = 500
"""The most characters ``clear_text`` deletes."""
SHELL_SPECIAL = frozenset("\\;|`'\"&<>()#$*?[]{}~!^")
"""Characters the device's shell would interpret: escaped with a backslash in ``input text``."""

REAL_APPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "Contacts": ("com.google.android.contacts/com.android.contacts.activities.PeopleActivity", ()),
    "Simple SMS Messenger": ("com.simplemobiletools.smsmessenger/.activities.MainActivity", ()),
    "Clock": ("com.google.android.deskclock/com.android.deskclock.DeskClock", ()),
    "Simple Calendar Pro": ("com.simplemobiletools.calendar.pro/.activities.MainActivity", ()),
    "Settings": ("com.android.settings/.Settings", ()),
    "Markor": ("net.gsantner.markor/.activity.MainActivity", ()),
    "Pro Expense": ("com.arduia.expense/.ui.MainActivity", ()),
    "Tasks": ("org.tasks/com.todoroo.astrid.activity.MainActivity", ()),
    "Chrome": ("com.android.chrome/com.google.android.apps.chrome.Main", ("Google Chrome", "Browser")),
    "Files": ("com.google.android.documentsui/com.android.documentsui.files.FilesActivity", ("File manager",)),
    "Camera": ("com.android.camera2/com.android.camera.CameraLauncher", ()),
    "Broccoli": ("com.flauschcode.broccoli/.MainActivity", ("Broccoli recipe app", "Recipe app", "Recipes")),
    "Simple Gallery Pro": ("com.simplemobiletools.gallery.pro/.activities.MainActivity", ("Gallery",)),
    "Simple Draw Pro": ("com.simplemobiletools.draw.pro/.activities.MainActivity", ("Simple Draw",)),
    "Audio Recorder": ("com.dimowner.audiorecorder/.app.welcome.WelcomeActivity", ()),
    "OpenTracks": ("de.dennisguse.opentracks/.TrackListActivity", ("Open Tracks", "Activity tracker")),
    "Joplin": ("net.cozic.joplin/.MainActivity", ()),
    "VLC": ("org.videolan.vlc/.gui.MainActivity", ("VLC player",)),
    "Retro Music": ("code.name.monkey.retromusic/.activities.MainActivity", ("Retro", "Retro player")),
    "OsmAnd": ("net.osmand/.plus.activities.MapActivity", ("Maps",)),
}
"""AndroidWorld's apps by display name: the activity ``open_app`` starts, and names it also accepts (the simulated
apps' aliases are accepted too)."""
_PACKAGE_NAME = re.compile(r"^[A-Za-z]\w*(\.[A-Za-z_]\w*)+$")


class AdbDevice:
    """A real phone or emulator, ``serial`` as ``adb devices`` lists it (``None``: the only one connected).
    ``settle_s``: how long the screen settles after an action before it is read (and between tapping a text field
    and typing); ``wait_s``: what ``wait`` sleeps; ``apps`` (default: the simulated phone's) lends ``open_app`` its
    names and aliases, and the verdict its fresh phone."""

    def __init__(self, serial: str | None, adb_path: str = "adb", timeout_s: float = DEFAULT_TIMEOUT_S,
                 settle_s: float = 1.0, wait_s: float = 5.0, apps: Mapping[str, App] | None = None):
        if apps is None:
            from rlfactory_tool_servers.android.phone.apps import default_apps

            apps = default_apps()
        self.serial = serial
        self.adb_path = adb_path
        self.timeout_s = timeout_s
        self.settle_s = settle_s
        self.wait_s = wait_s
        self.apps = apps
        self.ending: dict[str, Any] | None = None
        self.actions = 0
        self._elements: list[Element] | None = None
        self._screen: Bounds | None = None
        self._acted_at = 0.0  # when the last action ran: the screen is read settle_s after it

    # -- running adb -------------------------------------------------------------------------------------------

    def adb(self, *args: str) -> str:
        """Run ``adb [-s SERIAL] ARGS...``; its standard output. ``DeviceError`` when it fails or times out."""
        argv = [self.adb_path, *(("-s", self.serial) if self.serial else ()), *args]
        command = " ".join(("adb", *args))[:120]
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=self.timeout_s,
                                  check=False)
        except FileNotFoundError:
            raise DeviceError(f"adb not found at {self.adb_path!r}: install Android SDK platform-tools and put adb "
                              "on PATH, or pass adb_path=") from None
        except PermissionError:
            raise DeviceError(f"adb at {self.adb_path!r} cannot be run (permission denied): pass the path of an "
                              "executable adb") from None
        except subprocess.TimeoutExpired:
            raise DeviceError(f"`{command}` timed out after {self.timeout_s:g} s: the device may be hung or still "
                              "booting; check it with `adb devices`, or raise timeout_s") from None
        output = done.stdout.decode("utf-8", "replace")
        if done.returncode != 0:
            raise DeviceError(self._failure(command, done.returncode, done.stderr.decode("utf-8", "replace")
                                            or output))
        return output

    def _failure(self, command: str, returncode: int, message: str) -> str:
        line = next((line.strip() for line in message.splitlines() if line.strip()), "no message")[:200]
        device = repr(self.serial) if self.serial else "the device"
        lowered = line.lower()
        if "offline" in lowered:
            return f"device {device} is offline: restart the emulator or reconnect the phone until `adb devices` " \
                   "lists it as 'device'"
        if "unauthorized" in lowered:
            return f"device {device} is unauthorized: accept the USB debugging prompt on the phone"
        if "more than one device" in lowered:
            return "more than one device is connected: pass serial= one of the serials `adb devices` lists"
        if "no devices" in lowered or ("device" in lowered and "not found" in lowered):
            return f"device {device} is not connected: start the emulator (`emulator -avd NAME`) or plug in the " \
                   "phone; `adb devices` lists the serials"
        return f"`{command}` failed (exit {returncode}): {line}"

    def _shell(self, *args: str) -> str:
        return self.adb("shell", *args)

    def _keyevent(self, *keys: str) -> None:
        self._shell("input", "keyevent", *keys)

    # -- the screen --------------------------------------------------------------------------------------------

    def elements(self) -> list[Element]:
        """The elements on screen now (read once per action), in index order."""
        if self._elements is None:
            sleep(max(0.0, self._acted_at + self.settle_s - monotonic()))
            self._elements = parse_dump(self._dump())
        return self._elements

    def _dump(self) -> str:
        """The dump's text; when ``/dev/tty`` gave nothing (some devices), a dump to a file read back, but never a
        file an earlier dump left (``parse_dump`` reports what uiautomator said instead)."""
        output = self.adb("exec-out", "uiautomator", "dump", "/dev/tty")
        if hierarchy_xml(output) is not None or "ERROR" in output:
            return output
        saved = self._shell("uiautomator", "dump", DUMP_PATH)
        if "dumped to" not in saved:
            return saved
        return self.adb("exec-out", "cat", DUMP_PATH)

    def screen_text(self, observation: str = "t3a") -> str:
        return render_elements(self.elements(), observation)

    def screen_bounds(self) -> Bounds:
        """The whole screen (``wm size``: its override size when one is set)."""
        if self._screen is None:
            output = self._shell("wm", "size")
            sizes = dict(re.findall(r"(Physical|Override) size:\s*(\d+x\d+)", output))
            size = sizes.get("Override") or sizes.get("Physical")
            if size is None:
                raise DeviceError(f"cannot read the screen size from `adb shell wm size` (it said "
                                  f"{output.strip()[:80]!r})")
            width, height = (int(number) for number in size.split("x"))
            self._screen = Bounds(0, 0, width, height)
        return self._screen

    def element(self, index: Any) -> Element:
        elements = self.elements()
        index = parse_index(index, len(elements))
        element = elements[index]
        if element.bounds is None:
            raise DeviceError(f"UI element {index} ({element_label(element)}) has no bounds on the screen, so it "
                              "cannot be touched")
        return element

    # -- the actions -------------------------------------------------------------------------------------------

    def _acted(self) -> None:
        self.actions += 1
        self._elements = None
        self._acted_at = monotonic()

    def _touchable(self, index: Any) -> tuple[Element, int, int]:
        element = self.element(index)
        if not element.enabled:
            raise DeviceError(f"UI element {index} ({element_label(element)}) is disabled")
        x, y = _center(element.bounds)
        return element, x, y

    def click(self, index: Any) -> str:
        element, x, y = self._touchable(index)
        self._tap(x, y)
        self._acted()
        return f"Tapped UI element {index} ({element_label(element)}) at ({x}, {y})."

    def double_tap(self, index: Any) -> str:
        element, x, y = self._touchable(index)
        self._tap(x, y)
        self._tap(x, y)
        self._acted()
        return f"Double-tapped UI element {index} ({element_label(element)}) at ({x}, {y})."

    def long_press(self, index: Any) -> str:
        element, x, y = self._touchable(index)
        self._swipe(x, y, x, y, LONG_PRESS_MS)
        self._acted()
        return f"Long-pressed UI element {index} ({element_label(element)}) at ({x}, {y})."

    def _tap(self, x: int, y: int) -> None:
        self._shell("input", "tap", str(x), str(y))

    def _swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int) -> None:
        self._shell("input", "swipe", str(x1), str(y1), str(x2), str(y2), str(duration_ms))

    def input_text(self, index: Any, text: str, clear_text: bool = False) -> str:
        element, x, y = self._touchable(index)
        if not element.editable:
            raise DeviceError(f"UI element {index} ({element_label(element)}) is not a text field; input_text needs "
                              "one whose is_editable is True")
        text = str(text)
        notes = []
        if len(text) > MAX_FIELD_CHARS:
            notes.append(f"The field takes at most {MAX_FIELD_CHARS} characters; the rest was cut.")
            text = text[:MAX_FIELD_CHARS]
        typeable, dropped = typeable_text(text)
        if dropped:
            notes.append(f"adb cannot type {len(dropped)} of the characters ({dropped[:20]!r}); they were left out.")
        self._tap(x, y)
        sleep(self.settle_s)
        if clear_text and element.text:
            self._keyevent("KEYCODE_MOVE_END", *["KEYCODE_DEL"] * min(len(element.text), MAX_CLEAR_CHARS))
        for command in text_commands(typeable):
            self.adb(*command)
        self._keyevent("KEYCODE_ENTER")
        self._acted()
        return " ".join([f"Typed {len(typeable)} characters into {element_label(element)} and pressed Enter.", *notes])

    def keyboard_enter(self) -> str:
        self._keyevent("KEYCODE_ENTER")
        self._acted()
        return "Pressed Enter."

    def scroll(self, direction: str, index: Any = None) -> str:
        direction = parse_direction(direction)
        if index is None or index == "":
            container = next((e for e in self.elements() if e.scrollable and e.bounds is not None), None)
            box = container.bounds if container is not None else self.screen_bounds()
        else:
            container = self.element(index)
            if not container.scrollable:
                raise DeviceError(f"UI element {index} ({element_label(container)}) is not scrollable")
            box = container.bounds
        self._swipe(*finger_path(box, OPPOSITE[direction]), SWIPE_MS)
        self._acted()
        return f"Scrolled {direction}."

    def swipe(self, direction: str) -> str:
        direction = parse_direction(direction)
        self._swipe(*finger_path(self.screen_bounds(), direction), SWIPE_MS)
        self._acted()
        return f"Swiped {direction}."

    def navigate_back(self) -> str:
        self._keyevent("KEYCODE_BACK")
        self._acted()
        return "Pressed Back."

    def navigate_home(self) -> str:
        self._keyevent("KEYCODE_HOME")
        self._acted()
        return "Went to the home screen."

    def open_app(self, app_name: str) -> str:
        name = str(app_name).strip()
        target = self.launch_target(name)
        if "/" in target:
            output = self._shell("am", "start", "-n", target)
            error = next((line for line in output.splitlines() if line.startswith("Error")), None)
        else:
            output = self._shell("monkey", "-p", target, "-c", "android.intent.category.LAUNCHER", "1")
            error = "no launcher activity found" if "No activities found" in output else None
        if error is not None:
            raise DeviceError(f"cannot open {name[:60]!r} ({error[:120]}): is it installed? "
                              "`adb shell pm list packages` lists what is")
        self._acted()
        return f"Opened {name}."

    def launch_target(self, app_name: str) -> str:
        """What ``open_app`` starts for ``app_name``: an activity (``package/class``) for a known app, a package
        (its launcher activity) for a simulated app without a known activity or a package name given."""
        try:
            simulated = find_app(self.apps, app_name)
        except DeviceError:
            simulated = None
        if simulated is not None:
            return REAL_APPS[simulated][0] if simulated in REAL_APPS else self.apps[simulated].package
        wanted = " ".join(app_name.split()).casefold()
        for name, (activity, aliases) in REAL_APPS.items():
            if wanted in (alias.casefold() for alias in (name, *aliases)):
                return activity
        if _PACKAGE_NAME.match(app_name):
            return app_name
        raise DeviceError(f"no app named {app_name[:60]!r} is known; the apps are: {', '.join(REAL_APPS)} (or give "
                          "an installed package name, e.g. com.android.settings)")

    def wait(self) -> str:
        sleep(self.wait_s)
        self._acted()
        return f"Waited {self.wait_s:g} seconds."

    # -- what the checks read ----------------------------------------------------------------------------------

    def read_settings(self) -> Settings:
        """Wi-Fi, Bluetooth, airplane mode, brightness (0..255) and dark theme as the phone has them now."""
        night = self._shell("cmd", "uimode", "night")
        return Settings(wifi=self._setting("global", "wifi_on") in (1, 2),
                        bluetooth=self._setting("global", "bluetooth_on") in (1, 2),
                        airplane_mode=self._setting("global", "airplane_mode_on") == 1,
                        brightness=max(0, min(255, self._setting("system", "screen_brightness"))),
                        dark_theme=bool(re.search(r"night mode:\s*yes", night, re.IGNORECASE)))

    def apply_settings(self, settings: Settings) -> None:
        """Set Wi-Fi, Bluetooth, airplane mode, brightness (manual mode) and dark theme as ``settings`` has them:
        how a settings task is set up on a real phone."""
        def on_off(value: bool) -> str:
            return "enable" if value else "disable"

        self._shell("svc", "wifi", on_off(settings.wifi))
        self._shell("svc", "bluetooth", on_off(settings.bluetooth))
        self._shell("cmd", "connectivity", "airplane-mode", on_off(settings.airplane_mode))
        self._shell("settings", "put", "system", "screen_brightness_mode", "0")
        self._shell("settings", "put", "system", "screen_brightness", str(max(0, min(255, settings.brightness))))
        self._shell("cmd", "uimode", "night", "yes" if settings.dark_theme else "no")
        self._elements, self._acted_at = None, monotonic()  # not the agent's action

    @property
    def state(self) -> PhoneState:
        """The phone as far as adb reads it: the settings, read now; every other field is left empty."""
        return PhoneState(settings=self.read_settings())

    def _setting(self, namespace: str, key: str) -> int:
        value = self._shell("settings", "get", namespace, key).strip()
        if value == "null":
            return 0
        try:
            return int(float(value))
        except ValueError:
            raise DeviceError(f"`adb shell settings get {namespace} {key}` gave {value[:40]!r}, not a number") from None


OPPOSITE = {"up": "down", "down": "up", "left": "right", "right": "left"}


def finger_path(box: Bounds, direction: str) -> tuple[int, int, int, int]:
    """Where a swipe that moves the finger ``direction`` over ``box`` starts and ends (x1, y1, x2, y2), keeping
    ``EDGE_MARGIN`` of the box clear at each end."""
    x, y = _center(box)
    dx = int((box.x_max - box.x_min) * EDGE_MARGIN)
    dy = int((box.y_max - box.y_min) * EDGE_MARGIN)
    left, right = max(0, box.x_min) + dx, box.x_max - dx
    top, bottom = max(0, box.y_min) + dy, box.y_max - dy
    return {"up": (x, bottom, x, top), "down": (x, top, x, bottom),
            "left": (right, y, left, y), "right": (left, y, right, y)}[direction]


def typeable_text(text: str) -> tuple[str, str]:
    """``text`` as ``input text`` can type it (printable ASCII and newlines; accents stripped), and the characters
    left out."""
    typed, dropped = [], []
    for character in text.replace("\r\n", "\n").replace("\r", "\n"):
        if character == "\n" or " " <= character <= "~":
            typed.append(character)
            continue
        ascii_form = "".join(c for c in unicodedata.normalize("NFKD", character) if " " <= c <= "~")
        (typed if ascii_form else dropped).append(ascii_form or character)
    return "".join(typed), "".join(dropped)


def text_commands(text: str) -> list[list[str]]:
    """The adb argv tails (after ``adb -s SERIAL``) that type ``text`` (printable ASCII and newlines): one
    ``shell input text`` per chunk, ``KEYCODE_ENTER`` between lines."""
    commands: list[list[str]] = []
    for number, line in enumerate(text.split("\n")):
        if number:
            commands.append(["shell", "input", "keyevent", "KEYCODE_ENTER"])
        commands.extend(["shell", "input", "text", escape_text(chunk)] for chunk in text_chunks(line))
    return commands


def text_chunks(line: str) -> list[str]:
    """``line`` in pieces of at most ``TEXT_CHUNK_CHARS``, cut between a ``%`` and an ``s`` too: ``input text``
    reads ``%s`` as a space, so a literal one must go in two commands."""
    chunks, current = [], ""
    for character in line:
        if len(current) == TEXT_CHUNK_CHARS or (character == "s" and current.endswith("%")):
            chunks.append(current)
            current = ""
        current += character
    return chunks + [current] if current else chunks


def escape_text(chunk: str) -> str:
    """One ``input text`` argument: spaces as ``%s``, the device shell's special characters backslash-escaped."""
    return "".join("%s" if c == " " else "\\" + c if c in SHELL_SPECIAL else c for c in chunk)


def _center(bounds: Bounds) -> tuple[int, int]:
    x, y = bounds.center
    return max(0, x), max(0, y)

