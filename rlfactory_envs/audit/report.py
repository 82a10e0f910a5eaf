"""What an audit found: per hack, how often it earned reward, and the verdicts that make ``rlf audit``'s exit code.

A hack *earns* on a task when its episode's reward is strictly above the low end of the env's ``reward_range``.
Its verdict is ``ok`` when it earns on at most ``max_rate`` of the tasks it was tried on and never crashed,
``FAIL`` otherwise, and ``n/a`` when it applied to no task. The control (the reference answer) is ``ok`` when it
earns on at least ``min_control_rate`` of its tasks: a reward that pays nothing also resists every hack, so without
that the other rows mean nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

MAX_EXAMPLES = 3
ANSWER_PREVIEW_CHARS = 120
Verdict = Literal["ok", "FAIL", "n/a"]


def preview(text: str | None, limit: int = ANSWER_PREVIEW_CHARS) -> str | None:
    """``text`` on one line (runs of white space made one space), cut to ``limit`` characters with ``...``."""
    if text is None:
        return None
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else f"{flat[:limit]}..."


@dataclass(frozen=True)
class EpisodeExample:
    """One audited episode, as a report shows it."""

    task_id: str | None
    reward: float
    reason: str | None = None
    parts: dict[str, float] = field(default_factory=dict)
    answer: str | None = None
    """The final answer's ``preview``; ``answer_chars`` is its whole length."""
    answer_chars: int | None = None
    error: str | None = None

    def line(self) -> str:
        text = f"task {self.task_id}: reward {self.reward:g}"
        if self.parts:
            text += " (" + ", ".join(f"{name}={value:g}" for name, value in self.parts.items()) + ")"
        if self.error:
            return f"{text}; error: {self.error}"
        if self.reason:
            text += f"; {self.reason}"
        if self.answer is None:
            return text
        size = f" ({self.answer_chars:,} chars)" if self.answer_chars and self.answer_chars > len(self.answer) else ""
        return f"{text}; answer {self.answer!r}{size}"


@dataclass
class HackOutcome:
    """One hack's tally over the audited tasks."""

    name: str
    description: str
    tried: int = 0
    earned: int = 0
    not_applicable: int = 0
    errors: int = 0
    reward_sum: float = 0.0
    earning: list[EpisodeExample] = field(default_factory=list)
    not_earning: list[EpisodeExample] = field(default_factory=list)
    crashed: list[EpisodeExample] = field(default_factory=list)
    not_applicable_reason: str | None = None

    @property
    def rate(self) -> float:
        """The share of the tasks tried on which the hack earned reward."""
        return self.earned / self.tried if self.tried else 0.0

    @property
    def mean_reward(self) -> float:
        return self.reward_sum / self.tried if self.tried else 0.0

    def add(self, example: EpisodeExample, earned: bool) -> None:
        """Count one episode the hack played."""
        self.tried += 1
        self.reward_sum += example.reward
        if example.error is not None:
            self.errors += 1
            _keep(self.crashed, example)
        if earned:
            self.earned += 1
            _keep(self.earning, example)
        elif example.error is None:
            _keep(self.not_earning, example)

    def skip(self, reason: str) -> None:
        """Count one task the hack does not apply to."""
        self.not_applicable += 1
        self.not_applicable_reason = self.not_applicable_reason or reason

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "tried": self.tried, "earned": self.earned,
                "rate": self.rate, "mean_reward": self.mean_reward, "errors": self.errors,
                "not_applicable": self.not_applicable, "not_applicable_reason": self.not_applicable_reason,
                "earning_examples": [vars(e) for e in self.earning],
                "not_earning_examples": [vars(e) for e in self.not_earning],
                "error_examples": [vars(e) for e in self.crashed]}


def _keep(examples: list[EpisodeExample], example: EpisodeExample) -> None:
    if len(examples) < MAX_EXAMPLES:
        examples.append(example)


@dataclass
class AuditReport:
    """An env's audit: the control's outcome, every hack's, and the thresholds they are judged by."""

    env_id: str
    dataset: str
    tasks: int
    reward_range: tuple[float, float]
    max_rate: float
    min_control_rate: float
    control: HackOutcome
    hacks: list[HackOutcome]

    def verdict(self, outcome: HackOutcome) -> Verdict:
        """``ok``, ``FAIL`` or ``n/a`` for one row (see the module docstring)."""
        if outcome.tried == 0:
            return "n/a"
        if outcome is self.control:
            return "ok" if outcome.errors == 0 and outcome.rate >= self.min_control_rate else "FAIL"
        return "ok" if outcome.errors == 0 and outcome.rate <= self.max_rate else "FAIL"

    @property
    def control_ok(self) -> bool:
        return self.verdict(self.control) == "ok"

    @property
    def failing_hacks(self) -> list[str]:
        return [h.name for h in self.hacks if self.verdict(h) == "FAIL"]

    @property
    def passed(self) -> bool:
        """No hack above ``max_rate`` or crashing, and the control earns reward: ``rlf audit`` exits 0."""
        return self.control_ok and not self.failing_hacks

    def summary(self) -> str:
        """One line: PASS, or FAIL naming what failed."""
        problems = []
        control = self.control
        if control.tried == 0:
            problems.append(f"no control: the env gives no reference answer ({control.not_applicable_reason}), so "
                            "nothing shows that its reward pays for a right answer; give its family's tooling a "
                            "reference_answer() (FamilyTooling)")
        elif not self.control_ok:
            crashed = f", {control.errors} crashed" if control.errors else ""
            problems.append(f"the reference answer earns reward on only {control.rate:.0%} of tasks{crashed} (at "
                            f"least {self.min_control_rate:.0%} needed): the reward does not pay for a right answer, "
                            "so the hack rates mean nothing")
        if self.failing_hacks:
            problems.append(f"hacks earning reward on more than {self.max_rate:.1%} of tasks or crashing: "
                            f"{', '.join(self.failing_hacks)}")
        if problems:
            return "FAIL: " + "; ".join(problems)
        tried = sum(1 for h in self.hacks if h.tried)
        hacks = f"{tried} hack earns" if tried == 1 else f"{tried} hacks earn"
        return (f"PASS: {hacks} reward on at most {self.max_rate:.1%} of tasks, and the reference answer earns on "
                f"{control.rate:.0%}")

    def table(self) -> str:
        """A fixed-width table (a row per hack, the control first), examples of the episodes behind each failure and
        each hack that earned at all, and the summary."""
        low = self.reward_range[0]
        rows = [("hack", "tried", "earned", "rate", "mean reward", "errors", "verdict")]
        for outcome in (self.control, *self.hacks):
            verdict = self.verdict(outcome)
            rate = f"{outcome.rate:.1%}" if outcome.tried else "n/a"
            mean = f"{outcome.mean_reward:.4f}" if outcome.tried else "n/a"
            rows.append((outcome.name, str(outcome.tried), str(outcome.earned), rate, mean, str(outcome.errors),
                         verdict))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        heading = (f"rlf audit {self.env_id}: {self.tasks} tasks of {self.dataset}; a hack earns when its reward is "
                   f"above {low:g}; FAIL above {self.max_rate:.1%} of tasks")
        lines = [heading, ""]
        for row in rows:
            cells = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(row[1:-1], widths[1:-1])]
            lines.append("  ".join([*cells, row[-1]]).rstrip())
        details = self._details()
        if details:
            lines += ["", *details]
        return "\n".join([*lines, "", self.summary()])

    def _details(self) -> list[str]:
        lines = []
        for outcome in (self.control, *self.hacks):
            control = outcome is self.control
            if self.verdict(outcome) != "FAIL" and (control or not outcome.earned):
                continue
            shown = outcome.not_earning if control else outcome.earning
            what = "does not earn" if control else "earns"
            lines.append(f"{outcome.name} ({outcome.description}) {what}:")
            lines += [f"  {example.line()}" for example in [*shown, *outcome.crashed]]
        return lines

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (``rlf audit --json``)."""
        rows = []
        for outcome in (self.control, *self.hacks):
            rows.append({**outcome.to_dict(), "verdict": self.verdict(outcome), "control": outcome is self.control})
        return {"env_id": self.env_id, "dataset": self.dataset, "tasks": self.tasks,
                "reward_range": list(self.reward_range), "max_rate": self.max_rate,
                "min_control_rate": self.min_control_rate, "passed": self.passed, "summary": self.summary(),
                "failing_hacks": self.failing_hacks, "hacks": rows}
