"""The search family's task: an open-domain question and the answers that count as correct."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SearchTask:
    """One question. ``golden_answers`` holds every accepted answer string (NQ lists several)."""

    task_id: str
    question: str
    golden_answers: tuple[str, ...]
    data_source: str = "nq"

    @property
    def ground_truth(self) -> dict[str, list[str]]:
        """The reference as Search-R1's data files hold it (``reward_model.ground_truth``), and as a user's reward
        function receives it."""
        return {"target": list(self.golden_answers)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "question": self.question,
            "golden_answers": list(self.golden_answers),
            "data_source": self.data_source,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], task_id: str = "pinned") -> SearchTask:
        """Build a task from ``{"question": str, "golden_answers": [str]}``.

        NQ-open's ``answer`` key and Search-R1's ``target`` key are accepted in place of ``golden_answers``; a
        single string counts as a one-element list. ``ValueError`` says what is missing or of the wrong type.
        """
        question = data.get("question")
        if not isinstance(question, str) or not question.strip():
            raise ValueError("a search task needs a non-empty string 'question'")
        answers: Any = None
        for key in ("golden_answers", "answer", "answers", "target"):
            if key in data:
                answers = data[key]
                break
        if isinstance(answers, str):
            answers = [answers]
        if not isinstance(answers, (list, tuple)) or not answers or not all(isinstance(a, str) for a in answers):
            raise ValueError("a search task needs 'golden_answers': a non-empty list of strings")
        return cls(
            task_id=str(data.get("task_id", task_id)),
            question=question,
            golden_answers=tuple(answers),
            data_source=str(data.get("data_source", "nq")),
        )
