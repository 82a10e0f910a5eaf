"""Dense retrieval over a FAISS index in Search-R1's ``e5_Flat.index`` layout (row ``i`` embeds passage ``i``).

``faiss`` (the ``faiss`` extra: ``faiss-cpu``) and, for the real query encoder, ``torch`` and ``transformers``
are optional: they are imported only when a dense retriever or encoder is made, and a missing one is named in
an ``ImportError`` that says what to install.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

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
        self._index = index
        self._encoder = encoder
        self._encoder_lock = threading.Lock()  # model forward passes are not assumed to be thread-safe

    @property
    def num_docs(self) -> int:
        return int(self._index.ntotal)

    @classmethod
    def load(cls, index_path: str | Path, encoder: QueryEncoder, *, num_docs: int | None = None,
             mmap: bool = False) -> DenseRetriever:
        """Read the index at ``index_path`` (memory-mapped, read-only, if ``mmap``).

        ``ValueError`` if ``num_docs`` is given and the index does not hold exactly that many vectors: rows and
        passages must line up one to one.
        """
        faiss = import_faiss()
        flags = faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY if mmap else 0
        index = faiss.read_index(str(index_path), flags)
        if num_docs is not None and index.ntotal != num_docs:
            raise ValueError(f"{index_path} holds {index.ntotal} vectors but the corpus holds {num_docs} passages")
        return cls(index, encoder)

    def retrieve(self, queries: list[str], topk: int) -> list[list[int]]:
        """For each query, the indices of its best ``topk`` passages, best first: one encode, one FAISS search.

        ``topk`` above the corpus size gives every passage.
        """
        if topk < 1:
            raise ValueError(f"topk must be at least 1, got {topk}")
        if not queries:
            return []
        with self._encoder_lock:
            embeddings = np.ascontiguousarray(self._encoder(list(queries)), dtype=np.float32)
        if embeddings.shape != (len(queries), self._index.d):
            raise ValueError(f"the query encoder gave shape {embeddings.shape}, "
                             f"expected ({len(queries)}, {self._index.d})")
        _, indices = self._index.search(embeddings, min(topk, self.num_docs))
        return [[int(i) for i in row if i >= 0] for row in indices]  # FAISS pads missing hits with -1


class E5QueryEncoder:
    """The e5 query encoder Search-R1 uses: ``"query: "`` prefix, mean pooling over tokens, L2-normalised.

    Loads the model from a local directory only (never the network), on CUDA when available unless ``device``
    says otherwise.
    """

    def __init__(self, model_dir: str | Path, *, device: str | None = None, max_length: int = 256,
                 fp16: bool | None = None) -> None:
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:
            raise ImportError("the e5 query encoder needs torch and transformers: "
                              "pip install torch transformers") from exc
        self._torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.max_length = max_length
        self._tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        model = AutoModel.from_pretrained(str(model_dir), local_files_only=True)
        if fp16 if fp16 is not None else self.device.startswith("cuda"):
            model = model.half()
        self._model = model.to(self.device).eval()

    def __call__(self, queries: list[str]) -> np.ndarray:
        torch = self._torch
        inputs = self._tokenizer([f"query: {query}" for query in queries], max_length=self.max_length,
                                 padding=True, truncation=True, return_tensors="pt").to(self.device)
        with torch.inference_mode():
            hidden = self._model(**inputs, return_dict=True).last_hidden_state.float()
            mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1)
            normalised = torch.nn.functional.normalize(pooled, dim=-1)
        return normalised.cpu().numpy().astype(np.float32, order="C")
