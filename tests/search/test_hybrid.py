"""Reciprocal rank fusion: its arithmetic on scripted rankings, then BM25 fused with a real dense retriever
(all-MiniLM-L6-v2 vectors in a FAISS inner-product index) over real wiki-18 passages."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from rlfactory_tool_servers.search.bm25_retriever import BM25Retriever
from rlfactory_tool_servers.search.dense_retriever import DenseRetriever
from rlfactory_tool_servers.search.hybrid import FusedRetriever
from rlfactory_tool_servers.search.ranking import NO_HITS, Ranked
from tests.search.conftest import minilm_encode

# Rare names and numbers only: BM25's strength (row: query).
KEYWORD_QUERIES = {
    18: "Herlihy Cowden",
    67: "Isotta Fraschini Delta",
    86: "Umm Katef",
    143: "Hartsock law 17-21",
    9: "Vyazma 214th",
    130: "MGW Morial",
    89: "Dynamic Sound James Ray",
    13: "Bissessarsingh",
}
# Descriptions in other words than the passage's: the dense retriever's strength.
PARAPHRASE_QUERIES = {
    50: "a woman who crossed from England to France by swimming",
    130: "workshop where carnival parade vehicles are made in Louisiana",
    45: "engine component that pushes on a valve, driven by a rotating shaft",
    112: "weekly hour-long live television plays in the 1950s paid for by an aluminum maker",
    111: "terrestrial flowering plant with one leaf and an underground tuber",
    42: "global drawing competition for young children every four years",
    59: "decorative style of the 1920s in buildings and furniture",
}
# A rare name or two and a paraphrase in one query.
MIXED_QUERIES = {
    67: "timber fighter plane with an Isotta Fraschini engine",
    86: "Umm Katef crossroads in the desert",
    143: "Hartsock bill on psychiatric care",
    89: "Rudy Clark tune a Beatle made a hit",
    18: "Cowden daughter who acted on the London stage",
    130: "Blaine Kern workshop for carnival parades",
    131: "Overlook founder who ran a big paperback house",
    100: "Sidr seaside town three hours from the capital",
    14: "Superstition Mountains hydro power barrier",
    45: "mushroom shaped parts that open engine valves",
}


class ScriptedRetriever:
    """Gives the same ranking of rows to every query, and records the ``topk`` of each call."""

    def __init__(self, rows: Sequence[int], num_docs: int = 10) -> None:
        self.rows = list(rows)
        self.calls: list[tuple[int, int]] = []  # (queries, topk)
        self._num_docs = num_docs

    @property
    def num_docs(self) -> int:
        return self._num_docs

    def rank(self, queries: list[str], topk: int) -> list[Ranked]:
        self.calls.append((len(queries), topk))
        rows = self.rows[:topk]
        return [Ranked(rows, [float(len(rows) - i) for i in range(len(rows))]) for _ in queries]


def test_fused_scores_are_sums_of_reciprocal_ranks():
    fused = FusedRetriever([ScriptedRetriever([3, 1, 2]), ScriptedRetriever([1, 4, 3])], k=60)
    [ranked] = fused.rank(["q"], 10)
    # row 1: ranks 2 and 1; row 3: ranks 1 and 3; row 4: rank 2 once; row 2: rank 3 once
    assert ranked.indices == [1, 3, 4, 2]
    assert ranked.scores == pytest.approx([1 / 62 + 1 / 61, 1 / 61 + 1 / 63, 1 / 62, 1 / 63], rel=1e-12)


def test_ties_go_to_the_best_single_rank_then_the_lower_row():
    # k = 0: rows 9 (ranks 2 and 6) and 4 (ranks 3 and 3) both score 1/2 + 1/6 = 1/3 + 1/3.
    first = ScriptedRetriever([1, 9, 4, 5, 6, 7])
    second = ScriptedRetriever([2, 8, 4, 0, 3, 9])
    for retrievers in ([first, second], [second, first]):
        ranked = FusedRetriever(retrievers, k=0).rank(["q"], 4)[0]
        assert ranked.indices == [1, 2, 9, 4]
        assert ranked.scores[2] == ranked.scores[3] == pytest.approx(2 / 3)
    swapped = FusedRetriever([ScriptedRetriever([5, 6]), ScriptedRetriever([6, 5])]).rank(["q"], 2)[0]
    assert swapped.indices == [5, 6] and swapped.scores[0] == swapped.scores[1]


def test_each_retriever_ranks_max_of_depth_and_topk_once_per_batch():
    retrievers = [ScriptedRetriever(range(10)), ScriptedRetriever(range(9, -1, -1))]
    fused = FusedRetriever(retrievers, depth=3)
    ranked = fused.rank(["a", "b", "c"], 2)
    assert [r.calls for r in retrievers] == [[(3, 3)], [(3, 3)]]
    # depth 3: rows 0..2 and 9..7, each ranked by one retriever only
    assert [hits.indices for hits in ranked] == [[0, 9]] * 3
    fused.rank(["a"], 5)
    assert [r.calls[-1] for r in retrievers] == [(1, 5), (1, 5)]


def test_rows_no_retriever_ranks_are_not_returned():
    fused = FusedRetriever([ScriptedRetriever([]), ScriptedRetriever([2])])
    assert fused.rank(["q"], 5) == [Ranked([2], [1 / 61])]
    assert FusedRetriever([ScriptedRetriever([])]).rank(["q", "r"], 5) == [NO_HITS, NO_HITS]
    assert fused.rank([], 5) == []


def test_arguments_are_checked():
    with pytest.raises(ValueError, match=r"same corpus, but they hold \[10, 11\] passages"):
        FusedRetriever([ScriptedRetriever([1]), ScriptedRetriever([1], num_docs=11)])
    with pytest.raises(ValueError, match="at least one retriever"):
        FusedRetriever([])
    with pytest.raises(ValueError, match="k must be at least 0"):
        FusedRetriever([ScriptedRetriever([1])], k=-1)
    with pytest.raises(ValueError, match="depth must be at least 1"):
        FusedRetriever([ScriptedRetriever([1])], depth=0)
    fused = FusedRetriever([ScriptedRetriever([1])])
    assert fused.num_docs == 10
    with pytest.raises(ValueError, match="topk must be at least 1"):
        fused.rank(["q"], 0)


@pytest.fixture(scope="module")
def bm25_and_dense(subset_passages: list[str], subset_vectors: np.ndarray,
                   minilm) -> tuple[BM25Retriever, DenseRetriever]:
    faiss = pytest.importorskip("faiss", reason="the faiss extra is not installed")
    index = faiss.IndexFlatIP(subset_vectors.shape[1])
    index.add(subset_vectors)
    return BM25Retriever.build(subset_passages), DenseRetriever(index, lambda texts: minilm_encode(minilm, texts))


def target_ranks(retriever, queries: list[tuple[int, str]]) -> list[int | None]:
    """The 1-based rank of each query's passage in the retriever's top 10, ``None`` when it is not there."""
    ranked = retriever.rank([text for _, text in queries], 10)
    return [hits.indices.index(row) + 1 if row in hits.indices else None for (row, _), hits in zip(queries, ranked)]


def found(ranks: list[int | None], within: int) -> int:
    return sum(rank is not None and rank <= within for rank in ranks)


def test_fusing_bm25_and_dense_finds_passages_by_keywords_paraphrases_and_both(bm25_and_dense):
    bm25, dense = bm25_and_dense
    queries = [*KEYWORD_QUERIES.items(), *PARAPHRASE_QUERIES.items(), *MIXED_QUERIES.items()]
    bm25_ranks, dense_ranks = target_ranks(bm25, queries), target_ranks(dense, queries)
    fused_ranks = target_ranks(FusedRetriever([bm25, dense]), queries)
    # Observed: fused 25 of 25 at rank 1; BM25 24 (one at rank 2); dense 17, and 5 of the 8 keyword queries in
    # its top 3 (two not in its top 10).
    assert found(fused_ranks, 3) == len(queries), fused_ranks
    assert found(fused_ranks, 1) >= max(found(bm25_ranks, 1), found(dense_ranks, 1), len(queries) - 1)
    keywords = len(KEYWORD_QUERIES)
    assert found(dense_ranks[:keywords], 3) < found(fused_ranks[:keywords], 3), dense_ranks
