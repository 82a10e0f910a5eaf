"""Where a dense build puts its passage vectors: a ``VectorSink``, fed chunk by chunk, finished into an index.

``FaissSink`` saves each chunk's vectors as a shard file (so a stopped build resumes from its last chunk), and
``finish`` makes the FAISS index from the shards, one shard in memory at a time besides the index itself, and writes
``DIR/index.faiss``; row ``i`` of the index is passage ``i``. Index types, all by inner product over L2-normalised
vectors (cosine similarity):

- ``flat``: exact search (``IndexFlatIP``);
- ``hnsw``: a graph (``IndexHNSWFlat``; ``M``, ``efConstruction``; ``efSearch`` at search time);
- ``ivfpq``: ``nlist`` inverted lists of product-quantised codes (``m`` sub-quantisers of ``nbits`` bits), trained
  on ``train_points`` vectors spread over the corpus; ``nprobe`` lists are searched.

The search-time parameters are stored in the index file and in the manifest's ``params``.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from rlfactory_tool_servers.search.dense_retriever import import_faiss
from rlfactory_tool_servers.search.manifest import FaissRecord, MilvusRecord

FaissType = Literal["flat", "hnsw", "ivfpq"]

INDEX_FILE = "index.faiss"
SHARD_SUFFIX = ".vectors.npy"

FAISS_PARAMS: dict[str, tuple[str, ...]] = {
    "flat": (),
    "hnsw": ("M", "efConstruction", "efSearch"),
    "ivfpq": ("nlist", "m", "nbits", "nprobe", "train_points"),
}
"""The parameters each index type takes (``--faiss-param KEY=INT``)."""

HNSW_DEFAULTS = {"M": 32, "efConstruction": 200, "efSearch": 128}
IVFPQ_NBITS = 8
IVFPQ_NPROBE = 16


class VectorSink(Protocol):
    """Takes the passage vectors of a build chunk by chunk and makes the searchable index at the end."""

    def add(self, first_row: int, vectors: np.ndarray) -> None:
        """Store ``vectors`` as passages ``first_row, first_row + 1, ...``; adding rows again replaces them."""

    def finish(self, expected_rows: int) -> FaissRecord | MilvusRecord:
        """Make the index from the rows added, check it holds exactly ``expected_rows`` (one per passage of the
        corpus), and say how it was made (the manifest's section)."""

    def close(self) -> None:
        """Let go of what the sink holds open; idempotent."""


def check_faiss_params(index_type: FaissType, params: Mapping[str, int], dimensions: int) -> None:
    """``ValueError`` naming the first parameter ``index_type`` does not take or cannot use."""
    if index_type not in FAISS_PARAMS:
        raise ValueError(f"unknown FAISS index type {index_type!r}; choose flat, hnsw or ivfpq")
    allowed = FAISS_PARAMS[index_type]
    for key, value in params.items():
        if key not in allowed:
            takes = f"takes {', '.join(allowed)}" if allowed else "takes no parameters"
            raise ValueError(f"the {index_type} index has no parameter {key!r} (it {takes})")
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"FAISS parameter {key} must be a positive integer, got {value!r}")
    if "m" in params and dimensions % params["m"]:
        raise ValueError(f"ivfpq's m ({params['m']}) must divide the vector size {dimensions}")
    if params.get("nbits", IVFPQ_NBITS) > 16:
        raise ValueError(f"ivfpq's nbits must be at most 16, got {params['nbits']}")


def faiss_params_for(index_type: FaissType, given: Mapping[str, int], *, rows: int,
                     dimensions: int) -> dict[str, int]:
    """Every parameter of an ``index_type`` index over ``rows`` vectors: ``given`` ones, defaults for the rest.

    ``ivfpq`` defaults: ``nlist`` about ``4 * sqrt(rows)``, at most ``rows / 39`` (FAISS's minimum of training
    points per list); ``m`` the largest divisor of ``dimensions`` up to ``dimensions / 8``; ``nbits`` 8;
    ``nprobe`` 16 (at most ``nlist``); ``train_points`` 64 per list or per code, at most ``rows``.
    """
    check_faiss_params(index_type, given, dimensions)
    if index_type == "flat":
        return {}
    if index_type == "hnsw":
        return {**HNSW_DEFAULTS, **given}
    nlist = given.get("nlist") or min(max(1, round(4 * math.sqrt(rows))), max(1, rows // 39))
    nbits = given.get("nbits", IVFPQ_NBITS)
    m = given.get("m") or max(m for m in range(1, max(1, dimensions // 8) + 1) if dimensions % m == 0)
    params = {"nlist": nlist, "m": m, "nbits": nbits, "nprobe": given.get("nprobe", min(IVFPQ_NPROBE, nlist)),
              "train_points": given.get("train_points", min(rows, 64 * max(nlist, 2 ** nbits)))}
    if min(rows, params["train_points"]) < max(nlist, 2 ** nbits):
        raise ValueError(f"an ivfpq index with nlist={nlist} and nbits={nbits} trains on at least "
                         f"{max(nlist, 2 ** nbits)} vectors, but there are {min(rows, params['train_points'])}: "
                         "use --faiss-type flat or hnsw for a corpus this small, or lower nlist/nbits")
    return params


class FaissSink:
    """A ``VectorSink`` that builds ``index_dir/index.faiss`` of ``index_type`` from shards of vectors saved in
    ``shard_dir``.

    ``resume_rows``: rows already added by an earlier run whose shards are kept; shards from later rows, left by a
    chunk that never reached its checkpoint, are deleted.
    """

    def __init__(self, index_dir: Path, *, shard_dir: Path, dimensions: int, index_type: FaissType = "flat",
                 params: Mapping[str, int] | None = None, resume_rows: int = 0) -> None:
        self.index_dir = index_dir
        self.dimensions = dimensions
        self.index_type = index_type
        self.given_params = dict(params or {})
        check_faiss_params(index_type, self.given_params, dimensions)
        self._shard_dir = shard_dir
        self._shard_dir.mkdir(parents=True, exist_ok=True)
        self.rows = 0
        for first_row, path in self._shards():
            if first_row >= resume_rows:
                path.unlink()
            elif first_row != self.rows:
                raise ValueError(f"{self._shard_dir}: the vector shards skip rows {self.rows} to {first_row}; "
                                 "start over with --overwrite")
            else:
                self.rows += _shard_rows(path)
        if self.rows != resume_rows:
            raise ValueError(f"{self._shard_dir}: the vector shards hold {self.rows} rows, the build state says "
                             f"{resume_rows}; start over with --overwrite")

    def add(self, first_row: int, vectors: np.ndarray) -> None:
        if first_row != self.rows:
            raise ValueError(f"expected vectors from row {self.rows}, got row {first_row}")
        if vectors.ndim != 2 or vectors.shape[1] != self.dimensions:
            raise ValueError(f"expected vectors of {self.dimensions} dimensions, got shape {vectors.shape}")
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(vectors, dtype=np.float32))
        path = self._shard_dir / f"{first_row:012d}{SHARD_SUFFIX}"
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(buffer.getvalue())
        os.replace(partial, path)
        self.rows += len(vectors)

    def finish(self, expected_rows: int) -> FaissRecord:
        """Build the index from every shard and write ``index.faiss`` (atomically); ``ValueError`` unless the
        shards hold ``expected_rows`` vectors."""
        if self.rows != expected_rows:
            raise ValueError(f"{self._shard_dir}: the vector shards hold {self.rows} rows, the corpus has "
                             f"{expected_rows} passages; start over with --overwrite")
        faiss = import_faiss()
        params = faiss_params_for(self.index_type, self.given_params, rows=self.rows, dimensions=self.dimensions)
        index = self._empty_index(faiss, params)
        for vectors in self._shard_vectors():
            index.add(vectors)
        if index.ntotal != self.rows:
            raise RuntimeError(f"the FAISS index holds {index.ntotal} vectors, expected {self.rows}")
        path = self.index_dir / INDEX_FILE
        partial = path.with_name(path.name + ".partial")
        faiss.write_index(index, str(partial))
        os.replace(partial, path)
        return FaissRecord(index_type=self.index_type, file=INDEX_FILE, params=params)

    def close(self) -> None:
        """Nothing to let go of: every shard is closed once written."""

    def _empty_index(self, faiss: Any, params: dict[str, int]) -> Any:
        d = self.dimensions
        if self.index_type == "flat":
            return faiss.IndexFlatIP(d)
        if self.index_type == "hnsw":
            index = faiss.IndexHNSWFlat(d, params["M"], faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = params["efConstruction"]
            index.hnsw.efSearch = params["efSearch"]
            return index
        quantizer = faiss.IndexFlatIP(d)
        index = faiss.IndexIVFPQ(quantizer, d, params["nlist"], params["m"], params["nbits"],
                                 faiss.METRIC_INNER_PRODUCT)
        index.train(self._training_sample(params["train_points"]))
        index.nprobe = params["nprobe"]
        return index

    def _training_sample(self, points: int) -> np.ndarray:
        """``points`` vectors spread evenly over all rows, read from the shards memory-mapped."""
        wanted = np.unique(np.linspace(0, self.rows - 1, min(points, self.rows)).astype(np.int64))
        parts = []
        start = 0
        for path in (path for _, path in self._shards()):
            shard = np.load(path, mmap_mode="r")
            end = start + len(shard)
            rows = wanted[(wanted >= start) & (wanted < end)] - start
            parts.append(np.array(shard[rows], dtype=np.float32))
            start = end
        return np.ascontiguousarray(np.concatenate(parts))

    def _shards(self) -> list[tuple[int, Path]]:
        return sorted((int(path.name.removesuffix(SHARD_SUFFIX)), path)
                      for path in self._shard_dir.glob(f"*{SHARD_SUFFIX}"))

    def _shard_vectors(self) -> Iterator[np.ndarray]:
        """Every shard's vectors in row order, one shard in memory at a time."""
        expected = 0
        for first_row, path in self._shards():
            if first_row != expected:
                raise RuntimeError(f"{self._shard_dir}: no vectors for rows {expected} to {first_row}")
            vectors = np.load(path)
            yield vectors
            expected += len(vectors)


def _shard_rows(path: Path) -> int:
    return int(np.load(path, mmap_mode="r").shape[0])
