"""From the server's options to a ``PassageSource``: the corpus and the index to load, or the remote retriever.

An index directory's manifest (``manifest.py``) says what to load: a BM25 index (memory-mapped), a FAISS index with
the encoder that embedded its passages, or a Milvus collection (a Lite file in the directory, or a server). The
corpus is checked against the manifest's checksum first. Several directories are fused by reciprocal rank.
Without a directory: BM25 built in memory, or Search-R1's ``e5_Flat.index`` layout with an e5 encoder.
"""

from __future__ import annotations

import argparse
import fcntl
from pathlib import Path
from typing import Any

from rlfactory_tool_servers.search.corpus import Corpus, load_corpus
from rlfactory_tool_servers.search.index_build import BUILD_DIR, build_index
from rlfactory_tool_servers.search.manifest import MANIFEST_FILE, IndexManifest, read_manifest
from rlfactory_tool_servers.search.passages import LocalPassages, PassageSource
from rlfactory_tool_servers.search.ranking import Retriever


def make_source(options: argparse.Namespace) -> PassageSource:
    """The passages ``options`` (``server.parse_options``) ask for, loaded."""
    if options.retriever_url is not None:
        from rlfactory_tool_servers.search.remote_passages import RemotePassages

        return RemotePassages(options.retriever_url)
    corpus = load_corpus(options.corpus)
    return LocalPassages(corpus, make_retriever(options, corpus), describe_source(options))


def make_retriever(options: argparse.Namespace, corpus: Corpus) -> Retriever:
    """The retriever over ``corpus`` that ``options`` ask for."""
    if options.index_dir:
        retrievers = [load_index(index_dir, corpus, options) for index_dir in options.index_dir]
        if len(retrievers) == 1:
            return retrievers[0]
        from rlfactory_tool_servers.search.hybrid import FusedRetriever

        return FusedRetriever(retrievers, k=options.fusion_k)
    if options.retriever == "faiss":
        from rlfactory_tool_servers.search.dense_retriever import DenseRetriever
        from rlfactory_tool_servers.search.encoders import encoder_record_for, make_query_encoder

        record = encoder_record_for(options.encoder, preset="e5", device=options.device)
        encoder = make_query_encoder(record, device=options.device)
        return DenseRetriever.load(options.faiss_index, encoder, num_docs=len(corpus))
    from rlfactory_tool_servers.search.bm25_retriever import BM25Retriever

    return BM25Retriever.build(corpus.contents)


def load_index(index_dir: Path, corpus: Corpus, options: argparse.Namespace) -> Retriever:
    """The index built in ``index_dir`` from ``corpus``. A new or empty directory, when the options ask for BM25,
    gets a BM25 index built into it first (so a later start only loads it)."""
    if not (index_dir / MANIFEST_FILE).is_file() and options.retriever == "bm25" and _is_empty_or_building(index_dir):
        build_bm25_once(options.corpus, index_dir)
    manifest = read_manifest(index_dir)
    manifest.check_corpus(index_dir, len(corpus), corpus.checksum, options.corpus)
    if manifest.backend == "bm25":
        from rlfactory_tool_servers.search.bm25_retriever import BM25Retriever

        return BM25Retriever.load(index_dir)
    from rlfactory_tool_servers.search.encoders import make_query_encoder

    encoder = make_query_encoder(manifest.encoder, device=options.device)
    if manifest.backend == "faiss":
        from rlfactory_tool_servers.search.dense_retriever import DenseRetriever

        retriever = DenseRetriever.load(index_dir / manifest.faiss.file, encoder, num_docs=len(corpus))
        apply_search_params(retriever.index, manifest)
        return retriever
    from rlfactory_tool_servers.search.milvus_index import MilvusRetriever

    return MilvusRetriever.load(index_dir, manifest.milvus, encoder, num_docs=len(corpus), uri=options.milvus_uri,
                                search_params=manifest.milvus.search_params)


def apply_search_params(index: Any, manifest: IndexManifest) -> None:
    """Set an approximate FAISS index's search-time parameters (HNSW ``efSearch``, IVF ``nprobe``) from the
    manifest, which is what a user edits to tune them (the index file holds the values it was built with)."""
    params = manifest.faiss.params
    if manifest.faiss.index_type == "hnsw" and "efSearch" in params:
        index.hnsw.efSearch = params["efSearch"]
    elif manifest.faiss.index_type == "ivfpq" and "nprobe" in params:
        from rlfactory_tool_servers.search.dense_retriever import import_faiss

        import_faiss().extract_index_ivf(index).nprobe = params["nprobe"]


def describe_source(options: argparse.Namespace) -> str:
    """What ``options`` serve, in a few words, without loading anything."""
    if options.retriever_url is not None:
        from rlfactory_tool_servers.search.remote_passages import retriever_endpoint

        return f"Search-R1 retriever at {retriever_endpoint(options.retriever_url)}"
    if options.index_dir:
        indexes = " + ".join(describe_index(index_dir, options) for index_dir in options.index_dir)
        fused = f", fused by reciprocal rank (k={options.fusion_k})" if len(options.index_dir) > 1 else ""
        return f"corpus {options.corpus}, {indexes}{fused}"
    if options.retriever == "faiss":
        return f"corpus {options.corpus}, dense retriever (index {options.faiss_index}, encoder {options.encoder})"
    return f"corpus {options.corpus}, BM25 retriever"


def describe_index(index_dir: Path, options: argparse.Namespace) -> str:
    try:
        manifest = read_manifest(index_dir)
    except ValueError:
        return f"BM25 index built into {index_dir}" if options.retriever == "bm25" else f"index {index_dir}"
    if manifest.backend == "bm25":
        return f"BM25 index {index_dir}"
    model = manifest.encoder.model if manifest.encoder else "?"
    if manifest.backend == "faiss":
        return f"FAISS {manifest.faiss.index_type} index {index_dir} (encoder {model})"
    uri = options.milvus_uri or manifest.milvus.uri
    return f"Milvus collection {manifest.milvus.collection} at {uri} (index {index_dir}, encoder {model})"


def build_bm25_once(corpus_path: Path, index_dir: Path) -> None:
    """Build the BM25 index of ``corpus_path`` into ``index_dir`` unless another process has: the server processes
    of a pool start together, and the first to take the lock builds (or resumes a build) while the others wait."""
    index_dir.parent.mkdir(parents=True, exist_ok=True)
    with (index_dir.parent / f".{index_dir.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (index_dir / MANIFEST_FILE).is_file():
            build_index(corpus_path, index_dir, backend="bm25", progress=False)


def _is_empty_or_building(directory: Path) -> bool:
    return (not directory.exists() or (directory.is_dir() and not any(directory.iterdir()))
            or (directory / BUILD_DIR).is_dir())
