"""Task sources: an indexed, id-addressable, named collection of one family's tasks; a runtime loads them through
``runtime.Parts.tasks``, shared by every runtime of the same data file's version."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Generic, Protocol, TypeVar, overload


class HasTaskId(Protocol):
    task_id: str


TaskT = TypeVar("TaskT", bound=HasTaskId)


class TaskSource(Sequence[TaskT], Generic[TaskT]):
    """Tasks in a fixed order, reachable by position (what ``reset(seed=...)`` draws) and by ``task_id``.

    ``name`` names the active dataset (shown in ``info["dataset"]``); ``path`` is the file it came from, or
    ``None`` for tasks built in memory.
    """

    def __init__(self, tasks: Iterable[TaskT], name: str, path: str | None = None):
        self._tasks: list[TaskT] = list(tasks)
        if not self._tasks:
            raise ValueError(f"task source {name!r} holds no tasks")
        self._by_id = {task.task_id: task for task in self._tasks}
        if len(self._by_id) != len(self._tasks):
            raise ValueError(f"task source {name!r} has repeated task ids")
        self.name = name
        self.path = path

    def __len__(self) -> int:
        return len(self._tasks)

    @overload
    def __getitem__(self, index: int) -> TaskT: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[TaskT]: ...

    def __getitem__(self, index):
        return self._tasks[index]

    def by_id(self, task_id: str) -> TaskT:
        """The task with this id; ``KeyError`` with the dataset name when there is none."""
        try:
            return self._by_id[str(task_id)]
        except KeyError:
            raise KeyError(f"no task with id {task_id!r} in dataset {self.name!r}") from None

    def __repr__(self) -> str:
        return f"TaskSource(name={self.name!r}, n={len(self)}, path={self.path!r})"


def file_version(path: str | os.PathLike[str] | None) -> tuple[str | None, int, int]:
    """``(real path, mtime_ns, size)`` of ``path``, a cache key that changes when the file does; ``(None, 0, 0)``
    for no file."""
    if not path:
        return None, 0, 0
    stat = os.stat(path)
    return os.path.realpath(path), stat.st_mtime_ns, stat.st_size
