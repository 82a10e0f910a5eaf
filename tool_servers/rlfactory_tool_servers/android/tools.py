"""AndroidWorld's action space, written once as tools over the phones of a ``DeviceStore``, one per episode (the
episode the request's ``_meta`` names; see ``server`` for the whole contract)."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from rlfactory_tool_servers.android.phone.actions import perform
from rlfactory_tool_servers.android.phone.device import DeviceError
from rlfactory_tool_servers.android.sessions import DeviceStore, Session
from rlfactory_tool_servers.toolset import DEFAULT_EPISODE, READ_ONLY, Episode, Toolset, tool

ENV_TOOLS = ("device_open", "device_verify", "device_close")
"""The tools an env calls itself and hides from the model."""


class AndroidTools(Toolset):
    """The action tools, ``get_screen`` and the env's tools. A real phone's calls (adb commands, seconds each) run
    in a worker thread (``blocking``), so they never stall the server's loop; a simulated phone's run inline
    (microseconds). Each acts on the episode's own phone: a closed world."""

    annotations = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

    def __init__(self, store: DeviceStore | None = None):
        self.store = store if store is not None else DeviceStore()
        self.blocking = self.store.exclusive

    @tool
    def click(self, index: int, episode: Episode = DEFAULT_EPISODE) -> str:
        """Tap the UI element with this index on the current screen."""
        return self._act(episode, "click", {"index": index})

    @tool
    def long_press(self, index: int, episode: Episode = DEFAULT_EPISODE) -> str:
        """Long-press the UI element with this index on the current screen."""
        return self._act(episode, "long_press", {"index": index})

    @tool
    def double_tap(self, index: int, episode: Episode = DEFAULT_EPISODE) -> str:
        """Double-tap the UI element with this index on the current screen."""
        return self._act(episode, "double_tap", {"index": index})

    @tool
    def input_text(self, index: int, text: str, clear_text: bool = False, episode: Episode = DEFAULT_EPISODE) -> str:
        """Type text into the editable text field with this index: the field is tapped, the text typed (after what
        it holds, unless clear_text is true) and Enter pressed, so there is no need to tap the field first."""
        return self._act(episode, "input_text", {"index": index, "text": text, "clear_text": clear_text})

    @tool
    def keyboard_enter(self, episode: Episode = DEFAULT_EPISODE) -> str:
        """Press the Enter key."""
        return self._act(episode, "keyboard_enter", {})

    @tool
    def scroll(self, direction: str, index: int | None = None, episode: Episode = DEFAULT_EPISODE) -> str:
        """Scroll the screen, or the scrollable UI element with this index, in a direction (up, down, left, right).
        To see what is further down a list, scroll down."""
        return self._act(episode, "scroll", {"direction": direction, "index": index})

    @tool
    def swipe(self, direction: str, episode: Episode = DEFAULT_EPISODE) -> str:
        """Swipe the screen in a direction (up, down, left, right); the content moves the other way: swipe up to see
        what is further down."""
        return self._act(episode, "swipe", {"direction": direction})

    @tool
    def navigate_back(self, episode: Episode = DEFAULT_EPISODE) -> str:
        """Go back (closes the keyboard first, then a dialog, then the page)."""
        return self._act(episode, "navigate_back", {})

    @tool
    def navigate_home(self, episode: Episode = DEFAULT_EPISODE) -> str:
        """Go to the home screen."""
        return self._act(episode, "navigate_home", {})

    @tool
    def open_app(self, app_name: str, episode: Episode = DEFAULT_EPISODE) -> str:
        """Open an app by its name (e.g. Contacts, Clock, Settings); fails if no such app is installed."""
        return self._act(episode, "open_app", {"app_name": app_name})

    @tool
    def wait(self, episode: Episode = DEFAULT_EPISODE) -> str:
        """Wait a few seconds for the screen to update."""
        return self._act(episode, "wait", {})

    @tool
    def status(self, goal_status: str, episode: Episode = DEFAULT_EPISODE) -> str:
        """End the task: goal_status "complete" when the goal is done, "infeasible" when it cannot be done."""
        return self._act(episode, "status", {"goal_status": goal_status})

    @tool
    def answer(self, text: str, episode: Episode = DEFAULT_EPISODE) -> str:
        """Answer the user's question with text; this ends the task."""
        return self._act(episode, "answer", {"text": text})

    @tool(annotations=READ_ONLY)
    def get_screen(self, episode: Episode = DEFAULT_EPISODE) -> str:
        """Show the current screen's UI elements again."""
        return self._phone(episode).screen()

    @tool
    def device_open(self, template: str = "", seed: int = 0, params: str = "", observation: str = "t3a",
                    episode: Episode = DEFAULT_EPISODE) -> str:
        """Start a phone for this episode, set up for a task instance (template name and seed, or parameters), and
        show its first screen."""
        try:
            parsed = json.loads(params) if params else None
        except json.JSONDecodeError as exc:
            raise ToolError(f"params must be a JSON object: {exc}") from None
        if parsed is not None and not isinstance(parsed, dict):
            raise ToolError("params must be a JSON object")
        try:
            opened = self.store.open(episode, template or None, seed, parsed, observation)
        except DeviceError as exc:
            raise ToolError(str(exc)) from None
        return opened.screen()

    @tool
    def device_verify(self, answer: str = "", episode: Episode = DEFAULT_EPISODE) -> dict[str, Any]:
        """The verdict on this episode's phone for its task, as JSON, given the ending action as AndroidWorld's
        action JSON (or the status/answer given to this server)."""
        opened = self._phone(episode)
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

    @tool
    def device_close(self, episode: Episode = DEFAULT_EPISODE) -> str:
        """Drop this episode's phone."""
        return "closed" if self.store.close(episode) else "no phone"

    def _act(self, episode: str, action_type: str, arguments: dict[str, Any]) -> str:
        opened = self._phone(episode)
        try:
            note = perform(opened.device, action_type, {k: v for k, v in arguments.items() if v is not None})
        except DeviceError as exc:
            raise ToolError(f"{exc}. Nothing changed.") from None
        if opened.device.ending is not None:
            return note
        return f"{note}\nThe screen now:\n{opened.screen()}"

    def _phone(self, episode: str) -> Session:
        try:
            return self.store.get(episode)
        except DeviceError as exc:
            raise ToolError(str(exc)) from None
