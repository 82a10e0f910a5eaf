"""An ``rlf audit --json`` report as a run: each example episode the report keeps (up to three per hack and
outcome) is a row, its hack in the template column, and the report's table of hacks rides along (``summary``) for
the runs page and the hack-flags plot."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rlfactory_envs.view.column_store import ColumnStore
from rlfactory_envs.view.episode_fields import LineFields, StepFields, TaskFields

OUTCOMES = {"earning_examples": "earned", "not_earning_examples": "did not earn", "error_examples": "crashed"}
"""The report's example lists, and the end reason their rows show."""


def is_audit_report(data: Any) -> bool:
    """Whether ``data`` is what ``rlf audit --json`` writes (``AuditReport.to_dict``)."""
    return isinstance(data, dict) and isinstance(data.get("env_id"), str) and isinstance(data.get("hacks"), list)


class AuditRun:
    """An audit report's examples as a run's rows; indexed at once (the report is small)."""

    def __init__(self, path: Path, report: dict[str, Any]):
        self.sources = [path]
        self.report = report
        self.store = ColumnStore()
        self.examples: list[dict[str, Any]] = []
        self.bad: list[Any] = []
        self.bad_count = 0
        self.bytes_total = self.bytes_done = path.stat().st_size
        self.complete, self.seconds, self.failure = True, 0.0, None
        for hack in (h for h in report["hacks"] if isinstance(h, dict)):
            for key, outcome in OUTCOMES.items():
                for example in (e for e in hack.get(key) or () if isinstance(e, dict)):
                    self._add(hack, outcome, example)
        self.store.flush()

    def start(self) -> None:
        """Nothing to do: the report was read whole."""

    def wait(self, timeout: float | None = None) -> bool:
        return True

    def summary(self) -> dict[str, Any]:
        """The report without its examples: thresholds, verdict, and each hack's tally."""
        hacks = [{key: hack.get(key) for key in ("name", "description", "tried", "earned", "rate", "mean_reward",
                                                 "errors", "verdict", "control")}
                 for hack in self.report["hacks"] if isinstance(hack, dict)]
        keep = ("env_id", "dataset", "tasks", "max_rate", "min_control_rate", "passed", "summary", "failing_hacks")
        return {**{key: self.report.get(key) for key in keep}, "hacks": hacks}

    def record(self, row: int) -> dict[str, Any]:
        """The example behind row ``row``, with its hack's name, description and verdict."""
        return self.examples[row]

    def _add(self, hack: dict[str, Any], outcome: str, example: dict[str, Any]) -> None:
        """One example as a row: its hack in the template column, its outcome as the end reason."""
        reward = example.get("reward")
        parts = example.get("parts") if isinstance(example.get("parts"), dict) else {}
        fields = LineFields(env_id=self.report["env_id"],
                            reward=float(reward) if isinstance(reward, (int, float)) else math.nan,
                            task=TaskFields(task_id=str(example.get("task_id")), template=str(hack.get("name"))),
                            reward_parts={str(k): float(v) for k, v in parts.items() if isinstance(v, (int, float))},
                            truncated=True, steps=[StepFields(truncation_reason=outcome)])
        self.store.add(fields, 0, len(self.examples), 0, 0)
        self.examples.append({"audit_example": example, "hack": {k: hack.get(k) for k in (
            "name", "description", "verdict", "rate", "tried", "earned")}, "outcome": outcome,
            "env_id": self.report["env_id"]})
