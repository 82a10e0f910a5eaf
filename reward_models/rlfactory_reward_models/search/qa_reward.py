"""Rule-based reward for open-domain QA: exact match of the final answer, as in Search-R1's ``compute_score_em``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rlfactory_reward_models.base import Reward, RewardInput, RewardModelBase
from rlfactory_reward_models.qa_match import (answer_list, exact_match, f1, normalize_answer, scorable_answers,
                                              substring_match)

__all__ = ["QAExactMatchReward"]

_NO_ANSWER_PARTS = {"exact_match": 0.0, "f1": 0.0, "substring_match": 0.0, "format": 0.0}
_SHOWN_CHARS = 200  # of the normalised answer, in the reason and in info


def _shown(texts: list[str]) -> str:
    return ", ".join(repr(text[:_SHOWN_CHARS]) for text in texts[:10]) + (" ..." if len(texts) > 10 else "")


def _golden_answers(task: Any) -> list[str]:
    """The task's accepted answers as a list of strings (any object with ``golden_answers`` will do)."""
    try:
        answers = task.golden_answers
    except AttributeError:
        raise TypeError(f"QAExactMatchReward needs a task with 'golden_answers', got {type(task).__name__}") from None
    if isinstance(answers, str):
        return [answers]
    if not isinstance(answers, Iterable):
        raise TypeError(f"task.golden_answers must be a string or a list of strings, got {type(answers).__name__}")
    return [str(answer) for answer in answers]


class QAExactMatchReward(RewardModelBase):
    """1.0 when the final answer exactly matches a golden answer after SQuAD normalisation.

    Otherwise ``format_score`` when an answer was given (non-empty after stripping white space), else 0.0 with
    reason ``"no final answer"`` — Search-R1's ``compute_score_em(..., format_score=...)``. ``parts`` always holds
    ``exact_match``, ``f1`` and ``substring_match`` of the answer against the golden answers, and ``format``
    (1.0 when an answer was given); ``info["answer_match"]`` the normalised answer and the normalised golden answers
    it was compared with, and a wrong answer's ``reason`` says the same in words. Odd answers (empty, huge, any
    unicode) are scored, never raised on; a task without ``golden_answers`` is a ``TypeError``. A task whose every golden answer normalises to ``""`` is
    unscored: 0.0 whatever the answer, with the reason (Search-R1 pays ``.`` or ``the`` there).
    """

    reward_range: tuple[float, float] = (0.0, 1.0)

    def __init__(self, format_score: float = 0.0):
        """``format_score``: the reward for a well-formed but wrong answer, in [0, 1]; ``ValueError`` otherwise."""
        format_score = float(format_score)
        if not 0.0 <= format_score <= 1.0:  # also rejects NaN
            raise ValueError(f"format_score must lie in [0, 1], got {format_score}")
        self.format_score = format_score

    def score_answer(self, answer: str | None, golden_answers: str | Iterable[str]) -> Reward:
        """The reward of ``answer`` against ``golden_answers``; the synchronous core of ``score``."""
        golden = answer_list(golden_answers)
        if answer is not None and not isinstance(answer, str):
            answer = str(answer)
        if answer is None or not answer.strip():
            return Reward(value=0.0, parts=dict(_NO_ANSWER_PARTS), reason="no final answer")
        if not scorable_answers(golden):
            return Reward(value=0.0, parts={**_NO_ANSWER_PARTS, "format": 1.0},
                          reason="unscored: every golden answer normalises to an empty string")
        em = exact_match(answer, golden)
        parts = {
            "exact_match": em,
            "f1": f1(answer, golden),
            "substring_match": substring_match(answer, golden),
            "format": 1.0,
        }
        normalized, targets = normalize_answer(answer), scorable_answers(golden)
        info = {"answer_match": {"normalized_answer": normalized[:_SHOWN_CHARS],
                                 "normalized_golden": [target[:_SHOWN_CHARS] for target in targets[:10]]}}
        reason = None if em else (f"no exact match: the answer normalises to {_shown([normalized])}, the golden "
                                  f"answers to {_shown(targets)}")
        return Reward(value=1.0 if em else self.format_score, parts=parts, reason=reason, info=info)

    async def score(self, item: RewardInput) -> Reward:
        """Score ``item.answer`` against ``item.task.golden_answers``."""
        return self.score_answer(item.answer, _golden_answers(item.task))

    def __repr__(self) -> str:
        return f"QAExactMatchReward(format_score={self.format_score})"
