"""What the page reads about the runs, the same for the live server and the exported file: each run's description
(``run_meta``), its table's columns (``run_columns``), its unreadable lines (``bad_lines``) and an episode's page
(``episode``)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlfactory_envs.env_spec import GENERIC_ENV_ID, is_spec_path, resolve
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.registry import FAMILIES
from rlfactory_envs.view.audit_run import AuditRun
from rlfactory_envs.view.episode_page import episode_view
from rlfactory_envs.view.run_index import read_bytes
from rlfactory_envs.view.runs import Run

FAMILY_OF = {env_id: family.name for family in FAMILIES for env_id in family.environments}
BAD_PREVIEW_BYTES = 300
BAD_LINES_SHOWN = 200
STEP_IN_NAME = re.compile(r"(?:step|ckpt|checkpoint|iter|global_step)[_-]?(\d+)", re.IGNORECASE)


@dataclass
class NamedRun:
    """A run and the name the page gives it (the file's name, made unique)."""

    name: str
    path: Path
    run: Run


@functools.lru_cache(maxsize=256)
def family_of(env_id: str) -> str:
    """The family of a registered id, or of the id an env spec file names (``generic`` when the file cannot be
    read); ``custom`` for an id this install does not know."""
    if is_spec_path(env_id):
        try:
            env_id = resolve(env_id).env_id
        except (ConfigError, OSError, ValueError):
            return FAMILY_OF[GENERIC_ENV_ID]
    return FAMILY_OF.get(env_id, "custom")


def run_meta(number: int, named: NamedRun) -> dict[str, Any]:
    """A run's description: its name, kind, size, how far its index got, its bad lines' count, and for an audit
    report the report's table."""
    run = named.run
    step = STEP_IN_NAME.search(named.name)
    return {"id": number, "name": named.name, "path": str(named.path),
            "kind": "audit" if isinstance(run, AuditRun) else "episodes", "rows": len(run.store),
            "complete": run.complete, "bytes_done": run.bytes_done, "bytes_total": run.bytes_total,
            "seconds": round(run.seconds, 3), "bad_count": run.bad_count, "failure": run.failure,
            "step": int(step.group(1)) if step else None,
            "audit": run.summary() if isinstance(run, AuditRun) else None}


def run_columns(named: NamedRun) -> dict[str, Any]:
    """The run's table columns (``ColumnStore.payload``), each env label's family, and whether the index is
    complete."""
    complete = named.run.complete  # read first: the columns then hold at least what was indexed by then
    payload = named.run.store.payload()
    payload["families"] = [family_of(env) for env in payload["labels"]["env"]]
    payload["complete"] = complete
    return payload


def bad_lines(named: NamedRun) -> dict[str, Any]:
    """The run's unreadable lines (the first ``BAD_LINES_SHOWN``), each with the start of its text."""
    run = named.run
    shown = []
    for bad in run.bad[:BAD_LINES_SHOWN]:
        head = read_bytes(run.sources[bad.src], bad.offset, min(bad.length, BAD_PREVIEW_BYTES))
        shown.append({"file": str(run.sources[bad.src]), "line": bad.line, "reason": bad.reason,
                      "bytes": bad.length, "preview": head.decode("utf-8", "replace")})
    return {"count": run.bad_count, "lines": shown}


def episode(named: NamedRun, row: int) -> dict[str, Any]:
    """Episode ``row``'s page (``IndexError`` when the run has no such row)."""
    if not 0 <= row < len(named.run.store.columns()["reward"]):
        raise IndexError(f"run {named.name} has no episode {row}")
    return episode_view(named.run.record(row))


def named_runs(runs: list[tuple[Path, Run]]) -> list[NamedRun]:
    """Each run named by its file or folder name, with its parent folder's name where two names clash."""
    names = [path.name for path, _ in runs]
    return [NamedRun(name if names.count(name) == 1 else f"{path.parent.name}/{name}", path, run)
            for name, (path, run) in zip(names, runs)]
