"""Answer matching for open-domain QA: SQuAD normalisation, exact match, substring match and token F1.

The semantics are those of Search-R1's ``qa_em`` (``normalize_answer``, ``em_check``, ``subem_check``) and of the
official SQuAD evaluation script (``f1_score``), so rewards and metrics compare with published numbers. Every
function is pure, linear in the length of its inputs, and accepts a single string in place of a list of golden
answers.

One departure: a golden answer that normalises to ``""`` (NQ-open dev has ``---`` and ``)``) matches nothing.
Search-R1's checks match it with every answer that also normalises to nothing (``.``, ``the``) and, for the
substring check, with every answer at all: a reward a policy farms with one token.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

__all__ = ["normalize_answer", "exact_match", "scorable_answers", "substring_match", "f1"]

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(s: str) -> str:
    """Lower-case ``s``, drop ASCII punctuation, drop the articles a/an/the as whole words, collapse white space.

    The SQuAD / Search-R1 normalisation, in that order. ``"The  Beatles!"`` becomes ``"beatles"``. Idempotent.
    """
    text = s.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_list(golden_answers: str | Iterable[str]) -> list[str]:
    """Golden answers as a list: one string counts as a one-element list."""
    return [golden_answers] if isinstance(golden_answers, str) else list(golden_answers)


def scorable_answers(golden_answers: str | Iterable[str]) -> list[str]:
    """The normalised golden answers that can be matched: those that do not normalise to ``""``."""
    return [text for text in map(normalize_answer, answer_list(golden_answers)) if text]


def exact_match(prediction: str, golden_answers: str | Iterable[str]) -> float:
    """1.0 if ``normalize_answer(prediction)`` equals the normalisation of some golden answer, else 0.0.

    As Search-R1's ``em_check``, except that a golden answer normalising to ``""`` matches nothing (see the module
    docstring); no golden answers, no match.
    """
    normalized = normalize_answer(prediction)
    return float(normalized in scorable_answers(golden_answers))


def substring_match(prediction: str, golden_answers: str | Iterable[str]) -> float:
    """1.0 if the normalisation of some golden answer occurs inside ``normalize_answer(prediction)``, else 0.0.

    Search-R1's ``subem_check``: a plain substring test on normalised text, so ``"arvel"`` occurs in
    ``"mount arvel"`` and also in ``"marvel"``. A golden answer that normalises to ``""`` matches nothing (Search-R1's
    matches every prediction). Never below ``exact_match`` for the same arguments.
    """
    normalized = normalize_answer(prediction)
    return float(any(golden in normalized for golden in scorable_answers(golden_answers)))


def _token_f1(prediction_tokens: list[str], golden_tokens: list[str]) -> float:
    common = Counter(prediction_tokens) & Counter(golden_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(golden_tokens)
    return 2 * precision * recall / (precision + recall)


def f1(prediction: str, golden_answers: str | Iterable[str]) -> float:
    """SQuAD token F1 between the normalised prediction and the best-matching golden answer, in [0, 1].

    Tokens are the white-space-separated words of the normalised strings, counted with multiplicity. 0.0 when the
    prediction or a golden answer normalises to no tokens, and when there are no golden answers.
    """
    prediction_tokens = normalize_answer(prediction).split()
    if not prediction_tokens:
        return 0.0
    scores = [_token_f1(prediction_tokens, normalize_answer(golden).split()) for golden in answer_list(golden_answers)]
    return max(scores, default=0.0)
