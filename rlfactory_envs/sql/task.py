"""The NL2SQL family's task: a question about one database and the gold query that answers it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SqlTask:
    """One question. ``db_id`` names the database (a directory of the database folder), ``gold_sql`` is the
    reference query, ``evidence`` BIRD's external-knowledge hint (``""`` for Spider)."""

    task_id: str
    db_id: str
    question: str
    gold_sql: str
    evidence: str = ""
    data_source: str = "spider"

    @property
    def ground_truth(self) -> str:
        """The reference a user's reward function receives: the gold query."""
        return self.gold_sql

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "db_id": self.db_id, "question": self.question, "gold_sql": self.gold_sql,
                "evidence": self.evidence, "data_source": self.data_source}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], task_id: str = "pinned", data_source: str = "spider") -> SqlTask:
        """Build a task from Spider's row layout ``{"db_id", "question", "query"}``, BIRD's (``"SQL"`` and
        ``"evidence"``, ``"question_id"``) or ``to_dict``'s (``"gold_sql"``). ``ValueError`` says what is missing."""
        db_id = data.get("db_id")
        if not isinstance(db_id, str) or not db_id.strip():
            raise ValueError("an SQL task needs a non-empty string 'db_id'")
        question = data.get("question")
        if not isinstance(question, str) or not question.strip():
            raise ValueError("an SQL task needs a non-empty string 'question'")
        gold = next((data[key] for key in ("gold_sql", "query", "SQL") if key in data), None)
        if not isinstance(gold, str) or not gold.strip():
            raise ValueError("an SQL task needs its gold query: a non-empty string 'query' (Spider) or 'SQL' (BIRD)")
        evidence = data.get("evidence") or ""
        if not isinstance(evidence, str):
            raise ValueError("'evidence' must be a string")
        given_id = data.get("task_id", data.get("question_id"))
        return cls(task_id=str(given_id) if given_id is not None else task_id, db_id=db_id.strip(),
                   question=question.strip(), gold_sql=gold.strip(), evidence=evidence.strip(),
                   data_source=str(data.get("data_source") or data_source))
