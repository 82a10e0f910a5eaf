"""Dense retrieval over a FAISS index in Search-R1's ``e5_Flat.index`` layout (row ``i`` embeds passage ``i``).

``faiss`` (the ``faiss`` extra: ``faiss-cpu``) is optional: it is imported only when a dense retriever is made, and
a missing one is named in an ``ImportError`` that says what to install. Queries are embedded by a ``QueryEncoder``
(``encoders.make_query_encoder``: the model and pooling that embedded the passages).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rlfactory_tool_servers.search.ranking import Ranked

BLAS_THRESHOLD = 20

QueryEncoder = Callable[[list[str]], np.ndarray]
"""Queries in, one float32 row per query out (the index's dimension; L2-normalised for an inner-product index)."""


def import_faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:
        raise ImportError("the faiss retriever needs faiss: pip install 'rlfactory-envs[faiss]' "
                          "(faiss-cpu)") from exc
    return faiss


class DenseRetriever:
    """Top-k passage indices by inner product between encoded queries and the index's passage vectors."""

    def __init__(self, index: Any, encoder: QueryEncoder) -> None:
        """Wrap a loaded FAISS index and the encoder that embeds queries into its space."""
        self.index = index
        self._encoder = encoder
        self._encoder_lock = threading.Lock()  # model forward passes are not assumed to be thread-safe

    @property
    def num_docs(self) -> int:
        return int(self.index.ntotal)

    @classmethod
    def load(cls, index_path: str | Path, encoder: QueryEncoder, *, num_docs: int | None = None,
             mmap: bool = False) -> DenseRetriever:
        """Read the index at ``index_path`` (memory-mapped, read-only, if ``mmap``).

        ``ValueError`` if ``num_docs`` is given and the index does not hold exactly that many vectors: rows and
        passages must line up one to one.
        """
        faiss = import_faiss()
        # Batches of queries above this size are one BLAS matrix product instead of a loop over queries. The wheel
        # sets 128,000, which makes a merged batch of 256 as slow as 256 single searches; FAISS's own default is 20.
        faiss.cvar.distance_compute_blas_threshold = BLAS_THRESHOLD
        flags = faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY if mmap else 0
        index = faiss.read_index(str(index_path), flags)
        if num_docs is not None and index.ntotal != num_docs:
            raise ValueError(f"{index_path} holds {index.ntotal} vectors but the corpus holds {num_docs} passages")
        return cls(index, encoder)

    def rank(self, queries: list[str], topk: int) -> list[Ranked]:
        """For each query, its best ``topk`` passages by inner product, best first: one encode, one FAISS search.

        ``topk`` above the corpus size gives every passage.
        """
        if topk < 1:
            raise ValueError(f"topk must be at least 1, got {topk}")
        if not queries:
            return []
        with self._encoder_lock:
            embeddings = np.ascontiguousarray(self._encoder(list(queries)), dtype=np.float32)
        if embeddings.shape != (len(queries), self.index.d):
            raise ValueError(f"the query encoder gave shape {embeddings.shape}, "
                             f"expected ({len(queries)}, {self.index.d})")
        scores, indices = self.index.search(embeddings, min(topk, self.num_docs))
        found = indices >= 0  # FAISS pads missing hits with -1
        return [Ranked(row[hit].tolist(), row_scores[hit].tolist())
                for row, row_scores, hit in zip(indices, scores, found)]
