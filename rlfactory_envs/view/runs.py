"""What ``rlf view`` opens: each path given is a run, told apart by its content.

- a JSONL file of episode records (``rlf rollout --out``, the trainer adapters' trajectory log), or a folder of
  them (every ``*.jsonl`` in it, as one run: the adapters write one file per process): indexed (``RunIndex``);
- an ``rlf audit --json`` report: its hacks' example episodes as rows (``AuditRun``);
- anything else: a ``ConfigError`` naming the file and what ``rlf view`` reads.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import msgspec

from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.view.audit_run import AuditRun, is_audit_report
from rlfactory_envs.view.episode_fields import NotAnEpisode, decode_line
from rlfactory_envs.view.run_index import RunIndex, read_bytes

HEAD_BYTES = 1 << 20
HEAD_LINES = 20
"""The lines at a file's head that must hold an episode record for it to be taken as a trajectory file."""
MAX_REPORT_BYTES = 64 << 20
READS = "rlf view reads what `rlf rollout --out`, `rlf audit --json` and the trainer adapters' trajectory log write"

Run = RunIndex | AuditRun


def open_run(path: str | Path) -> Run:
    """The run ``path`` holds, not yet indexed (``RunIndex.start``); ``ConfigError`` for what is not one."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file or folder; {READS}")
    sources = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    if not sources:
        raise ConfigError(f"{path} is a folder with no .jsonl file in it; {READS}")
    if not path.is_dir() and 0 < path.stat().st_size <= MAX_REPORT_BYTES:
        report = _report(path)
        if report is not None:
            return AuditRun(path, report)
    for source in sources:
        _check_trajectories(source)
    return RunIndex(sources)


def _report(path: Path) -> dict[str, Any] | None:
    """The ``rlf audit --json`` report ``path`` holds, or ``None``."""
    head = read_bytes(path, 0, HEAD_BYTES)
    if not head.lstrip().startswith(b"{") or _has_episode(head):
        return None
    try:
        found = json.loads(path.read_bytes())
    except ValueError:
        return None
    return found if is_audit_report(found) else None


def _has_episode(text: bytes) -> bool:
    """Whether one of the first ``HEAD_LINES`` non-empty lines of ``text`` is an episode record."""
    lines = (line for line in text[:HEAD_BYTES].split(b"\n") if line.strip())
    for line in itertools.islice(lines, HEAD_LINES):
        try:
            decode_line(line)
            return True
        except (msgspec.DecodeError, NotAnEpisode):
            continue
    return False


def _check_trajectories(source: Path) -> None:
    """``ConfigError`` unless ``source`` is empty or holds an episode record among its first lines."""
    head = read_bytes(source, 0, HEAD_BYTES)
    if head.strip() and not _has_episode(head):
        raise ConfigError(f"{source} is not a trajectory file: none of its first {HEAD_LINES} lines is an episode "
                          f"record (a JSON object with env_id and reward); {READS}")
