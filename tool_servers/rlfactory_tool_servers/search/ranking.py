"""What every retriever gives: for each query, passage rows of the corpus with their scores, best first."""

from __future__ import annotations

from typing import NamedTuple, Protocol


class Ranked(NamedTuple):
    """One query's hits: ``indices[i]`` is a passage's row in the corpus (0-based, file order), ``scores[i]`` its
    score (higher is better; comparable only within one retriever)."""

    indices: list[int]
    scores: list[float]


NO_HITS = Ranked([], [])


class Retriever(Protocol):
    """Ranks the passages of one corpus for many queries in one call."""

    @property
    def num_docs(self) -> int:
        """How many passages the index holds (rows ``0 .. num_docs - 1``)."""

    def rank(self, queries: list[str], topk: int) -> list[Ranked]:
        """For each query, at most ``topk`` hits, best first (fewer when fewer passages match).

        ``ValueError`` if ``topk < 1``; ``topk`` above the corpus size is allowed. Safe to call from several
        threads at once.
        """
