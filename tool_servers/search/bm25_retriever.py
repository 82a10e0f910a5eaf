"""Sparse retrieval with ``bm25s``: English stopwords, PyStemmer's English stemmer, many queries per call.

The index can be cached in a directory (``BM25Retriever.cached``): built and saved with ``bm25s`` the first time,
memory-mapped from there afterwards. A small metadata file, written last, records the corpus it was built from
(a fingerprint of its passages) and the tokenizer and BM25 settings, so a cache built from another corpus or with
other settings is rebuilt, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from array import array
from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np
import Stemmer

logger = logging.getLogger(__name__)
# bm25s sets its own logger to DEBUG on import, which puts per-query chatter on the server's stderr.
logging.getLogger("bm25s").setLevel(logging.WARNING)

STOPWORDS = "en"
STEMMER_LANGUAGE = "english"
# Pyserini's (Anserini's) BM25 defaults, the parameters of Search-R1's BM25 retriever.
K1 = 0.9
B = 0.4

METADATA_FILE = "rlfactory_search_index.json"
METADATA_FORMAT = 1
FINGERPRINT_SAMPLE = 100_000
_HASH_CHUNK = 10_000


def corpus_fingerprint(contents: Sequence[str]) -> str:
    """A hash of the passage count, every passage's length, and the full text of an evenly spread sample.

    The sample is every passage of a corpus up to ``FINGERPRINT_SAMPLE`` passages, so small corpora are hashed
    whole, while wiki-18's 21M passages cost seconds, not the minute hashing all 13 GB would.
    """
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{len(contents)}\n".encode())
    for start in range(0, len(contents), _HASH_CHUNK):
        digest.update(array("q", map(len, contents[start:start + _HASH_CHUNK])).tobytes())
    stride = max(1, len(contents) // FINGERPRINT_SAMPLE)
    for start in range(0, len(contents), _HASH_CHUNK * stride):
        sample = contents[start:start + _HASH_CHUNK * stride:stride]
        digest.update("".join(sample).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _index_metadata(contents: Sequence[str]) -> dict[str, object]:
    return {
        "format": METADATA_FORMAT,
        "num_docs": len(contents),
        "corpus_blake2b": corpus_fingerprint(contents),
        "stopwords": STOPWORDS,
        "stemmer": STEMMER_LANGUAGE,
        "k1": K1,
        "b": B,
    }


class BM25Retriever:
    """Top-k passage indices for a list of queries, scored by BM25 over the corpus it was built from.

    Safe to call from several threads at once: the index is read-only and each thread gets its own stemmer.
    """

    def __init__(self, index: bm25s.BM25, *, n_threads: int = 0) -> None:
        """Wrap a built or loaded ``bm25s`` index; ``n_threads`` is passed on to ``bm25s.BM25.retrieve``."""
        self._index = index
        self._n_threads = n_threads
        self._local = threading.local()

    @property
    def num_docs(self) -> int:
        return int(self._index.scores["num_docs"])

    @classmethod
    def build(cls, contents: Sequence[str], *, n_threads: int = 0) -> BM25Retriever:
        """Index ``contents`` (passage ``i`` is ``contents[i]``) in memory."""
        tokens = bm25s.tokenize(list(contents), stopwords=STOPWORDS, stemmer=Stemmer.Stemmer(STEMMER_LANGUAGE),
                                show_progress=False)
        index = bm25s.BM25(k1=K1, b=B)
        index.index(tokens, show_progress=False)
        return cls(index, n_threads=n_threads)

    @classmethod
    def load(cls, index_dir: str | Path, *, mmap: bool = True, n_threads: int = 0) -> BM25Retriever:
        """Load an index saved by ``save``, its score arrays memory-mapped unless ``mmap`` is false."""
        index = bm25s.BM25.load(str(index_dir), mmap=mmap, load_corpus=False, show_progress=False)
        return cls(index, n_threads=n_threads)

    def save(self, index_dir: str | Path) -> None:
        """Write the index (not the passages) into ``index_dir`` with ``bm25s``."""
        self._index.save(str(index_dir), show_progress=False)

    @classmethod
    def cached(cls, contents: Sequence[str], index_dir: str | Path, *, n_threads: int = 0) -> BM25Retriever:
        """The index of ``contents``, loaded from ``index_dir`` if it was built there from the same corpus.

        Otherwise it is built, saved there, and returned. ``ValueError`` if ``index_dir`` holds files this module
        did not write (it refuses to overwrite them).
        """
        index_dir = Path(index_dir)
        metadata_path = index_dir / METADATA_FILE
        expected = _index_metadata(contents)
        if metadata_path.is_file():
            try:
                found = json.loads(metadata_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                found = None
            if found == expected:
                return cls.load(index_dir, n_threads=n_threads)
            logger.warning("BM25 index in %s was built from another corpus or with other settings; rebuilding",
                           index_dir)
            metadata_path.unlink()
        elif index_dir.exists() and any(index_dir.iterdir()):
            raise ValueError(f"{index_dir} is not empty and holds no BM25 index written by this server; "
                             "pass a new or empty directory as the index directory")
        retriever = cls.build(contents, n_threads=n_threads)
        index_dir.mkdir(parents=True, exist_ok=True)
        retriever.save(index_dir)
        # Written last: an interrupted save leaves no metadata, so the next start rebuilds.
        metadata_path.write_text(json.dumps(expected, indent=2), encoding="utf-8")
        return retriever

    def _stemmer(self) -> Stemmer.Stemmer:
        stemmer = getattr(self._local, "stemmer", None)
        if stemmer is None:
            stemmer = self._local.stemmer = Stemmer.Stemmer(STEMMER_LANGUAGE)
        return stemmer

    def retrieve(self, queries: list[str], topk: int) -> list[list[int]]:
        """For each query, the indices of its best ``topk`` passages, best first, in one ``bm25s`` call.

        Only passages that share at least one (stemmed, non-stopword) term with the query count, so a list may be
        shorter than ``topk``, and is empty when nothing matches; ``topk`` above the corpus size is allowed.
        """
        if topk < 1:
            raise ValueError(f"topk must be at least 1, got {topk}")
        if not queries:
            return []
        query_tokens = bm25s.tokenize(queries, stopwords=STOPWORDS, stemmer=self._stemmer(), return_ids=False,
                                      show_progress=False)
        ranked: list[list[int]] = [[] for _ in queries]
        # A query of stopwords only has no terms and matches nothing; bm25s need not score it.
        scored = [position for position, tokens in enumerate(query_tokens) if tokens]
        if not scored:
            return ranked
        indices, scores = self._index.retrieve([query_tokens[p] for p in scored], k=min(topk, self.num_docs),
                                               sorted=True, show_progress=False, n_threads=self._n_threads)
        for position, row_indices, row_scores in zip(scored, np.asarray(indices), np.asarray(scores)):
            # BM25 idf is positive for every term, so a zero score means no query term occurs in the passage.
            ranked[position] = row_indices[row_scores > 0].tolist()
        return ranked
