"""``DIR/manifest.json``: what a built index is and which corpus it was built from.

``rlf index build`` writes it last, after every other file of the index, so a directory with a manifest holds a
complete index. A server reads it to pick the backend to load (``index_loading.py``), the query encoder to make,
and to refuse a corpus that is not the one the index was built from: rows of an index are passage numbers of
that corpus, so any other file would give wrong passages silently.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MANIFEST_FILE = "manifest.json"
FORMAT = 1

Backend = Literal["bm25", "faiss", "milvus"]


class ManifestError(ValueError):
    """A missing, unreadable or mismatched manifest; the message names the directory and what to do."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CorpusRecord(_Strict):
    """The corpus an index was built from: its path at build time (informational), passages and checksum."""

    path: str
    passages: int = Field(ge=1)
    checksum: str


class EncoderRecord(_Strict):
    """How passages were embedded, and so how queries must be: the model, its pooling, the text put before a query
    and before a passage (e5's ``"query: "``/``"passage: "``, bge's instruction), whether vectors are
    L2-normalised, the longest input in tokens, and the vector size."""

    model: str
    pooling: str
    query_prefix: str = ""
    passage_prefix: str = ""
    normalize: bool = True
    max_length: int = Field(default=256, ge=1)
    dimensions: int = Field(ge=1)


class BM25Record(_Strict):
    k1: float
    b: float
    stopwords: str
    stemmer: str


class FaissRecord(_Strict):
    """``index_type``: ``flat`` (exact), ``hnsw`` or ``ivfpq`` (approximate); ``file`` is relative to the index
    directory; ``params`` the index's build and search parameters (``M``, ``efSearch``, ``nlist``, ``nprobe``...)."""

    index_type: Literal["flat", "hnsw", "ivfpq"]
    file: str = "index.faiss"
    metric: Literal["ip"] = "ip"
    params: dict[str, int] = Field(default_factory=dict)


class MilvusRecord(_Strict):
    """``uri``: a Milvus Lite file relative to the index directory, or a server URI (``http://host:19530``);
    ``params`` the vector index's build parameters, ``search_params`` those of every search."""

    uri: str
    collection: str
    metric: Literal["IP"] = "IP"
    index_type: str = "FLAT"
    params: dict[str, int] = Field(default_factory=dict)
    search_params: dict[str, int] = Field(default_factory=dict)


class IndexManifest(_Strict):
    format: Literal[1] = FORMAT
    backend: Backend
    corpus: CorpusRecord
    encoder: EncoderRecord | None = None
    bm25: BM25Record | None = None
    faiss: FaissRecord | None = None
    milvus: MilvusRecord | None = None
    built_at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    build_seconds: float | None = None

    def model_post_init(self, context: object) -> None:
        needed = {"bm25": self.bm25, "faiss": self.faiss, "milvus": self.milvus}[self.backend]
        if needed is None:
            raise ValueError(f"a {self.backend} manifest needs its '{self.backend}' section")
        if self.backend != "bm25" and self.encoder is None:
            raise ValueError(f"a {self.backend} manifest needs its 'encoder' section")

    def check_corpus(self, index_dir: str | Path, passages: int, checksum: str, corpus_path: str | Path) -> None:
        """``ManifestError`` unless the corpus at ``corpus_path`` (``passages``, ``checksum``) is the one the
        index in ``index_dir`` was built from."""
        if (passages, checksum) != (self.corpus.passages, self.corpus.checksum):
            raise ManifestError(
                f"the index in {index_dir} was built from another corpus ({self.corpus.path}: "
                f"{self.corpus.passages} passages, {self.corpus.checksum}); {corpus_path} has {passages} passages, "
                f"{checksum}. Serve it with the corpus it was built from, or rebuild: rlf index build --corpus "
                f"{corpus_path} --backend {self.backend} --out NEW_DIR")


def read_manifest(index_dir: str | Path) -> IndexManifest:
    """The manifest of the index in ``index_dir``; ``ManifestError`` if there is none or it is not valid."""
    path = Path(index_dir) / MANIFEST_FILE
    if not path.is_file():
        hint = (" (an interrupted build: run the same rlf index build again to resume it)"
                if path.parent.is_dir() and any(path.parent.iterdir()) else "")
        raise ManifestError(f"{index_dir} holds no built index: no {MANIFEST_FILE}{hint}; build one with "
                            f"rlf index build --corpus CORPUS --backend bm25|faiss|milvus --out {index_dir}")
    try:
        return IndexManifest.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ManifestError(f"{path} is not a valid index manifest ({first}); rebuild the index with "
                            "rlf index build") from None


def write_manifest(index_dir: str | Path, manifest: IndexManifest) -> Path:
    """Write ``manifest`` into ``index_dir`` atomically (a reader never sees half a file)."""
    path = Path(index_dir) / MANIFEST_FILE
    partial = path.with_suffix(".json.partial")
    partial.write_text(manifest.model_dump_json(indent=2, exclude_none=True) + "\n", encoding="utf-8")
    os.replace(partial, path)
    return path
