"""A BM25 index built from a corpus read in chunks, resumable after each chunk.

Each chunk is tokenised exactly as ``BM25Retriever`` tokenises (``bm25s.tokenize`` with its stopwords and stemmer;
tokens do not depend on the other passages), its token ids mapped into one vocabulary that grows chunk by chunk,
and saved as a shard under the build directory: the passages' ids as one int32 array, their lengths, and the tokens
the chunk added to the vocabulary. Only these compact arrays are kept, never the passages' text. ``finish`` scores
them all with ``bm25s`` (``K1``, ``B``) and saves the index where ``BM25Retriever.load`` reads it.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import bm25s
import numpy as np
import Stemmer

from rlfactory_tool_servers.search.bm25_retriever import B, K1, STEMMER_LANGUAGE, STOPWORDS, BM25Retriever
from rlfactory_tool_servers.search.manifest import BM25Record

SHARD_SUFFIX = ".tokens.npz"


class TokenShard(NamedTuple):
    """The token ids of consecutive passages: passage ``i`` of the shard is ``ids[offsets[i]:offsets[i + 1]]``."""

    ids: np.ndarray
    offsets: np.ndarray


class TokenIdRows:
    """Every passage's token ids, shard after shard, as the lists ``bm25s`` indexes (made one at a time, each time
    the rows are iterated: ``bm25s`` only takes their length and iterates over them)."""

    def __init__(self, shards: list[TokenShard]) -> None:
        self._shards = shards

    def __len__(self) -> int:
        return sum(len(shard.offsets) - 1 for shard in self._shards)

    def __iter__(self) -> Iterator[list[int]]:
        for shard in self._shards:
            ids, offsets = shard.ids, shard.offsets
            for start, end in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
                yield ids[start:end].tolist()


class _TokenizedCorpus(NamedTuple):
    """What ``bm25s.BM25.index`` takes for a corpus already turned into ids."""

    ids: TokenIdRows
    vocab: dict[str, int]


class BM25Builder:
    """Tokenises chunks of passages into shards under ``build_dir``, then builds the index from the shards.

    ``resume_rows``: passages already tokenised by an earlier run, whose shards are read back (their vocabulary
    rebuilt); shards beyond them, left by a chunk that never reached its checkpoint, are deleted.
    """

    def __init__(self, build_dir: Path, *, resume_rows: int = 0) -> None:
        self._dir = build_dir
        self._dir.mkdir(parents=True, exist_ok=True)
        self._stemmer = Stemmer.Stemmer(STEMMER_LANGUAGE)
        self.vocab: dict[str, int] = {}
        self.rows = 0
        for first_row, path in _shard_paths(build_dir):
            if first_row >= resume_rows:
                path.unlink()
                continue
            if first_row != self.rows:
                raise ValueError(f"{build_dir}: the token shards do not cover the passages before {resume_rows}; "
                                 "start over with --overwrite")
            with np.load(path) as shard:
                self._extend_vocab(_split_tokens(shard["new_tokens"]))
                self.rows += len(shard["offsets"]) - 1
        if self.rows != resume_rows:
            raise ValueError(f"{build_dir}: the token shards hold {self.rows} passages, the build state says "
                             f"{resume_rows}; start over with --overwrite")

    def add(self, first_row: int, texts: list[str]) -> None:
        """Tokenise ``texts`` (passages ``first_row ..``) and save them as one shard."""
        if first_row != self.rows:
            raise ValueError(f"expected passages from row {self.rows}, got row {first_row}")
        tokenized = bm25s.tokenize(texts, stopwords=STOPWORDS, stemmer=self._stemmer, show_progress=False)
        known = len(self.vocab)
        to_global = np.empty(len(tokenized.vocab), dtype=np.int32)
        for token, local_id in tokenized.vocab.items():
            to_global[local_id] = self.vocab.setdefault(token, len(self.vocab))
        new_tokens = list(self.vocab)[known:]
        lengths = np.fromiter((len(doc) for doc in tokenized.ids), dtype=np.int64, count=len(texts))
        local_ids = np.fromiter((token for doc in tokenized.ids for token in doc), dtype=np.int64,
                                count=int(lengths.sum()))
        shard = {"ids": to_global[local_ids], "offsets": np.concatenate([[0], np.cumsum(lengths)]),
                 "new_tokens": np.frombuffer("\n".join(new_tokens).encode("utf-8"), dtype=np.uint8)}
        buffer = io.BytesIO()
        np.savez(buffer, **shard)
        _write_atomically(self._dir / f"{first_row:012d}{SHARD_SUFFIX}", buffer.getvalue())
        self.rows += len(texts)

    def finish(self, index_dir: Path, *, show_progress: bool = False) -> BM25Record:
        """Score every passage's tokens, save the index into ``index_dir``, and say how it was built."""
        shards = []
        for _, path in _shard_paths(self._dir):
            with np.load(path) as shard:
                shards.append(TokenShard(shard["ids"], shard["offsets"]))
        rows = TokenIdRows(shards)
        if len(rows) != self.rows:
            raise ValueError(f"{self._dir}: the token shards hold {len(rows)} passages, expected {self.rows}")
        index = bm25s.BM25(k1=K1, b=B)
        index.index(_TokenizedCorpus(rows, dict(self.vocab)), show_progress=show_progress)
        BM25Retriever(index).save(index_dir)
        return BM25Record(k1=K1, b=B, stopwords=STOPWORDS, stemmer=STEMMER_LANGUAGE)

    def _extend_vocab(self, tokens: list[str]) -> None:
        for token in tokens:
            self.vocab[token] = len(self.vocab)


def _shard_paths(build_dir: Path) -> list[tuple[int, Path]]:
    return sorted((int(path.name.removesuffix(SHARD_SUFFIX)), path) for path in build_dir.glob(f"*{SHARD_SUFFIX}"))


def _split_tokens(packed: np.ndarray) -> list[str]:
    text = packed.tobytes().decode("utf-8")
    return text.split("\n") if text else []


def _write_atomically(path: Path, data: bytes) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    os.replace(partial, path)
