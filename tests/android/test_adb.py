"""The ADB backend: uiautomator dumps the tests write, read into the simulated phone's elements, and the exact adb
command lines each action runs, against a fake ``adb`` (tests/android/fake_adb.py)."""

from __future__ import annotations

import json
import pathlib
import stat
import sys
from xml.sax.saxutils import quoteattr

import pytest

from rlfactory_tool_servers.android.phone import uiautomator
from rlfactory_tool_servers.android.phone.actions import perform
from rlfactory_tool_servers.android.phone.adb import (TEXT_CHUNK_CHARS, AdbDevice, escape_text,
                                                      text_commands)
from rlfactory_tool_servers.android.phone.device import DeviceError
from rlfactory_tool_servers.android.phone.state import Settings
from rlfactory_tool_servers.android.phone.tasks import template_named
from rlfactory_tool_servers.android.phone.tasks.base import initial_state
from rlfactory_tool_servers.android.phone.ui import Bounds, parse_t3a, render_elements

SERIAL = "emulator-5554"
HEADER = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>"
DEFAULTS = {"index": "0", "text": "", "resource-id": "", "class": "android.widget.FrameLayout",
            "package": "com.android.settings", "content-desc": "", "checkable": "false", "checked": "false",
            "clickable": "false", "enabled": "true", "focusable": "false", "focused": "false", "scrollable": "false",
            "long-clickable": "false", "password": "false", "selected": "false", "bounds": "[0,0][1080,2400]"}


def node(children: str = "", **attributes: str) -> str:
    """One ``<node>`` as uiautomator writes it (every attribute; ``long_clickable`` for ``long-clickable``...)."""
    values = {**DEFAULTS, **{name.replace("_", "-"): value for name, value in attributes.items()}}
    text = " ".join(f"{name}={quoteattr(value)}" for name, value in values.items())
    return f"<node {text}>{children}</node>" if children else f"<node {text} />"


def dump(*nodes: str) -> str:
    return f'{HEADER}<hierarchy rotation="0">{"".join(nodes)}</hierarchy>'


SETTINGS_SCREEN = dump(node(
    node(**{"resource-id": "com.android.settings:id/toolbar"}, text="Network & internet",
         bounds="[0,80][1080,212]", **{"class": "android.widget.TextView"})
    + node(node(node(text="Wi-Fi", bounds="[48,300][800,400]", **{"class": "android.widget.TextView"}))
           + node(checkable="true", checked="true", clickable="true", bounds="[880,300][1032,400]",
                  **{"class": "android.widget.Switch", "resource-id": "android:id/switch_widget"}),
           clickable="true", bounds="[0,280][1080,420]", **{"class": "android.widget.LinearLayout"})
    + node(text="", clickable="true", focused="true", bounds="[48,500][1032,620]", hint="Search settings",
           **{"class": "android.widget.EditText", "resource-id": "com.android.settings:id/search"})
    + node("".join(node(text=f"Network {i}", clickable="true", bounds=f"[0,{700 + 150 * i}][1080,{850 + 150 * i}]",
                        **{"class": "android.widget.TextView"}) for i in range(3)),
           scrollable="true", bounds="[0,700][1080,2200]",
           **{"class": "androidx.recyclerview.widget.RecyclerView", "resource-id": "com.android.settings:id/list"})
    + node(text="Disabled", clickable="true", enabled="false", bounds="[0,2250][1080,2350]")))
"""Elements: 0 toolbar title, 1 the Wi-Fi row, 2 "Wi-Fi", 3 the switch, 4 the search field, 5 the list,
6..8 its rows, 9 a disabled button."""


# -- parsing -----------------------------------------------------------------------------------------------------

def test_nested_nodes_flatten_in_document_order_keeping_what_an_agent_reads():
    elements = uiautomator.parse_dump(SETTINGS_SCREEN)
    assert [e.text for e in elements] == ["Network & internet", None, "Wi-Fi", None, None, None, "Network 0",
                                         "Network 1", "Network 2", "Disabled"]
    title, row, wifi = elements[:3]
    assert title.resource_name == "com.android.settings:id/toolbar" and title.bounds == Bounds(0, 80, 1080, 212)
    assert row.clickable and row.class_name == "android.widget.LinearLayout"
    assert not wifi.clickable and wifi.package == "com.android.settings"
    assert not elements[9].enabled


def test_edit_text_is_editable_with_its_hint_and_focus():
    field = uiautomator.parse_dump(SETTINGS_SCREEN)[4]
    assert field.editable and field.focused and field.text is None and field.hint_text == "Search settings"
    assert not uiautomator.parse_dump(SETTINGS_SCREEN)[2].editable
    auto = uiautomator.parse_dump(dump(node(**{"class": "android.widget.AutoCompleteTextView"})))
    assert auto[0].editable


def test_scrollable_list_and_checkable_switch_render_in_both_text_forms():
    elements = uiautomator.parse_dump(SETTINGS_SCREEN)
    switch, container = elements[3], elements[5]
    assert switch.checkable and switch.checked and switch.clickable
    assert container.scrollable and container.class_name.endswith("RecyclerView")
    t3a = parse_t3a(render_elements(elements, "t3a"))
    assert t3a[3]["is_checked"] is True and t3a[3]["resource_name"] == "android:id/switch_widget"
    assert t3a[5]["is_scrollable"] is True and t3a[5]["bbox_pixels"] == {"x_min": 0, "x_max": 1080, "y_min": 700,
                                                                         "y_max": 2200}
    assert t3a[4]["is_editable"] is True and t3a[4]["hint_text"] == "Search settings"
    xml = render_elements(elements, "xml")
    assert '<node index="3" class="android.widget.Switch"' in xml and 'checked="true"' in xml
    assert 'text="Network &amp; internet"' in xml


def test_layout_only_and_zero_size_nodes_are_left_out():
    elements = uiautomator.parse_dump(dump(node(node(text="Hidden", bounds="[10,10][10,50]")
                                                + node(node(), bounds="[0,0][100,100]")
                                                + node(content_desc="Navigate up", bounds="[0,0][96,96]"))))
    assert [e.content_description for e in elements] == ["Navigate up"]


def test_entities_unicode_and_control_characters():
    text = 'Tom & Jerry <3 "hi" \'x\' café 日本 😀'
    raw = dump(node(text=text, content_desc="a\u00a0b", bounds="[0,0][100,100]")).replace(
        "café", "caf&#233;").replace("Tom", "T&#1;o\x07m")
    element = uiautomator.parse_dump(raw)[0]
    assert element.text == text and element.content_description == "a\u00a0b"
    assert parse_t3a(render_elements([element]))[0]["text"] == text
    assert "Tom &amp; Jerry &lt;3 &quot;hi&quot;" in render_elements([element], "xml")


@pytest.mark.parametrize(("output", "message"), [
    (dump(node(text="a")).replace("</node>", "").replace("/>", ">"), "not well-formed"),
    (HEADER + "<hierarchy><node text='a' bounds='[0,0][1,1]'></hierarchy>", "not well-formed"),
    ("ERROR: null root node returned by UiTestAutomationBridge.", "no <hierarchy>"),
    ("", "no <hierarchy>"),
    ('<!DOCTYPE x [<!ENTITY a "aaaa">]><hierarchy><node text="&a;"/></hierarchy>', "DOCTYPE"),
])
def test_malformed_dumps_raise_a_clear_error(output, message):
    with pytest.raises(DeviceError, match=message):
        uiautomator.parse_dump(output)


def test_dump_with_text_around_it_and_malformed_bounds():
    elements = uiautomator.parse_dump("junk before\n" + dump(node(text="Ok", bounds="[oops]")) + "UI hierchary "
                                      "dumped to: /dev/tty\n")
    assert elements[0].text == "Ok" and elements[0].bounds is None


def test_huge_dumps_are_bounded(monkeypatch):
    rows = "".join(node(text="x" * 3000 if i == 0 else f"row {i}", clickable="true",
                        bounds=f"[0,{i}][1080,{i + 1}]") for i in range(2000))
    elements = uiautomator.parse_dump(dump(node(rows)))
    assert len(elements) == uiautomator.MAX_ELEMENTS
    assert len(elements[0].text) == uiautomator.MAX_TEXT_CHARS and elements[0].text.endswith("...")
    monkeypatch.setattr(uiautomator, "MAX_DUMP_CHARS", 1000)
    with pytest.raises(DeviceError, match="over the 1,000"):
        uiautomator.parse_dump(dump(node(rows)))


# -- the fake adb ------------------------------------------------------------------------------------------------

class FakeAdb:
    """The fake ``adb`` in a folder: ``configure`` says how it answers, ``calls`` what it was run with."""

    def __init__(self, folder: pathlib.Path):
        self.path = folder / "adb"
        self.path.write_text(f"#!{sys.executable}\n" + (pathlib.Path(__file__).parent / "fake_adb.py").read_text())
        self.path.chmod(self.path.stat().st_mode | stat.S_IXUSR)
        self.log = folder / "calls.jsonl"
        self.config = {"log": str(self.log), "dump": SETTINGS_SCREEN,
                       "outputs": {"shell wm size": "Physical size: 1080x2400\n"}}
        self.configure()

    def configure(self, **changes) -> None:
        self.config.update(changes)
        (self.path.parent / "fake_adb.json").write_text(json.dumps(self.config))

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def commands(self) -> list[list[str]]:
        """The calls without ``-s SERIAL`` and without the screen dumps."""
        return [call[2:] for call in self.calls() if call[2:] != ["exec-out", "uiautomator", "dump", "/dev/tty"]]

    def device(self, **options) -> AdbDevice:
        return AdbDevice(SERIAL, adb_path=str(self.path), **{"settle_s": 0, "wait_s": 0, **options})


@pytest.fixture
def fake(tmp_path) -> FakeAdb:
    return FakeAdb(tmp_path)


def shell(*words: str) -> list[str]:
    return ["shell", *words]


def test_screen_is_read_once_per_action_with_the_exact_dump_command(fake):
    device = fake.device()
    text = device.screen_text()
    assert device.screen_text("xml").startswith("<hierarchy>")
    assert fake.calls() == [["-s", SERIAL, "exec-out", "uiautomator", "dump", "/dev/tty"]]
    assert parse_t3a(text)[2]["text"] == "Wi-Fi"
    device.keyboard_enter()
    device.elements()
    assert len(fake.calls()) == 3


def test_screen_falls_back_to_a_dump_on_sdcard(fake):
    fake.configure(dump=None, outputs={"shell uiautomator dump /sdcard/window_dump.xml":
                                       "UI hierchary dumped to: /sdcard/window_dump.xml\n",
                                       "exec-out cat /sdcard/window_dump.xml": SETTINGS_SCREEN})
    assert fake.device().elements()[2].text == "Wi-Fi"
    assert fake.commands() == [shell("uiautomator", "dump", "/sdcard/window_dump.xml"),
                               ["exec-out", "cat", "/sdcard/window_dump.xml"]]


def test_a_failed_dump_is_reported_and_no_stale_file_is_read(fake):
    fake.configure(dump="ERROR: could not get idle state.\n")
    with pytest.raises(DeviceError, match="could not get idle state"):
        fake.device().elements()
    assert fake.commands() == []
    fake.configure(dump=None, outputs={"shell uiautomator dump /sdcard/window_dump.xml": "Killed\n"})
    with pytest.raises(DeviceError, match="Killed"):
        fake.device().elements()
    assert fake.commands() == [shell("uiautomator", "dump", "/sdcard/window_dump.xml")]


def test_the_screen_is_read_settle_s_after_an_action(fake, monkeypatch):
    slept, clock = [], iter([100.0, 1000.0, 1000.25])  # the action at 1000.0, the screen read 0.25 s later
    monkeypatch.setattr("rlfactory_tool_servers.android.phone.adb.sleep", slept.append)
    monkeypatch.setattr("rlfactory_tool_servers.android.phone.adb.monotonic", lambda: next(clock))
    device = fake.device(settle_s=0.75)
    device.elements()
    device.navigate_back()
    device.elements()
    assert slept == [0.0, 0.5]


def test_click_double_tap_and_long_press_touch_the_centre(fake):
    device = fake.device()
    assert device.click(3) == "Tapped UI element 3 ('android:id/switch_widget') at (956, 350)."
    device.double_tap("2")
    device.long_press(6)
    assert fake.commands() == [shell("input", "tap", "956", "350"), shell("input", "tap", "424", "350"),
                               shell("input", "tap", "424", "350"), shell("input", "swipe", "540", "775", "540",
                                                                          "775", "1000")]
    assert device.actions == 3


@pytest.mark.parametrize("index", [10, -1, "x", True, None])
def test_an_index_not_on_screen_raises_and_runs_nothing(fake, index):
    with pytest.raises(DeviceError):
        fake.device().click(index)
    assert fake.commands() == []


def test_a_disabled_element_is_not_touched(fake):
    with pytest.raises(DeviceError, match="disabled"):
        fake.device().click(9)
    assert fake.commands() == []


def test_input_text_taps_clears_types_and_presses_enter(fake):
    screen = dump(node(text="old text", bounds="[0,100][1080,300]", **{"class": "android.widget.EditText"}))
    fake.configure(dump=screen)
    note = fake.device().input_text(0, "Hello world", clear_text=True)
    assert note == "Typed 11 characters into 'old text' and pressed Enter."
    assert fake.commands() == [shell("input", "tap", "540", "200"),
                               shell("input", "keyevent", "KEYCODE_MOVE_END", *["KEYCODE_DEL"] * 8),
                               shell("input", "text", "Hello%sworld"), shell("input", "keyevent", "KEYCODE_ENTER")]


def test_input_text_appends_without_clearing(fake):
    fake.device().input_text(4, "wifi")
    assert fake.commands() == [shell("input", "tap", "540", "560"), shell("input", "text", "wifi"),
                               shell("input", "keyevent", "KEYCODE_ENTER")]


@pytest.mark.parametrize(("text", "typed"), [
    ("it's", "it\\'s"),
    ('say "hi"', 'say%s\\"hi\\"'),
    ("a & b; c | d", "a%s\\&%sb\\;%sc%s\\|%sd"),
    ("$HOME `id` (x) #1 <y>", "\\$HOME%s\\`id\\`%s\\(x\\)%s\\#1%s\\<y\\>"),
    ("back\\slash *.txt ~ ?!", "back\\\\slash%s\\*.txt%s\\~%s\\?\\!"),
    ("  two  ", "%s%stwo%s%s"),
])
def test_text_escaping(text, typed):
    assert escape_text(text) == typed
    assert text_commands(text) == [shell("input", "text", typed)]


def test_unicode_is_stripped_of_accents_and_untypeable_characters_are_reported(fake):
    note = fake.device().input_text(4, "Café ☕ naïve\tx")
    assert "adb cannot type 2 of the characters ('☕\\t')" in note
    assert fake.commands()[1] == shell("input", "text", "Cafe%s%snaivex")


def test_newlines_percent_s_and_long_text(fake):
    assert text_commands("a\nb") == [shell("input", "text", "a"), shell("input", "keyevent", "KEYCODE_ENTER"),
                                     shell("input", "text", "b")]
    assert text_commands("100%s") == [shell("input", "text", "100%"), shell("input", "text", "s")]
    assert text_commands("\n") == [shell("input", "keyevent", "KEYCODE_ENTER")]
    long_text = "word " * 40
    commands = text_commands(long_text)
    assert all(len(c[3].replace("%s", " ")) <= TEXT_CHUNK_CHARS for c in commands)
    assert "".join(c[3] for c in commands).replace("%s", " ") == long_text


def test_input_text_into_a_label_raises_and_runs_nothing(fake):
    with pytest.raises(DeviceError, match="not a text field"):
        fake.device().input_text(2, "x")
    assert fake.commands() == []


def test_keys(fake):
    device = fake.device()
    device.keyboard_enter()
    device.navigate_back()
    device.navigate_home()
    assert fake.commands() == [shell("input", "keyevent", key) for key in ("KEYCODE_ENTER", "KEYCODE_BACK",
                                                                           "KEYCODE_HOME")]


def test_scroll_swipes_over_the_list_against_the_direction(fake):
    device = fake.device()
    device.scroll("down")  # the first scrollable element: [0,700][1080,2200]; the finger moves up
    device.scroll("up", 5)
    device.scroll("right", 5)
    assert fake.commands() == [shell("input", "swipe", "540", "1975", "540", "925", "500"),
                               shell("input", "swipe", "540", "925", "540", "1975", "500"),
                               shell("input", "swipe", "918", "1450", "162", "1450", "500")]


def test_scroll_without_a_list_uses_the_screen_and_swipe_moves_the_finger(fake):
    fake.configure(dump=dump(node(text="Hello", bounds="[0,0][1080,200]")),
                   outputs={"shell wm size": "Physical size: 1440x3040\nOverride size: 1080x2400\n"})
    device = fake.device()
    device.scroll("down")
    device.swipe("up")
    device.swipe("left")
    assert fake.commands() == [shell("wm", "size"), shell("input", "swipe", "540", "2040", "540", "360", "500"),
                               shell("input", "swipe", "540", "2040", "540", "360", "500"),
                               shell("input", "swipe", "918", "1200", "162", "1200", "500")]


def test_scroll_rejects_a_bad_direction_or_an_element_that_does_not_scroll(fake):
    device = fake.device()
    with pytest.raises(DeviceError, match="direction"):
        device.scroll("sideways")
    with pytest.raises(DeviceError, match="not scrollable"):
        device.scroll("down", 2)
    assert fake.commands() == []


@pytest.mark.parametrize(("name", "command"), [
    ("Settings", shell("am", "start", "-n", "com.android.settings/.Settings")),
    ("  settings APP ", shell("am", "start", "-n", "com.android.settings/.Settings")),
    ("Messages", shell("am", "start", "-n", "com.simplemobiletools.smsmessenger/.activities.MainActivity")),
    ("Simple Calendar Pro", shell("am", "start", "-n", "com.simplemobiletools.calendar.pro/.activities.MainActivity")),
    ("contacts", shell("am", "start", "-n",
                       "com.google.android.contacts/com.android.contacts.activities.PeopleActivity")),
    ("Clock", shell("am", "start", "-n", "com.google.android.deskclock/com.android.deskclock.DeskClock")),
    ("Google Chrome", shell("am", "start", "-n", "com.android.chrome/com.google.android.apps.chrome.Main")),
    ("Files", shell("am", "start", "-n",
                    "com.google.android.documentsui/com.android.documentsui.files.FilesActivity")),
    ("org.example.app", shell("monkey", "-p", "org.example.app", "-c", "android.intent.category.LAUNCHER", "1")),
])
def test_open_app_starts_the_app(fake, name, command):
    assert fake.device().open_app(name) == f"Opened {name.strip()}."
    assert fake.commands() == [command]


def test_open_app_errors(fake):
    device = fake.device()
    with pytest.raises(DeviceError, match="no app named 'Foo Bar' is known"):
        device.open_app("Foo Bar")
    assert fake.commands() == []
    fake.configure(outputs={"shell am start -n com.android.chrome/com.google.android.apps.chrome.Main":
                            "Starting: Intent { cmp=com.android.chrome/... }\nError type 3\n"
                            "Error: Activity class {com.android.chrome/...} does not exist.\n",
                            "shell monkey -p org.gone -c android.intent.category.LAUNCHER 1":
                            "** No activities found to run, monkey aborted.\n"})
    with pytest.raises(DeviceError, match="cannot open 'Chrome' .*is it installed"):
        device.open_app("Chrome")
    with pytest.raises(DeviceError, match="cannot open 'org.gone'"):
        device.open_app("org.gone")
    assert device.actions == 0


def test_wait_sleeps_and_runs_nothing(fake):
    device = fake.device()
    assert device.wait() == "Waited 0 seconds."
    assert fake.calls() == [] and device.actions == 1


def test_perform_drives_it_unchanged(fake):
    device = fake.device()
    perform(device, "click", {"index": 3})
    perform(device, "input_text", {"index": 4, "text": "a b", "clear_text": False})
    perform(device, "scroll", {"direction": "down"})
    perform(device, "open_app", {"app_name": "Settings"})
    assert perform(device, "status", {"goal_status": "complete"}).startswith("Episode ended")
    with pytest.raises(DeviceError, match="episode has ended"):
        perform(device, "navigate_back", {})
    assert device.ending == {"action_type": "status", "goal_status": "complete"}
    assert len(fake.commands()) == 6


def settings_outputs(wifi="1", bluetooth="0", airplane="0", brightness="102", night="Night mode: no") -> dict:
    return {"shell settings get global wifi_on": wifi + "\n", "shell settings get global bluetooth_on": bluetooth,
            "shell settings get global airplane_mode_on": airplane, "shell settings get system screen_brightness":
            brightness, "shell cmd uimode night": night + "\n"}


def test_read_settings(fake):
    fake.configure(outputs=settings_outputs())
    assert fake.device().read_settings() == Settings(wifi=True, bluetooth=False, airplane_mode=False, brightness=102,
                                                     dark_theme=False)
    assert sorted(fake.commands()) == sorted([c.split(" ") for c in settings_outputs()])
    fake.configure(outputs=settings_outputs(wifi="2", bluetooth="1", airplane="1", brightness="null",
                                            night="Night mode: yes"))
    assert fake.device().read_settings() == Settings(wifi=True, bluetooth=True, airplane_mode=True, brightness=0,
                                                     dark_theme=True)
    fake.configure(outputs=settings_outputs(brightness="bright"))
    with pytest.raises(DeviceError, match="not a number"):
        fake.device().read_settings()


def test_a_settings_template_is_checked_on_the_real_phone(fake):
    template = template_named("SystemWifiTurnOn")
    params = {"on_or_off": "on"}
    assert template.real_device
    initial = initial_state(template, 0, params)
    ending = {"action_type": "status", "goal_status": "complete"}
    fake.configure(outputs=settings_outputs(wifi="0"))
    assert not template.verdict(fake.device(), initial, params, ending).success
    fake.configure(outputs=settings_outputs(wifi="1"))
    assert template.verdict(fake.device(), initial, params, ending).success


def test_apply_settings_sets_each_setting_with_its_command(fake):
    fake.device().apply_settings(Settings(wifi=False, bluetooth=True, airplane_mode=False, brightness=300,
                                          dark_theme=True))
    assert fake.commands() == [
        ["shell", "svc", "wifi", "disable"], ["shell", "svc", "bluetooth", "enable"],
        ["shell", "cmd", "connectivity", "airplane-mode", "disable"],
        ["shell", "settings", "put", "system", "screen_brightness_mode", "0"],
        ["shell", "settings", "put", "system", "screen_brightness", "255"], ["shell", "cmd", "uimode", "night", "yes"]]


# -- errors ------------------------------------------------------------------------------------------------------

def test_adb_missing(tmp_path):
    with pytest.raises(DeviceError, match="adb not found at .*platform-tools"):
        AdbDevice(SERIAL, adb_path=str(tmp_path / "no-adb")).elements()


@pytest.mark.parametrize(("stderr", "message"), [
    ("error: device offline", f"device '{SERIAL}' is offline"),
    (f"adb: device '{SERIAL}' not found", "is not connected: start the emulator"),
    ("error: no devices/emulators found", "is not connected"),
    ("error: device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set", "accept the USB debugging"),
    ("/system/bin/sh: input: inaccessible or not found",
     r"`adb shell input keyevent KEYCODE_BACK` failed \(exit 127\): /system/bin/sh: input"),
])
def test_device_errors_name_the_problem(fake, stderr, message):
    fake.configure(fail={"rc": 127 if "sh:" in stderr else 1, "stderr": stderr})
    with pytest.raises(DeviceError, match=message) as raised:
        fake.device().navigate_back()
    assert "\n" not in str(raised.value)


def test_no_serial_runs_without_s(fake):
    AdbDevice(None, adb_path=str(fake.path), settle_s=0).navigate_home()
    assert fake.calls() == [["shell", "input", "keyevent", "KEYCODE_HOME"]]


def test_timeouts(fake):
    fake.configure(sleep=5)
    with pytest.raises(DeviceError, match="timed out after 0.5 s"):
        fake.device(timeout_s=0.5).elements()


# -- the env and the server on a real phone ----------------------------------------------------------------------

def test_the_env_runs_a_settings_task_on_the_real_phone_through_the_server(fake):
    import gymnasium as gym

    import rlfactory_envs  # noqa: F401

    fake.configure(outputs={**fake.config["outputs"], **settings_outputs(wifi="1")})
    env = gym.make("rlf/Android-v0", backend="adb", serial=SERIAL, adb_path=str(fake.path),
                   templates=["SystemWifiTurnOn"]).unwrapped
    try:
        obs, info = env.reset(seed=0)
        assert info["task"]["template"] == "SystemWifiTurnOn" and "text='Wi-Fi'" in obs
        assert shell("svc", "wifi", "disable") in fake.commands()  # the task's setup: Wi-Fi off
        assert shell("input", "keyevent", "KEYCODE_HOME") in fake.commands()
        obs, *_ = env.step('<tool_call>{"name": "click", "arguments": {"index": 3}}</tool_call>')
        assert shell("input", "tap", "956", "350") in fake.commands()
        *_, reward, terminated, _, info = env.step('Action: {"action_type": "status", "goal_status": "complete"}')
        assert terminated and reward == 1.0 and info["android_eval"]["subgoals"]["wifi on"]
    finally:
        env.close()


def test_a_real_phone_refuses_templates_it_cannot_set_up_and_a_second_episode_at_once(fake):
    import gymnasium as gym

    import rlfactory_envs  # noqa: F401
    from rlfactory_envs.kernel.errors import ConfigError
    from rlfactory_tool_servers.android.sessions import DeviceStore, RealPhone, short_hash

    with pytest.raises(ConfigError, match="'ContactsAddContact' cannot run with backend='adb'"):
        gym.make("rlf/Android-v0", backend="adb", serial=SERIAL, templates=["ContactsAddContact"])
    fake.configure(outputs={**fake.config["outputs"], **settings_outputs()})
    store = DeviceStore(1, make=RealPhone(SERIAL, str(fake.path)), exclusive=True)
    with pytest.raises(DeviceError, match="cannot run on a real phone"):
        store.open("a", "ContactsAddContact", 0, None, "t3a")
    store.open("a", "SystemBluetoothTurnOn", 0, None, "t3a")
    with pytest.raises(DeviceError, match="in use by another episode") as refused:
        store.open("b", "SystemBluetoothTurnOn", 0, None, "t3a")
    assert f"#{short_hash('a')})" in str(refused.value) and "'a'" not in str(refused.value)
    store.close("a")
    store.open("b", "SystemBluetoothTurnOn", 0, None, "t3a")
