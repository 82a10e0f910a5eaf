"""``rlf index build``: an index over a corpus file, built while streaming the corpus, resumable, manifest last.

The corpus is read once, chunk by chunk (``PassageReader``): a BM25 build keeps only each passage's token ids
(``bm25_build.py``), a dense build only the chunk in hand, whose passages are encoded (``encoders.TextEncoder``)
and handed to a vector sink (``vector_build.FaissSink``, or ``milvus_index.MilvusSink``). After each chunk, the
build's state is saved to ``DIR/.build/state.json``: its parameters, the corpus's identity (path, size, mtime and a
hash of its first MiB) and how many passages are done. Running the same build again resumes after the last chunk
saved; another corpus or other parameters over a stopped build are refused unless ``overwrite``.

When every file of the index is complete, ``DIR/manifest.json`` is written (with the corpus's checksum and passage
count, from the same single read), and ``DIR/.build`` removed. A directory holding anything this builder did not
write is never built into, nor cleared, even with ``overwrite``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tqdm import tqdm

from rlfactory_tool_servers.search.corpus import PassageReader
from rlfactory_tool_servers.search.encoders import Preset
from rlfactory_tool_servers.search.manifest import (MANIFEST_FILE, Backend, BM25Record, CorpusRecord, EncoderRecord,
                                                    FaissRecord, IndexManifest, ManifestError, MilvusRecord,
                                                    read_manifest, write_manifest)
from rlfactory_tool_servers.search.vector_build import INDEX_FILE, FaissType, VectorSink

BUILD_DIR = ".build"
STATE_FILE = "state.json"
_HEAD_BYTES = 1 << 20
_BM25_FILE_SUFFIXES = (".index.json", ".index.npy")  # what bm25s.BM25.save writes


class BuildInterrupted(KeyboardInterrupt):
    """A build stopped by Ctrl-C; its first ``done`` passages are saved, and the same build resumes after them."""

    def __init__(self, done: int) -> None:
        super().__init__(f"interrupted after {done} passages")
        self.done = done


def build_index(corpus_path: str | Path, out_dir: str | Path, *, backend: Backend, model: str | None = None,
                preset: Preset = "auto", max_length: int = 256, faiss_type: FaissType = "flat",
                faiss_params: Mapping[str, int] | None = None, milvus_uri: str | None = None,
                collection: str = "passages", batch_size: int = 128, chunk_passages: int = 8192,
                device: str | None = None, progress: bool = True, overwrite: bool = False) -> IndexManifest:
    """Build a ``backend`` index of the jsonl corpus at ``corpus_path`` into ``out_dir`` and return its manifest.

    Dense backends (``faiss``, ``milvus``) embed passages with ``model`` (``encoders.encoder_record_for`` with
    ``preset`` and ``max_length``), ``batch_size`` at a time on ``device``. A state is saved every
    ``chunk_passages`` passages. ``ValueError`` for a missing corpus, a bad option, or an ``out_dir`` that cannot
    be built into (see the module's description); ``BuildInterrupted`` when stopped by Ctrl-C.
    """
    corpus_path, out_dir = Path(corpus_path), Path(out_dir)
    if not corpus_path.is_file():
        raise ValueError(f"no corpus file at {corpus_path}; give a wiki-18 style jsonl file with --corpus")
    if chunk_passages < 1 or batch_size < 1:
        raise ValueError("chunk_passages and batch_size must be at least 1")
    encoder_record = _encoder_record(backend, model, preset, max_length, device)
    given_faiss_params = dict(faiss_params or {})
    if backend == "faiss":
        from rlfactory_tool_servers.search.vector_build import check_faiss_params

        check_faiss_params(faiss_type, given_faiss_params, encoder_record.dimensions)
    elif given_faiss_params or faiss_type != "flat":
        raise ValueError(f"--faiss-type and --faiss-param are for --backend faiss, not {backend}")
    if milvus_uri is not None and backend != "milvus":
        raise ValueError(f"--milvus-uri is for --backend milvus, not {backend}")
    params = _build_params(backend, encoder_record, faiss_type, given_faiss_params, milvus_uri, collection)
    if backend == "milvus" and milvus_uri is not None and not overwrite and BuildState.read(out_dir) is None:
        # Before any state is written: a refused build must be refused again, not resumed into the collection.
        _refuse_existing_collection(milvus_uri, collection)
    state = _start_or_resume(out_dir, params, corpus_path, overwrite)

    reader = PassageReader(corpus_path, skip=state.done)
    try:
        if backend == "bm25":
            section = _build_bm25(out_dir, reader, state, chunk_passages, progress)
        else:
            sink = _make_sink(out_dir, backend, encoder_record.dimensions, faiss_type, given_faiss_params,
                              milvus_uri, collection, overwrite=overwrite, resume_rows=state.done)
            section = _build_dense(reader, state, encoder_record, chunk_passages, progress, batch_size, device, sink)
    except KeyboardInterrupt:
        raise BuildInterrupted(state.done) from None
    manifest = IndexManifest(
        backend=backend,
        corpus=CorpusRecord(path=str(corpus_path.resolve()), passages=reader.count, checksum=reader.checksum),
        encoder=encoder_record,
        bm25=section if backend == "bm25" else None,
        faiss=section if backend == "faiss" else None,
        milvus=section if backend == "milvus" else None,
        build_seconds=round(state.seconds(), 3),
    )
    write_manifest(out_dir, manifest)
    shutil.rmtree(out_dir / BUILD_DIR, ignore_errors=True)
    return manifest


class BuildState:
    """``DIR/.build/state.json``: what is being built from which corpus, how far it got and in how long.

    ``resumed``: whether the state was read back from a stopped build (rather than started by this run).
    """

    def __init__(self, index_dir: Path, params: dict[str, Any], corpus: dict[str, Any], *, done: int = 0,
                 earlier_seconds: float = 0.0, resumed: bool = False) -> None:
        self.index_dir = index_dir
        self.params = params
        self.corpus = corpus
        self.done = done
        self.resumed = resumed
        self._earlier_seconds = earlier_seconds  # spent by the runs before this one
        self._started = time.monotonic()

    def seconds(self) -> float:
        """The build's time so far, over every run of it."""
        return self._earlier_seconds + time.monotonic() - self._started

    @property
    def path(self) -> Path:
        return self.index_dir / BUILD_DIR / STATE_FILE

    @classmethod
    def read(cls, index_dir: Path) -> BuildState | None:
        path = index_dir / BUILD_DIR / STATE_FILE
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(index_dir, data["params"], data["corpus"], done=int(data["done"]),
                       earlier_seconds=float(data["seconds"]), resumed=True)
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"{path} is not a build state; run with --overwrite to start the build over") from None

    def checkpoint(self, done: int) -> None:
        """Record ``done`` passages (atomically: a reader sees the old state or the new)."""
        self.done = done
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(STATE_FILE + ".partial")
        partial.write_text(json.dumps({"params": self.params, "corpus": self.corpus, "done": done,
                                       "seconds": round(self.seconds(), 3)}, indent=2) + "\n", encoding="utf-8")
        os.replace(partial, self.path)


def corpus_identity(corpus_path: Path) -> dict[str, Any]:
    """What tells a corpus file apart cheaply: its absolute path, size, modification time and first MiB's hash."""
    stat = corpus_path.stat()
    with corpus_path.open("rb") as data:
        head = hashlib.blake2b(data.read(_HEAD_BYTES), digest_size=16).hexdigest()
    return {"path": str(corpus_path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "head": head}


def _encoder_record(backend: Backend, model: str | None, preset: Preset, max_length: int,
                    device: str | None) -> EncoderRecord | None:
    if backend == "bm25":
        if model is not None:
            raise ValueError("--model is for the dense backends (faiss, milvus); BM25 uses no model")
        return None
    if backend not in ("faiss", "milvus"):
        raise ValueError(f"unknown backend {backend!r}; choose bm25, faiss or milvus")
    if not model:
        raise ValueError(f"--backend {backend} needs --model: a sentence-transformers or Hugging Face model (a local "
                         "directory, all-MiniLM-L6-v2, or a Hub name such as intfloat/e5-base-v2)")
    from rlfactory_tool_servers.search.encoders import encoder_record_for

    return encoder_record_for(model, preset=preset, max_length=max_length, device=device)


def _build_params(backend: Backend, encoder: EncoderRecord | None, faiss_type: FaissType,
                  faiss_params: dict[str, int], milvus_uri: str | None, collection: str) -> dict[str, Any]:
    """The parameters a resumed build must share with the build it resumes."""
    params: dict[str, Any] = {"backend": backend}
    if encoder is not None:
        params["encoder"] = encoder.model_dump()
    if backend == "faiss":
        params["faiss"] = {"index_type": faiss_type, "params": dict(sorted(faiss_params.items()))}
    if backend == "milvus":
        params["milvus"] = {"uri": milvus_uri, "collection": collection}
    return params


def _start_or_resume(out_dir: Path, params: dict[str, Any], corpus_path: Path, overwrite: bool) -> BuildState:
    """The state to go on from: a stopped build of the same parameters and corpus, or a new one (``out_dir``
    cleared of an earlier index first when ``overwrite``). ``ValueError`` saying why ``out_dir`` cannot be used."""
    corpus = corpus_identity(corpus_path)
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"--out {out_dir} is a file; give a directory for the index")
    entries = sorted(entry.name for entry in out_dir.iterdir()) if out_dir.is_dir() else []
    unrelated = [name for name in entries if name not in _builder_files() and not name.endswith(_BM25_FILE_SUFFIXES)]
    if unrelated:
        shown = ", ".join(unrelated[:5]) + (", ..." if len(unrelated) > 5 else "")
        raise ValueError(f"--out {out_dir} holds files that are not an index built by rlf index build ({shown}); "
                         "give a new or empty directory")
    if entries and not overwrite:
        if MANIFEST_FILE in entries:
            raise ValueError(f"{out_dir} already holds a built index ({_describe_built(out_dir)}); pass --overwrite "
                             "to replace it, or give another --out")
        stopped = BuildState.read(out_dir)
        if stopped is None:
            raise ValueError(f"{out_dir} holds part of an index with no build state to resume; pass --overwrite to "
                             "start over, or give another --out")
        if stopped.params == params and stopped.corpus == corpus:
            return stopped
        what = "corpus" if stopped.corpus != corpus else _differing_params(stopped.params, params)
        raise ValueError(f"{out_dir} holds a stopped build with another {what} ({stopped.done} passages done); "
                         "pass --overwrite to start over, or give another --out")
    for name in entries:
        path = out_dir / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    out_dir.mkdir(parents=True, exist_ok=True)
    state = BuildState(out_dir, params, corpus)
    state.checkpoint(0)
    return state


def _builder_files() -> set[str]:
    """The names of what a build writes into an index directory, besides the BM25 files."""
    from rlfactory_tool_servers.search.milvus_index import LITE_FILE

    return {MANIFEST_FILE, f"{MANIFEST_FILE}.partial", BUILD_DIR, INDEX_FILE, f"{INDEX_FILE}.partial", LITE_FILE}


def _describe_built(out_dir: Path) -> str:
    try:
        manifest = read_manifest(out_dir)
    except ManifestError:
        return "an unreadable manifest"
    return f"{manifest.backend}, {manifest.corpus.passages} passages of {manifest.corpus.path}"


def _differing_params(old: dict[str, Any], new: dict[str, Any]) -> str:
    keys = sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key))
    return " and ".join(f"{key} ({json.dumps(old.get(key))} before, {json.dumps(new.get(key))} now)"
                        for key in keys)


def _refuse_existing_collection(uri: str, collection: str) -> None:
    from rlfactory_tool_servers.search.milvus_index import connect, disconnect

    client = connect(uri)
    try:
        exists = client.has_collection(collection)
    finally:
        disconnect(client, uri)
    if exists:
        raise ValueError(f"the Milvus at {uri} already has a collection {collection}; pass --overwrite to replace "
                         "it, or give another --collection")


def _make_sink(out_dir: Path, backend: Backend, dimensions: int, faiss_type: FaissType,
               faiss_params: dict[str, int], milvus_uri: str | None, collection: str, *, overwrite: bool,
               resume_rows: int) -> VectorSink:
    """The sink of a dense build; ``overwrite``: replace what the collection holds (a new build asked to)."""
    if backend == "faiss":
        from rlfactory_tool_servers.search.vector_build import FaissSink

        return FaissSink(out_dir, shard_dir=out_dir / BUILD_DIR / "vectors", dimensions=dimensions,
                         index_type=faiss_type, params=faiss_params, resume_rows=resume_rows)
    from rlfactory_tool_servers.search.milvus_index import MilvusSink

    return MilvusSink(out_dir, uri=milvus_uri, collection=collection, dimensions=dimensions, overwrite=overwrite)


def _build_bm25(out_dir: Path, reader: PassageReader, state: BuildState, chunk_passages: int,
                progress: bool) -> BM25Record:
    from rlfactory_tool_servers.search.bm25_build import BM25Builder

    builder = BM25Builder(out_dir / BUILD_DIR / "tokens", resume_rows=state.done)
    _feed(reader, state, chunk_passages, progress, "tokenising", builder.add)
    return builder.finish(out_dir, show_progress=progress)


def _build_dense(reader: PassageReader, state: BuildState, record: EncoderRecord,
                 chunk_passages: int, progress: bool, batch_size: int, device: str | None,
                 sink: VectorSink) -> FaissRecord | MilvusRecord:
    from rlfactory_tool_servers.search.encoders import TextEncoder

    try:
        encoder = TextEncoder(record, device=device, batch_size=batch_size)
        _feed(reader, state, chunk_passages, progress, "encoding",
              lambda first_row, texts: sink.add(first_row, encoder.encode_passages(texts)))
        return sink.finish(expected_rows=reader.count)
    finally:
        sink.close()


def _feed(reader: PassageReader, state: BuildState, chunk_passages: int, progress: bool, action: str,
          add: Callable[[int, list[str]], None]) -> None:
    """Hand every passage after ``state.done`` to ``add(first_row, texts)`` a chunk at a time, saving the state
    after each chunk."""
    with tqdm(desc=action, unit=" passages", initial=state.done, disable=not progress, file=sys.stderr,
              dynamic_ncols=True) as bar:
        for texts in _chunks(reader, chunk_passages):
            add(state.done, texts)
            state.checkpoint(state.done + len(texts))
            bar.update(len(texts))


def _chunks(reader: PassageReader, size: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    for _, contents in reader:
        chunk.append(contents)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
