"""TravelPlanner's Notebook, one per episode: the episode's most recent tool result, and the entries written from it.

Upstream's ``NotebookWrite[Short Description]`` stores the data of the agent's last search under a short
description, and the planner reads every entry as ``{index, Short Description, Content}``. Here each episode (the
request's ``_meta`` names it) holds its own notebook, dropped when the env ends the episode (``close``); the
store is bounded all the same: at most ``max_entries`` entries per
episode, descriptions of at most ``max_description_chars`` characters, and at most ``max_episodes`` episodes, the
least recently used forgotten first. No MCP in here: misuse raises ``NotebookError`` with a message for the model.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

__all__ = ["EMPTY_NOTEBOOK_TEXT", "NotebookError", "NotebookLimits", "Notebooks", "format_entries"]

EMPTY_NOTEBOOK_TEXT = "The Notebook is empty."


class NotebookError(Exception):
    """A notebook call the model can correct: nothing to write yet, a full notebook, a bad description."""


@dataclass(frozen=True)
class NotebookLimits:
    """Bounds on what the notebooks may hold."""

    max_entries: int = 64
    max_description_chars: int = 200
    max_episodes: int = 4096


@dataclass
class _Notebook:
    last_result: str | None = None
    entries: list[tuple[str, str]] = field(default_factory=list)


def format_entries(entries: list[tuple[str, str]]) -> str:
    """Every ``(description, content)`` entry as its ``index``, ``Short Description`` and ``Content`` lines, a
    blank line between entries."""
    if not entries:
        return EMPTY_NOTEBOOK_TEXT
    return "\n\n".join(f"index: {index}\nShort Description: {description}\nContent:\n{content}"
                       for index, (description, content) in enumerate(entries))


class Notebooks:
    """The notebooks of all episodes; safe to share between threads."""

    def __init__(self, limits: NotebookLimits = NotebookLimits()) -> None:
        self.limits = limits
        self._books: OrderedDict[str, _Notebook] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._books)

    def _notebook(self, episode: str, *, create: bool) -> _Notebook | None:
        """``episode``'s state, now the most recently used (created if asked, evicting the least recent)."""
        state = self._books.get(episode)
        if state is not None:
            self._books.move_to_end(episode)
        elif create:
            state = self._books[episode] = _Notebook()
            while len(self._books) > self.limits.max_episodes:
                self._books.popitem(last=False)
        return state

    def record(self, episode: str, result: str) -> None:
        """``result`` is now ``episode``'s most recent tool result, the one ``write`` stores."""
        with self._lock:
            self._notebook(episode, create=True).last_result = result

    def write(self, episode: str, description: str) -> int:
        """Store ``episode``'s most recent result under ``description``; its index in the notebook."""
        limit = self.limits.max_description_chars
        if not description.strip():
            raise NotebookError("the short description must not be empty")
        if len(description) > limit:
            raise NotebookError(f"the short description is {len(description)} characters long; the limit is {limit}")
        with self._lock:
            state = self._notebook(episode, create=False)
            if state is None or state.last_result is None:
                raise NotebookError("there is nothing to record yet: call a search tool (search_flights, "
                                    "distance_matrix, search_accommodations, search_restaurants, search_attractions "
                                    "or search_cities) first, then write its result into the Notebook")
            if len(state.entries) >= self.limits.max_entries:
                raise NotebookError(f"the Notebook is full: it holds at most {self.limits.max_entries} entries "
                                    "(read it with notebook_read)")
            state.entries.append((description, state.last_result))
            return len(state.entries) - 1

    def close(self, episode: str) -> bool:
        """Drop ``episode``'s notebook; whether it had one."""
        with self._lock:
            return self._books.pop(episode, None) is not None

    def entries(self, episode: str) -> list[tuple[str, str]]:
        """``episode``'s entries, ``(description, content)`` in the order written."""
        with self._lock:
            state = self._notebook(episode, create=False)
            return list(state.entries) if state is not None else []

    def read(self, episode: str) -> str:
        """``episode``'s notebook as text (see ``format_entries``)."""
        return format_entries(self.entries(episode))
