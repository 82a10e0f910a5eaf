"""Notes (after Markor): the notebook's folders and notes, an editor, and dialogs to create, delete and move.

Routes: ``main`` (the file list of ``folder``, "" for the notebook's root: its sub-folders first by name, then its
notes newest first or by name, a toolbar toggle), ``editor`` (``note``).

- Tapping a folder opens it (``Navigate up`` or back returns); tapping a note opens the editor.
- The editor saves only on ``Save``: leaving it without saving keeps the note's old content.
- ``Create new file`` asks for a name (used as typed, extension included) and opens the new, empty note;
  ``Create folder`` asks for a folder name and makes it inside the current folder.
- A long press on a note offers ``Delete`` (behind a confirmation) and ``Move`` (a choice of the other folders,
  ``Notebook root`` for the root).
- Names hold no ``/`` and are unique within their folder; the notebook holds at most ``MAX_NOTES`` notes and
  ``MAX_FOLDERS`` folders.
"""

from __future__ import annotations

from rlfactory_tool_servers.android.phone.apps.widgets import button, confirm, icon_button, row, text_field, up_button
from rlfactory_tool_servers.android.phone.device import Device, DeviceError, Dialog, ListBlock, Page, Screen
from rlfactory_tool_servers.android.phone.state import Note

ORDER = 60
MAX_NOTES = 200
MAX_FOLDERS = 12
MAX_NAME_CHARS = 80
ROOT_LABEL = "Notebook root"


class NotesApp:
    name = "Markor"
    package = "net.gsantner.markor"
    aliases = ("Notes", "Markor app")

    def render(self, device: Device, page: Page) -> Screen:
        if page.route == "editor":
            return _editor(device, page)
        return _files(device, page)


# -- the file list -------------------------------------------------------------------------------------------

def _files(device: Device, page: Page) -> Screen:
    folder = page.args.get("folder", "")
    title = folder or "Markor"
    dialog = _files_dialog(device, page, folder)
    if dialog is not None:
        return Screen(title, dialog=dialog)
    by_name = device.form("sort") == "name"
    body: list = [up_button()] if folder else []
    body += [icon_button("Sort by date" if by_name else "Sort by name", _toggle_sort, "sort"),
             icon_button("Create folder", lambda d: d.open_dialog("new_folder"), "new_folder"),
             ListBlock("notes_list", _file_rows(device, folder, by_name), empty_text="This folder is empty"),
             icon_button("Create new file", lambda d: d.open_dialog("new_file"), "fab")]
    return Screen(title, body)


def _file_rows(device: Device, folder: str, by_name: bool) -> list:
    state = device.state
    folders = sorted((f for f in state.note_folders if _parent(f) == folder), key=str.casefold)
    notes = [n for n in state.notes if n.folder == folder]
    if by_name:
        notes.sort(key=lambda n: n.name.casefold())
    else:
        notes.sort(key=lambda n: (-n.modified.timestamp(), n.name.casefold()))
    items = [row(_leaf(f), _open_folder(f), "folder_name", description="Folder") for f in folders]
    items += [row(n.name, _open_note(n), "file_name", long_press=_note_menu(n),
                  description=n.modified.strftime("Modified %b %-d, %Y %-I:%M %p")) for n in notes]
    return items


def _parent(folder: str) -> str:
    return folder.rsplit("/", 1)[0] if "/" in folder else ""


def _leaf(folder: str) -> str:
    return folder.rsplit("/", 1)[-1]


def _toggle_sort(device: Device) -> str:
    by_name = device.form("sort") == "name"
    device.page.form["sort"] = "date" if by_name else "name"
    return "Sorted notes by date, newest first." if by_name else "Sorted notes by name."


def _open_folder(folder: str):
    def open_folder(device: Device) -> None:
        device.push("main", folder=folder)
    return open_folder


def _open_note(note: Note):
    def open_note(device: Device) -> str:
        device.push("editor", note=note)
        device.page.form["content"] = note.content
        return f"Opened {note.name} in the editor."
    return open_note


def _note_menu(note: Note):
    def open_menu(device: Device) -> str:
        device.open_dialog("file_actions", note=note)
        return f"Opened the menu of {note.name}."
    return open_menu


def _files_dialog(device: Device, page: Page, folder: str) -> Dialog | None:
    note: Note | None = page.dialog_args.get("note")
    if page.dialog == "new_file":
        return _name_dialog("Create new file", "new_file_name", "File name", _create_note)
    if page.dialog == "new_folder":
        return _name_dialog("Create folder", "new_folder_name", "Folder name", _create_folder)
    if page.dialog == "file_actions" and note is not None:
        return Dialog(note.name, [row("Delete", lambda d: d.open_dialog("delete", note=note), "file_action"),
                                  row("Move", lambda d: d.open_dialog("move", note=note), "file_action"),
                                  button("Cancel", _cancel, "android:id/button2")])
    if page.dialog == "delete" and note is not None:
        return confirm("Delete file", f"Delete {note.name} permanently?", "Delete", _delete(note))
    if page.dialog == "move" and note is not None:
        targets = [""] + sorted(device.state.note_folders, key=str.casefold)
        rows = [row(target or ROOT_LABEL, _move(note, target), "move_target") for target in targets
                if target != folder]
        return Dialog("Move to", rows + [button("Cancel", _cancel, "android:id/button2")], f"Move {note.name} to:")
    return None


def _name_dialog(title: str, resource_id: str, hint: str, on_ok) -> Dialog:
    return Dialog(title, [text_field("name", hint, resource_id), button("Cancel", _cancel, "android:id/button2"),
                          button("OK", on_ok, "android:id/button1")])


def _cancel(device: Device) -> str:
    device.close_dialog()
    return "Cancelled."


def _typed_name(device: Device, what: str) -> str:
    name = device.form("name").strip()
    if not name:
        raise DeviceError(f"type a {what} name into the name field before pressing OK")
    if "/" in name or len(name) > MAX_NAME_CHARS:
        raise DeviceError(f"a {what} name has at most {MAX_NAME_CHARS} characters and no '/'")
    return name


def _create_note(device: Device) -> str:
    name = _typed_name(device, "file")
    folder = device.page.args.get("folder", "")
    state = device.state
    if any(n.name == name and n.folder == folder for n in state.notes):
        raise DeviceError(f"a file named {name!r} already exists in this folder")
    if len(state.notes) >= MAX_NOTES:
        raise DeviceError(f"the notebook holds at most {MAX_NOTES} notes; delete one first")
    note = Note(name, "", folder, state.now)
    state.notes.append(note)
    device.close_dialog()
    device.page.form.pop("name", None)
    _open_note(note)(device)
    return f"Created {name}; the editor is open."


def _create_folder(device: Device) -> str:
    name = _typed_name(device, "folder")
    parent = device.page.args.get("folder", "")
    path = f"{parent}/{name}" if parent else name
    state = device.state
    if path in state.note_folders:
        raise DeviceError(f"a folder named {name!r} already exists here")
    if len(state.note_folders) >= MAX_FOLDERS:
        raise DeviceError(f"the notebook holds at most {MAX_FOLDERS} folders")
    state.note_folders.append(path)
    device.close_dialog()
    device.page.form.pop("name", None)
    return f"Created the folder {name}."


def _delete(note: Note):
    def delete(device: Device) -> str:
        device.state.notes = [n for n in device.state.notes if n is not note]
        return f"Deleted {note.name}."
    return delete


def _move(note: Note, target: str):
    def move(device: Device) -> str:
        if any(n.name == note.name and n.folder == target for n in device.state.notes):
            raise DeviceError(f"{target or ROOT_LABEL} already holds a file named {note.name!r}")
        note.folder = target
        device.close_dialog()
        return f"Moved {note.name} to {target or ROOT_LABEL}."
    return move


# -- the editor ----------------------------------------------------------------------------------------------

def _editor(device: Device, page: Page) -> Screen:
    note: Note = page.args["note"]
    return Screen(note.name, [up_button(), text_field("content", "Start writing...", "note_content", multiline=True),
                              icon_button("Save", _save(note), "save")])


def _save(note: Note):
    def save(device: Device) -> str:
        note.content = device.form("content")
        note.modified = device.state.now
        return f"Saved {note.name}."
    return save


APP = NotesApp()
