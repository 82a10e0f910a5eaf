"""Built-in answer rewards for a user's own env (``reward="exact_match"`` and friends), in the form every reward
function of the generic env has: ``fn(answer, ground_truth, **context) -> float``.

``ground_truth`` may be one string, a list of accepted strings, or Search-R1's ``{"target": [...]}``; anything
else is compared as its text. ``answer`` is ``None`` when the episode ended without one (it scores 0.0).

Where the usual scorers can be farmed, these cannot:
- a ground truth that normalises to nothing (``"---"``, ``")"``) never matches, so an answer of ``"."`` or
  ``"the"`` does not score on it (Search-R1's ``em_check`` would pay it);
- ``contains`` matches whole words of the normalised answer, not substrings (``"arvel"`` is not in
  ``"marvel"``), and pays nothing for an answer more than ``CONTAINS_EXTRA_WORDS`` words longer than the matched
  ground truth, so stuffing every candidate into one answer does not pay.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rlfactory_reward_models.qa_match import f1 as token_f1
from rlfactory_reward_models.qa_match import normalize_answer

__all__ = ["CONTAINS_EXTRA_WORDS", "REWARDS", "accepted_answers", "contains", "exact_match", "f1"]

CONTAINS_EXTRA_WORDS = 10


def accepted_answers(ground_truth: Any) -> list[str]:
    """The accepted answers ``ground_truth`` stands for, normalised, without those that normalise to nothing."""
    if isinstance(ground_truth, Mapping) and "target" in ground_truth:
        ground_truth = ground_truth["target"]
    if ground_truth is None:
        values: list[Any] = []
    elif isinstance(ground_truth, (list, tuple)):
        values = list(ground_truth)
    else:
        values = [ground_truth]
    normalised = (normalize_answer(str(value)) for value in values)
    return [text for text in normalised if text]


def exact_match(answer: str | None, ground_truth: Any, **context: Any) -> float:
    """1.0 when the SQuAD-normalised answer equals a normalised accepted answer, else 0.0."""
    if answer is None:
        return 0.0
    return float(normalize_answer(answer) in accepted_answers(ground_truth))


def f1(answer: str | None, ground_truth: Any, **context: Any) -> float:
    """The best SQuAD token F1 between the answer and an accepted answer (0.0 without one)."""
    accepted = accepted_answers(ground_truth)
    if answer is None or not accepted:
        return 0.0
    return token_f1(answer, accepted)


def contains(answer: str | None, ground_truth: Any, **context: Any) -> float:
    """1.0 when an accepted answer's words appear, in order and whole, in the normalised answer, and the answer is
    at most ``CONTAINS_EXTRA_WORDS`` words longer than that accepted answer; else 0.0."""
    if answer is None:
        return 0.0
    words = normalize_answer(answer).split()
    for accepted in accepted_answers(ground_truth):
        target = accepted.split()
        if len(words) > len(target) + CONTAINS_EXTRA_WORDS:
            continue
        if any(words[start:start + len(target)] == target for start in range(len(words) - len(target) + 1)):
            return 1.0
    return 0.0


REWARDS: dict[str, Callable[..., float]] = {"exact_match": exact_match, "f1": f1, "contains": contains}
"""The rewards a user's env names by name (``reward="f1"``)."""
