"""AndroidWorld's action space as MCP tools over phones kept per session.

The tools the model calls are AndroidWorld's JSON action types with its argument names: ``click(index)``,
``long_press(index)``, ``double_tap(index)``, ``input_text(index, text, clear_text)``, ``keyboard_enter()``,
``scroll(direction, index)``, ``swipe(direction)``, ``navigate_back()``, ``navigate_home()``,
``open_app(app_name)``, ``wait()``, ``status(goal_status)``, ``answer(text)``, plus ``get_screen()``. An action
answers with a line saying what happened and the screen after it; an action that cannot be done is an error that
says why, and the phone did not change. ``status`` and ``answer`` end the episode (the phone takes no more
actions).

``--backend adb --serial S`` drives a real emulator or phone instead (``android_device.adb``), one episode at a
time; only templates whose setup and check adb reaches (the settings ones) run there.

The env's own tools, which it hides from the model: ``device_open(template, seed, params, observation)`` makes the
session's phone for a task instance and answers its first screen, ``device_verify(answer)`` answers the verdict
on the final state as JSON (``success``, ``progress``, ``subgoals``, ``reason``, ``actions``), ``device_close()``
drops the phone.

Every tool takes a ``session`` (default ``"default"``), which an env binds to an id per episode; every tool has a
batched form, so the actions of a thousand episodes stepped together are one MCP request.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from rlfactory_tool_servers.android.sessions import DEFAULT_IDLE_S, DEFAULT_MAX_DEVICES, DeviceStore, RealPhone
from rlfactory_tool_servers.android.phone.actions import perform
from rlfactory_tool_servers.android.phone.device import DeviceError
from rlfactory_tool_servers.android.phone.ui import OBSERVATIONS
from rlfactory_tool_servers.batched_tool import add_batched_tool

__all__ = ["AndroidService", "build_server", "create_server", "describe_data", "options_parser"]

PROG = "python -m rlfactory_tool_servers.android"
DEFAULT_SESSION = "default"
MAX_SESSION_CHARS = 200
REAL_PHONE_IDLE_S = 300.0
ENV_TOOLS = ("device_open", "device_verify", "device_close")
"""The tools an env calls itself and hides from the model."""

DESCRIPTIONS = {
    "click": "Tap the UI element with this index on the current screen.",
    "long_press": "Long-press the UI element with this index on the current screen.",
    "double_tap": "Double-tap the UI element with this index on the current screen.",
    "input_text": "Type text into the editable text field with this index: the field is tapped, the text typed "
                  "(after what it holds, unless clear_text is true) and Enter pressed, so there is no need to tap "
                  "the field first.",
    "keyboard_enter": "Press the Enter key.",
    "scroll": "Scroll the screen, or the scrollable UI element with this index, in a direction (up, down, left, "
              "right). To see what is further down a list, scroll down.",
    "swipe": "Swipe the screen in a direction (up, down, left, right); the content moves the other way: swipe up "
             "to see what is further down.",
    "navigate_back": "Go back (closes the keyboard first, then a dialog, then the page).",
    "navigate_home": "Go to the home screen.",
    "open_app": "Open an app by its name (e.g. Contacts, Clock, Settings); fails if no such app is installed.",
    "wait": "Wait a few seconds for the screen to update.",
    "status": "End the task: goal_status \"complete\" when the goal is done, \"infeasible\" when it cannot be done.",
    "answer": "Answer the user's question with text; this ends the task.",
    "get_screen": "Show the current screen's UI elements again.",
    "device_open": "Start a phone for this session, set up for a task instance (template name and seed, or "
                   "parameters), and show its first screen.",
    "device_verify": "The verdict on this session's phone for its task, as JSON, given the ending action as "
                     "AndroidWorld's action JSON (or the status/answer given to this server).",
    "device_close": "Drop this session's phone.",
}


def _session(value: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_SESSION_CHARS:
        raise ToolError(f"session must be a non-empty string of at most {MAX_SESSION_CHARS} characters")
    return value


class AndroidService:
    """The tools' logic over a ``DeviceStore``, with no MCP in it."""

    def __init__(self, store: DeviceStore | None = None):
        self.store = store if store is not None else DeviceStore()

    def act(self, session: str, action_type: str, arguments: dict[str, Any]) -> str:
        opened = self._get(session)
        try:
            note = perform(opened.device, action_type, {k: v for k, v in arguments.items() if v is not None})
        except DeviceError as exc:
            raise ToolError(f"{exc}. Nothing changed.") from None
        if opened.device.ending is not None:
            return note
        return f"{note}\nThe screen now:\n{opened.screen()}"

    def screen(self, session: str) -> str:
        return self._get(session).screen()

    def open(self, session: str, template: str, seed: int, params: str, observation: str) -> str:
        try:
            parsed = json.loads(params) if params else None
        except json.JSONDecodeError as exc:
            raise ToolError(f"params must be a JSON object: {exc}") from None
        if parsed is not None and not isinstance(parsed, dict):
            raise ToolError("params must be a JSON object")
        try:
            opened = self.store.open(_session(session), template or None, seed, parsed, observation)
        except DeviceError as exc:
            raise ToolError(str(exc)) from None
        return opened.screen()

    def verify(self, session: str, answer: str) -> dict[str, Any]:
        opened = self._get(session)
        ending = opened.device.ending
        if answer:
            try:
                ending = json.loads(answer)
            except json.JSONDecodeError:
                ending = {"action_type": "answer", "text": answer}
            if not isinstance(ending, dict):
                ending = {"action_type": "answer", "text": str(ending)}
        verdict = opened.verdict(ending)
        return {**verdict.to_dict(), "actions": opened.device.actions}

    def close(self, session: str) -> str:
        return "closed" if self.store.close(_session(session)) else "no phone"

    def _get(self, session: str):
        try:
            return self.store.get(_session(session))
        except DeviceError as exc:
            raise ToolError(str(exc)) from None


def create_server(service: AndroidService) -> MCPServer:
    """An MCP server named "android" with the action tools, ``get_screen`` and the env's tools, each batched. A
    real phone's calls (adb commands, seconds each) run in a worker thread, so they never stall the server's loop;
    a simulated phone's run inline (microseconds)."""
    blocking = service.store.exclusive

    async def run(fn: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args) if blocking else fn(*args)

    async def act(session: str, action_type: str, arguments: dict[str, Any]) -> str:
        return await run(service.act, session, action_type, arguments)

    async def click(index: int, session: str = DEFAULT_SESSION) -> str:
        return await act(session, "click", {"index": index})

    async def long_press(index: int, session: str = DEFAULT_SESSION) -> str:
        return await act(session, "long_press", {"index": index})

    async def double_tap(index: int, session: str = DEFAULT_SESSION) -> str:
        return await act(session, "double_tap", {"index": index})

    async def input_text(index: int, text: str, clear_text: bool = False, session: str = DEFAULT_SESSION) -> str:
        return await act(session, "input_text", {"index": index, "text": text, "clear_text": clear_text})

    async def keyboard_enter(session: str = DEFAULT_SESSION) -> str:
        return await act(session, "keyboard_enter", {})

    async def scroll(direction: str, index: int | None = None, session: str = DEFAULT_SESSION) -> str:
        return await act(session, "scroll", {"direction": direction, "index": index})

    async def swipe(direction: str, session: str = DEFAULT_SESSION) -> str:
        return await act(session, "swipe", {"direction": direction})

    async def navigate_back(session: str = DEFAULT_SESSION) -> str:
        return await act(session, "navigate_back", {})

    async def navigate_home(session: str = DEFAULT_SESSION) -> str:
        return await act(session, "navigate_home", {})

    async def open_app(app_name: str, session: str = DEFAULT_SESSION) -> str:
        return await act(session, "open_app", {"app_name": app_name})

    async def wait(session: str = DEFAULT_SESSION) -> str:
        return await act(session, "wait", {})

    async def status(goal_status: str, session: str = DEFAULT_SESSION) -> str:
        return await act(session, "status", {"goal_status": goal_status})

    async def answer(text: str, session: str = DEFAULT_SESSION) -> str:
        return await act(session, "answer", {"text": text})

    async def get_screen(session: str = DEFAULT_SESSION) -> str:
        return await run(service.screen, session)

    async def device_open(template: str = "", seed: int = 0, params: str = "", observation: str = "t3a",
                          session: str = DEFAULT_SESSION) -> str:
        return await run(service.open, session, template, seed, params, observation)

    async def device_verify(answer: str = "", session: str = DEFAULT_SESSION) -> dict[str, Any]:
        return await run(service.verify, session, answer)

    async def device_close(session: str = DEFAULT_SESSION) -> str:
        return await run(service.close, session)

    server = MCPServer("android", log_level="WARNING")
    for fn in (click, long_press, double_tap, input_text, keyboard_enter, scroll, swipe, navigate_back,
               navigate_home, open_app, wait, status, answer, get_screen, device_open, device_verify, device_close):
        add_batched_tool(server, fn, name=fn.__name__, description=DESCRIPTIONS[fn.__name__])
    return server


def options_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The android server's own options (the transport options are ``rlfactory_tool_servers.launch``'s)."""
    parser = argparse.ArgumentParser(prog=prog, description="MCP server: AndroidWorld's actions on simulated phones "
                                                            "(one per session) or on a real one over ADB.")
    parser.add_argument("--max-devices", type=int, default=DEFAULT_MAX_DEVICES,
                        help=f"the most phones kept at once (default {DEFAULT_MAX_DEVICES}); the least recently "
                             "used is dropped past it")
    parser.add_argument("--idle-s", type=float, default=DEFAULT_IDLE_S,
                        help=f"drop a phone unused this many seconds (default {DEFAULT_IDLE_S:.0f}; with --backend "
                             f"adb {REAL_PHONE_IDLE_S:.0f}: a client that died frees the real phone that soon)")
    parser.add_argument("--backend", choices=("sim", "adb"), default="sim",
                        help="sim: simulated phones (default); adb: a real emulator or phone, one episode at a time")
    parser.add_argument("--serial", default=None,
                        help="with --backend adb: the device as `adb devices` lists it, e.g. emulator-5554 (default: "
                             "the only one connected)")
    parser.add_argument("--adb-path", default="adb", help="with --backend adb: the adb executable (default: adb)")
    return parser


def describe_data(options: argparse.Namespace) -> str:
    if options.backend == "adb":
        return f"the real phone {options.serial or '(the only one connected)'} over {options.adb_path}"
    return f"simulated phones (at most {options.max_devices:,} at once; screens as {'/'.join(OBSERVATIONS)})"


def build_server(argv: Sequence[str], prog: str = PROG) -> MCPServer:
    parser = options_parser(prog)
    options = parser.parse_args(list(argv))
    if options.max_devices < 1:
        parser.error("--max-devices must be at least 1")
    if options.idle_s <= 0:
        parser.error("--idle-s must be positive")
    if options.backend == "adb":
        idle_s = options.idle_s if options.idle_s != DEFAULT_IDLE_S else REAL_PHONE_IDLE_S
        store = DeviceStore(1, idle_s, RealPhone(options.serial, options.adb_path), exclusive=True)
    else:
        store = DeviceStore(options.max_devices, options.idle_s)
    return create_server(AndroidService(store))
