"""Markor tasks, after AndroidWorld's MarkorCreateNote, MarkorDeleteNote, MarkorEditNote, MarkorCreateFolder and
MarkorMoveNote, plus an infeasible deletion of a note that is not there.

Distractor notes have names like the target's (the same words with another extension, swapped, or with a suffix);
the notes' modification times are spread over three weeks, so a target sometimes sits below the first screen.
Markor's notes are files on shared storage, so every check here reads what ``adb shell`` can (``real_device``).
"""

from __future__ import annotations

import datetime
import math
import random

from rlfactory_tool_servers.android.phone.plans import DONE, INFEASIBLE, LongPress, Open, Scroll, Tap, Target, Type
from rlfactory_tool_servers.android.phone.state import DEVICE_NOW, Note, PhoneState
from rlfactory_tool_servers.android.phone.tasks.base import TaskTemplate, pick
from rlfactory_tool_servers.android.phone.tasks.names import WORDS

FOLDERS = ("Work", "Personal", "Archive", "Ideas", "Recipes", "Travel", "Projects", "Journal", "Drafts", "School")
SENTENCES = ("Buy milk, eggs and bread on the way home.", "Call the landlord about the heating.",
             "The quarterly review moved to Thursday at 10.", "Pack the charger and the passport.",
             "Try the lemon pasta recipe this weekend.", "Ask Dana for the slides from the workshop.",
             "Water the ferns every other day.", "Book the car service before the trip.",
             "Remember to back up the laptop.", "Draft the newsletter intro by Friday.",
             "Pick up the dry cleaning on Tuesday.", "Compare the three internet plans.")
HEADERS = ("Summary", "Action items", "Open questions", "Next steps", "Key dates", "Reminders", "Ideas", "To check")
PAGE = 7  # the list's page size
MARKOR = "Markor"


def _stem(rng: random.Random) -> str:
    first, second = pick(rng, WORDS, 2)
    return f"{first}_{second}"


def _lookalikes(name: str) -> list[str]:
    """File names that resemble ``name`` (``a_b.md``): another extension, the words swapped, a suffix."""
    stem, extension = name.rsplit(".", 1)
    first, second = stem.split("_", 1)
    other = "txt" if extension == "md" else "md"
    return [f"{stem}.{other}", f"{second}_{first}.{extension}", f"{stem}_old.{extension}", f"{first}.{extension}"]


def _modified(rng: random.Random) -> datetime.datetime:
    return DEVICE_NOW - datetime.timedelta(minutes=rng.randrange(30, 60 * 24 * 21))


def _notes(rng: random.Random, n: int, taken: set[str], folder: str = "",
           lookalikes: tuple[str, ...] = ()) -> list[Note]:
    """``n`` notes in ``folder`` with names outside ``taken`` (which grows): ``lookalikes`` first, then random."""
    out: list[Note] = []
    candidates = list(lookalikes)
    while len(out) < n:
        name = candidates.pop(0) if candidates else f"{_stem(rng)}.{rng.choice(('md', 'md', 'txt'))}"
        if name not in taken:
            taken.add(name)
            out.append(Note(name, rng.choice(SENTENCES), folder, _modified(rng)))
    return out


def _note_params(rng: random.Random) -> dict:
    return {"file_name": f"{_stem(rng)}.md", "text": rng.choice(SENTENCES)}


def _found(state: PhoneState, name: str, folder: str | None = None) -> list[Note]:
    return [n for n in state.notes if n.name == name and (folder is None or n.folder == folder)]


def _kept(state: PhoneState, initial: PhoneState, name: str, folder: str = "") -> bool:
    """Whether every note of ``initial`` but ``folder/name`` is still there, unchanged."""
    return all(n in state.notes for n in initial.notes if (n.name, n.folder) != (name, folder))


def _scrolls_to_end(size: int) -> list[Scroll]:
    """The scrolls that bring the last of ``size`` rows on screen (a scroll moves a page less one row)."""
    return [Scroll("down")] * max(0, math.ceil((size - PAGE) / (PAGE - 1)))


class MarkorCreateNote(TaskTemplate):
    name = "MarkorCreateNote"
    app = MARKOR
    goal = "Create a new note in Markor named {file_name} with the following text: {text}"

    def params(self, rng):
        return _note_params(rng)

    def setup(self, state, params, rng):
        lookalikes = tuple(pick(rng, _lookalikes(params["file_name"]), 2))
        state.notes = _notes(rng, rng.randint(3, 9), {params["file_name"]}, lookalikes=lookalikes)

    def plan(self, params):
        return [Open(MARKOR), Tap(Target(desc="Create new file")),
                Type(Target(rid="new_file_name"), params["file_name"]), Tap(Target(text="OK")),
                Type(Target(rid="note_content"), params["text"]), Tap(Target(desc="Save")), DONE]

    def subgoals(self, device, initial, params):
        found = _found(device.state, params["file_name"])
        return {"note created": len(found) == 1,
                "text saved": len(found) == 1 and found[0].content.strip() == params["text"],
                "other notes kept": _kept(device.state, initial, params["file_name"])}


class MarkorDeleteNote(TaskTemplate):
    name = "MarkorDeleteNote"
    app = MARKOR
    goal = "Delete the note in Markor named {file_name}."

    def params(self, rng):
        return _note_params(rng)

    def setup(self, state, params, rng):
        name = params["file_name"]
        target = Note(name, params["text"], "", _modified(rng))
        others = _notes(rng, rng.randint(6, 13), {name}, lookalikes=tuple(_lookalikes(name)))
        state.notes = others + [target]

    def plan(self, params):
        return [Open(MARKOR), LongPress(Target(text=params["file_name"], rid="file_name")),
                Tap(Target(text="Delete", rid="file_action")), Tap(Target(text="Delete")), DONE]

    def subgoals(self, device, initial, params):
        return {"note deleted": not _found(device.state, params["file_name"]),
                "other notes kept": _kept(device.state, initial, params["file_name"])}


class MarkorEditNote(TaskTemplate):
    name = "MarkorEditNote"
    app = MARKOR
    goal = "Edit {file_name} in Markor. Add to the top of the note {header}"

    def params(self, rng):
        return {**_note_params(rng), "header": f"{rng.choice(HEADERS)}: {rng.choice(WORDS)}"}

    def setup(self, state, params, rng):
        name = params["file_name"]
        others = _notes(rng, rng.randint(4, 11), {name}, lookalikes=tuple(pick(rng, _lookalikes(name), 2)))
        state.notes = others + [Note(name, params["text"], "", _modified(rng))]

    def plan(self, params):
        return [Open(MARKOR), Tap(Target(text=params["file_name"], rid="file_name")),
                Type(Target(rid="note_content"), f"{params['header']}\n{params['text']}", clear=True),
                Tap(Target(desc="Save")), DONE]

    def subgoals(self, device, initial, params):
        found = _found(device.state, params["file_name"], "")
        content = found[0].content.strip() if len(found) == 1 else ""
        header = params["header"]
        return {"header on top": content.startswith(header),
                "old text kept below": content[len(header):].strip() == params["text"],
                "other notes kept": _kept(device.state, initial, params["file_name"])}


class MarkorCreateFolder(TaskTemplate):
    name = "MarkorCreateFolder"
    app = MARKOR
    goal = "Create a new folder in Markor named {folder_name}."

    def params(self, rng):
        return {"folder_name": f"{rng.choice(FOLDERS)}_{rng.randint(2019, 2023)}"}

    def setup(self, state, params, rng):
        base, year = params["folder_name"].split("_")
        state.note_folders = [f"{base}_{int(year) - 1}", base] + pick(rng, [f for f in FOLDERS if f != base], 2)
        state.notes = _notes(rng, rng.randint(3, 8), set())

    def plan(self, params):
        return [Open(MARKOR), Tap(Target(desc="Create folder")),
                Type(Target(rid="new_folder_name"), params["folder_name"]), Tap(Target(text="OK")), DONE]

    def subgoals(self, device, initial, params):
        folders = device.state.note_folders
        return {"folder created": params["folder_name"] in folders,
                "other folders kept": all(f in folders for f in initial.note_folders),
                "notes kept": device.state.notes == initial.notes}


class MarkorMoveNote(TaskTemplate):
    name = "MarkorMoveNote"
    app = MARKOR
    goal = "In Markor, move the note {file_name} from {source_folder} to {destination_folder}."

    def params(self, rng):
        source, destination = pick(rng, FOLDERS, 2)
        return {**_note_params(rng), "source_folder": source, "destination_folder": destination}

    def setup(self, state, params, rng):
        name, source = params["file_name"], params["source_folder"]
        decoy = rng.choice([f for f in FOLDERS if f not in (source, params["destination_folder"])])
        state.note_folders = [source, params["destination_folder"], decoy]
        taken = {name}
        state.notes = (_notes(rng, rng.randint(2, 8), taken, source, tuple(_lookalikes(name)[:2]))
                       + [Note(name, params["text"], source, _modified(rng)),
                          Note(name, rng.choice(SENTENCES), decoy, _modified(rng))]
                       + _notes(rng, rng.randint(1, 4), taken, params["destination_folder"])
                       + _notes(rng, rng.randint(2, 5), taken))

    def plan(self, params):
        return [Open(MARKOR), Tap(Target(text=params["source_folder"], rid="folder_name")),
                LongPress(Target(text=params["file_name"], rid="file_name")), Tap(Target(text="Move")),
                Tap(Target(text=params["destination_folder"], rid="move_target")), DONE]

    def subgoals(self, device, initial, params):
        name, source = params["file_name"], params["source_folder"]
        moved = _found(device.state, name, params["destination_folder"])
        return {"note in destination": len(moved) == 1 and moved[0].content == params["text"],
                "note gone from source": not _found(device.state, name, source),
                "other notes kept": _kept(device.state, initial, name, source)}


class MarkorDeleteMissingNote(TaskTemplate):
    name = "MarkorDeleteMissingNote"
    app = MARKOR
    kind = "infeasible"
    goal = "Delete the note in Markor named {file_name}."
    guarded = ("notes", "note_folders")

    def params(self, rng):
        return {"file_name": f"{_stem(rng)}.md", "notes": rng.randint(10, 16)}

    def setup(self, state, params, rng):
        name = params["file_name"]
        state.notes = _notes(rng, params["notes"], {name}, lookalikes=tuple(_lookalikes(name)))

    def plan(self, params):
        return [Open(MARKOR), *_scrolls_to_end(params["notes"]), INFEASIBLE]

    def evidence(self, device, initial, params):
        return {"looked through the notes": "Markor/notes_list" in device.lists_seen_to_end}


TEMPLATES = [MarkorCreateNote(), MarkorDeleteNote(), MarkorEditNote(), MarkorCreateFolder(), MarkorMoveNote(),
             MarkorDeleteMissingNote()]
