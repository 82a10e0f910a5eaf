"""AndroidWorld's action space as MCP tools over phones kept per episode.

The tools the model calls are AndroidWorld's JSON action types with its argument names: ``click(index)``,
``long_press(index)``, ``double_tap(index)``, ``input_text(index, text, clear_text)``, ``keyboard_enter()``,
``scroll(direction, index)``, ``swipe(direction)``, ``navigate_back()``, ``navigate_home()``,
``open_app(app_name)``, ``wait()``, ``status(goal_status)``, ``answer(text)``, plus ``get_screen()``. An action
answers with a line saying what happened and the screen after it; an action that cannot be done is an error that
says why, and the phone did not change. ``status`` and ``answer`` end the episode (the phone takes no more
actions).

``--backend adb --serial S`` drives a real emulator or phone instead (``phone.adb``), one episode at a
time; only templates whose setup and check adb reaches (the settings ones) run there.

The env's own tools, which it hides from the model: ``device_open(template, seed, params, observation)`` makes the
episode's phone for a task instance and answers its first screen, ``device_verify(answer)`` answers the verdict
on the final state as JSON (``success``, ``progress``, ``subgoals``, ``reason``, ``actions``), ``device_close()``
drops the phone.

The episode a call belongs to comes in the request's ``_meta`` (``toolset.Episode``; a call without one acts on the
``"default"`` phone); every tool has a batched form, so the actions of a thousand episodes stepped together are one
MCP request. The tools are written once, in ``tools``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from mcp.server.mcpserver import MCPServer

from rlfactory_tool_servers.android.phone.ui import OBSERVATIONS
from rlfactory_tool_servers.android.sessions import DEFAULT_IDLE_S, DEFAULT_MAX_DEVICES, DeviceStore, RealPhone
from rlfactory_tool_servers.android.tools import ENV_TOOLS, AndroidTools
from rlfactory_tool_servers.toolset import publish_toolsets

__all__ = ["AndroidTools", "ENV_TOOLS", "build_server", "create_server", "describe_data", "options_parser"]

PROG = "python -m rlfactory_tool_servers.android"
REAL_PHONE_IDLE_S = 300.0


def create_server(tools: AndroidTools) -> MCPServer:
    """An MCP server named "android" with the action tools, ``get_screen`` and the env's tools, each batched."""
    return publish_toolsets("android", [tools])


def options_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The android server's own options (the transport options are ``rlfactory_tool_servers.launch``'s)."""
    parser = argparse.ArgumentParser(prog=prog, description="MCP server: AndroidWorld's actions on simulated phones "
                                                            "(one per episode) or on a real one over ADB.")
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
    return create_server(AndroidTools(store))
