"""Task sources: an indexed, id-addressable, named collection of one family's tasks, and the one process-wide cache
that every family loads them through (``shared_tasks``), keyed on the data file's version."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, Generic, Protocol, TypeVar, overload


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


def shared_tasks(load: Callable[..., TaskSource[Any]], path: str | os.PathLike[str] | None,
                 *args: Hashable) -> TaskSource[Any]:
    """``load(path, *args)``, called once per loader, file version of ``path`` and ``args`` and shared by every env
    of the process: a batch of thousands of envs holds one copy of the dataset, and a file that changes on disk
    is read again. ``path`` may be ``None`` (a loader's embedded default); a missing file raises
    ``FileNotFoundError`` naming it."""
    if path and not os.path.exists(path):
        raise FileNotFoundError(f"no such file: {path}")
    return _cached(load, str(path) if path else None, file_version(path), args)


@functools.lru_cache(maxsize=32)
def _cached(load: Callable[..., TaskSource[Any]], path: str | None, version: tuple[str | None, int, int],
            args: tuple[Hashable, ...]) -> TaskSource[Any]:
    return load(path, *args)
