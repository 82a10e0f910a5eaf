"""Reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009) of several retrievers over one corpus.

Each retriever ranks ``max(depth, topk)`` passages per query; a passage's fused score is the sum, over the
retrievers that rank it, of ``1 / (k + rank)`` with ``rank`` 1-based. Only ranks count, never the retrievers' own
scores, so BM25 scores and dense similarities combine without calibration. Ties go to the passage with the better
best single rank, then to the lower row, so the order never depends on dict or thread order. Typical use: BM25
and a dense retriever over the same corpus.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rlfactory_tool_servers.search.ranking import Ranked, Retriever

DEFAULT_K = 60  # Cormack et al.'s constant: damps the weight of the very first ranks
DEFAULT_DEPTH = 50


class FusedRetriever:
    """Ranks by reciprocal rank fusion of ``retrievers``; each is called once per batch of queries.

    Safe to call from several threads at once if the retrievers are.
    """

    def __init__(self, retrievers: Sequence[Retriever], *, k: int = DEFAULT_K, depth: int = DEFAULT_DEPTH) -> None:
        """``ValueError`` unless there is at least one retriever, all over corpora of the same size, ``k >= 0``
        and ``depth >= 1``."""
        if not retrievers:
            raise ValueError("reciprocal rank fusion needs at least one retriever")
        if k < 0:
            raise ValueError(f"the fusion constant k must be at least 0, got {k}")
        if depth < 1:
            raise ValueError(f"the fusion depth must be at least 1, got {depth}")
        sizes = [retriever.num_docs for retriever in retrievers]
        if len(set(sizes)) > 1:
            raise ValueError(f"fused retrievers must index the same corpus, but they hold {sizes} passages")
        self._retrievers = list(retrievers)
        self.k = k
        self.depth = depth

    @property
    def num_docs(self) -> int:
        return self._retrievers[0].num_docs

    def rank(self, queries: list[str], topk: int) -> list[Ranked]:
        """For each query, the ``topk`` passages of best fused score, best first, with those scores.

        A passage no retriever ranks within ``max(depth, topk)`` is not returned, so a list may be shorter than
        ``topk``.
        """
        if topk < 1:
            raise ValueError(f"topk must be at least 1, got {topk}")
        if not queries:
            return []
        depth = max(self.depth, topk)
        rankings = [retriever.rank(queries, depth) for retriever in self._retrievers]
        return [self.fuse([ranking[position] for ranking in rankings], topk) for position in range(len(queries))]

    def fuse(self, rankings: Sequence[Ranked], topk: int) -> Ranked:
        """The ``topk`` best rows of one query's ``rankings`` (one per retriever) by fused score."""
        contributions: dict[int, list[float]] = {}
        best_rank: dict[int, int] = {}
        for ranked in rankings:
            for rank, row in enumerate(ranked.indices, start=1):
                contributions.setdefault(row, []).append(1.0 / (self.k + rank))
                best_rank[row] = min(best_rank.get(row, rank), rank)
        # fsum is exact, so equal rank sets give equal scores whatever the order of the retrievers.
        scores = {row: math.fsum(terms) for row, terms in contributions.items()}
        order = sorted(scores, key=lambda row: (-scores[row], best_rank[row], row))[:topk]
        return Ranked(order, [scores[row] for row in order])
