"""Reading a score out of a judge's reply.

The verdict is read from the judge's own words: first every verbatim quote of the answer (``quoted``: the answer as
the judge was shown it, and as written; those of at least ``QUOTE_MIN_CHARS`` characters) is cut out of the reply,
so a judge that quotes an answer ending in ``<think>``, holding a stray ``</think>`` or a verdict of its own, reads
as its own words say. Then, on the reply with any Qwen3-style ``<think>...</think>`` reasoning removed:

1. a score tag: the LAST ``<score>x</score>`` decides; ``x`` must be a number in the template's range, which is
   mapped onto [0, 1];
2. a clear verdict word: the reply (markdown, punctuation and a ``Verdict:``/``Answer:`` label stripped) starts or
   ends with ``yes``/``correct`` (1.0) or ``no``/``incorrect`` (0.0); ``not correct`` counts as ``no``. A reply
   that also uses a word of the other side anywhere is ambiguous;
3. a lone number in range (``7``, ``7/10``), the whole reply.

Anything else (empty, ambiguous, out of range, a tag that is not a number) is unreadable: ``score`` is ``None``
and ``problem`` says why. Never raises.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["QUOTE_MIN_CHARS", "Verdict", "own_words", "parse_verdict", "strip_reasoning"]

QUOTE_MIN_CHARS = 12
"""A quote shorter than this stays in the reply: a short answer ("yes", "Paris") may be the judge's own word."""

_THINK_CLOSE_RE = re.compile(r"</think\s*>", re.IGNORECASE)
_THINK_OPEN_RE = re.compile(r"<think\s*>", re.IGNORECASE)
_TAG_RE = re.compile(r"<score\s*>(.*?)</score\s*>", re.IGNORECASE | re.DOTALL)
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"
_LONE_NUMBER_RE = re.compile(rf"({_NUMBER})(?:\s*(?:/|out of)\s*({_NUMBER}))?", re.IGNORECASE)
_LABEL_RE = re.compile(r"^(?:final\s+)?(?:verdict|answer|judg(?:e)?ment|decision|result|grade|output|score|rating)\s*[:\-=]\s*",
                       re.IGNORECASE)
_WORD_RE = re.compile(r"[a-z]+(?:'[a-z]+)?")
_POSITIVE = frozenset({"yes", "correct"})
_NEGATIVE = frozenset({"no", "incorrect"})
_NEGATORS = frozenset({"not", "isn't", "wasn't", "never"})
_DECORATION = " \t\r\n*_`#>\"'.,!;:()[]{}"


@dataclass(frozen=True)
class Verdict:
    """``score`` in [0, 1], or ``None`` with ``problem`` saying why the reply could not be read."""

    score: float | None
    problem: str | None = None
    how: str = ""
    """Which rule read it: ``"tag"``, ``"word"`` or ``"number"`` (``""`` when unreadable)."""


def strip_reasoning(reply: str) -> str:
    """The reply after its reasoning: the text after the last ``</think>`` (vLLM may drop the opening tag, which
    the chat template writes); a ``<think>`` never closed leaves only what came before it."""
    closes = list(_THINK_CLOSE_RE.finditer(reply))
    if closes:
        return reply[closes[-1].end():]
    opened = _THINK_OPEN_RE.search(reply)
    return reply[:opened.start()] if opened else reply


def own_words(reply: str, quoted: Sequence[str]) -> str:
    """``reply`` with every occurrence of each text of ``quoted`` (longest first; those of at least
    ``QUOTE_MIN_CHARS`` characters) replaced by a space."""
    for quote in sorted({q.strip() for q in quoted if len(q.strip()) >= QUOTE_MIN_CHARS}, key=len, reverse=True):
        reply = reply.replace(quote, " ")
    return reply


def parse_verdict(reply: str | None, score_range: tuple[float, float] = (0.0, 10.0),
                  quoted: Sequence[str] = ()) -> Verdict:
    """The verdict in ``reply`` (see the module docstring); scores in ``score_range`` are mapped to [0, 1];
    ``quoted``: the texts the judge may quote that are not its words (the answer)."""
    if not isinstance(reply, str):
        reply = "" if reply is None else str(reply)
    text = strip_reasoning(own_words(reply, quoted)).strip()
    if not text:
        return Verdict(None, "empty reply" if not reply.strip() else "nothing after the reasoning")
    tags = _TAG_RE.findall(text)
    if tags:
        return _number(tags[-1].strip(), score_range, "tag") or Verdict(None, "the last score tag holds no number")
    word = _verdict_word(text)
    if word is not None:
        return word
    return _number(_LABEL_RE.sub("", text.strip(_DECORATION)).strip(_DECORATION), score_range, "number") or \
        Verdict(None, "no score tag, yes/no verdict or lone number")


def _number(text: str, score_range: tuple[float, float], how: str) -> Verdict | None:
    """The verdict of ``text`` when it is just a number (``7``, ``7/10``, ``7 out of 10``), else ``None``."""
    match = _LONE_NUMBER_RE.fullmatch(text)
    if match is None:
        return None
    value, out_of = float(match.group(1)), match.group(2)
    if out_of is not None and float(out_of) != score_range[1]:
        shown = out_of if len(out_of) <= 20 else out_of[:20] + "..."
        return Verdict(None, f"a score out of {shown}, not {score_range[1]:g}")
    return _in_range(value, score_range, how)


def _in_range(value: float, score_range: tuple[float, float], how: str) -> Verdict:
    low, high = score_range
    if not math.isfinite(value) or not low <= value <= high:
        return Verdict(None, f"score {value:g} outside {low:g}-{high:g}")
    return Verdict((value - low) / (high - low), None, how)


def _verdict_word(text: str) -> Verdict | None:
    """A yes/no verdict at the start or end of ``text``; ``None`` when there is none (another rule may apply); an
    unreadable verdict when both sides are used."""
    cleaned = _LABEL_RE.sub("", text.strip(_DECORATION)).lower()
    words = _WORD_RE.findall(cleaned)
    if not words:
        return None
    sides = []  # the polarity of every verdict word, negation applied
    for i, word in enumerate(words):
        if word in _POSITIVE or word in _NEGATIVE:
            positive = word in _POSITIVE
            if i > 0 and words[i - 1] in _NEGATORS:
                positive = not positive
            sides.append((i, positive))
    if not sides:
        return None
    if len({positive for _, positive in sides}) > 1:
        return Verdict(None, "both yes and no")
    if not any(i == 0 or i == len(words) - 1 for i, _ in sides):
        return None
    return Verdict(1.0 if sides[0][1] else 0.0, None, "word")
