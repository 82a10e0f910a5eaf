"""``build_index``: real corpora, the real MiniLM model, real FAISS and bm25s files; resuming and refusing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rlfactory_tool_servers.search import bm25_build, vector_build
from rlfactory_tool_servers.search.bm25_retriever import BM25Retriever
from rlfactory_tool_servers.search.corpus import file_checksum, load_corpus
from rlfactory_tool_servers.search.dense_retriever import DenseRetriever, import_faiss
from rlfactory_tool_servers.search.encoders import TextEncoder, make_query_encoder
from rlfactory_tool_servers.search.index_build import BUILD_DIR, STATE_FILE, BuildInterrupted, build_index
from rlfactory_tool_servers.search.manifest import MANIFEST_FILE, read_manifest
from rlfactory_tool_servers.search.vector_build import FaissSink
from tests.search.conftest import MINILM, SAMPLE_MAX_LENGTH, write_passages

SPREAD_ROWS = list(range(0, 1000, 20))  # 50 passages over the whole sample
MIN_TOP5_RATE = 0.88  # observed 0.92 (46 of 50) with MiniLM at 128 tokens
MIN_HNSW_RECALL = 0.98  # observed 1.0
MIN_IVFPQ_RECALL = 0.7  # observed 0.78 (default nlist 25, m 48, nbits 8, nprobe 16)


def words_of(contents: str, start: int = 10, count: int = 10) -> str:
    """``count`` consecutive words of a passage's text (not its title line), from word ``start`` on: far enough
    in that they are not the title again, as a wiki-18 text often begins."""
    text = contents.split("\n", 1)[1]
    return " ".join(text.split()[start:start + count])


@pytest.fixture(scope="module")
def sample_queries(wiki_sample) -> list[str]:
    contents = load_corpus(wiki_sample).contents
    return [words_of(contents[row]) for row in SPREAD_ROWS]


@pytest.fixture(scope="module")
def flat_vectors(minilm_sample_index) -> np.ndarray:
    index = import_faiss().read_index(str(minilm_sample_index / "index.faiss"))
    return index.reconstruct_n(0, index.ntotal)


@pytest.fixture(scope="module")
def query_encoder(minilm_sample_index):
    return make_query_encoder(read_manifest(minilm_sample_index).encoder, device="cpu")


def test_dense_index_finds_a_passage_from_words_of_its_text(minilm_sample_index, sample_queries, query_encoder):
    manifest = read_manifest(minilm_sample_index)
    retriever = DenseRetriever.load(minilm_sample_index / manifest.faiss.file, query_encoder, num_docs=1000)
    found = [row in ranked.indices for row, ranked in zip(SPREAD_ROWS, retriever.rank(sample_queries, 5))]
    assert sum(found) / len(found) >= MIN_TOP5_RATE, f"top-5 rate {sum(found) / len(found):.2f}"


def test_dense_manifest_and_rows(minilm_sample_index, wiki_sample, flat_vectors):
    manifest = read_manifest(minilm_sample_index)
    assert manifest.backend == "faiss" and manifest.faiss.index_type == "flat" and manifest.faiss.params == {}
    assert manifest.corpus.passages == 1000 and manifest.corpus.checksum == file_checksum(wiki_sample)
    assert manifest.encoder.model == MINILM and manifest.encoder.dimensions == 384
    assert manifest.encoder.max_length == SAMPLE_MAX_LENGTH and manifest.build_seconds > 0
    assert sorted(path.name for path in minilm_sample_index.iterdir()) == ["index.faiss", MANIFEST_FILE]
    assert flat_vectors.shape == (1000, 384)
    np.testing.assert_allclose(np.linalg.norm(flat_vectors, axis=1), 1.0, atol=1e-5)
    contents = load_corpus(wiki_sample).contents
    rows = [0, 249, 250, 777, 999]  # chunk edges included: row i of the index embeds passage i
    encoded = TextEncoder(manifest.encoder, device="cpu").encode_passages([contents[row] for row in rows])
    np.testing.assert_allclose(flat_vectors[rows], encoded, atol=1e-5)


def _recall_at_10(index_dir: Path, queries: np.ndarray, exact: np.ndarray) -> float:
    _, found = import_faiss().read_index(str(index_dir / "index.faiss")).search(queries, 10)
    return float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(exact, found)]))


@pytest.mark.parametrize("index_type, min_recall", [("hnsw", MIN_HNSW_RECALL), ("ivfpq", MIN_IVFPQ_RECALL)])
def test_approximate_indexes_recall_what_flat_finds(index_type, min_recall, minilm_sample_index, flat_vectors,
                                                    sample_queries, query_encoder, tmp_path):
    faiss = import_faiss()
    queries = query_encoder(sample_queries)
    _, exact = faiss.read_index(str(minilm_sample_index / "index.faiss")).search(queries, 10)
    sink = FaissSink(tmp_path, shard_dir=tmp_path / "shards", dimensions=384, index_type=index_type)
    for first_row in range(0, 1000, 300):
        sink.add(first_row, flat_vectors[first_row:first_row + 300])
    record = sink.finish(expected_rows=1000)
    assert _recall_at_10(tmp_path, queries, exact) >= min_recall
    index = faiss.read_index(str(tmp_path / "index.faiss"))
    if index_type == "hnsw":
        assert record.params == {"M": 32, "efConstruction": 200, "efSearch": 128}
        assert index.hnsw.efSearch == 128
    else:
        assert record.params == {"nlist": 25, "m": 48, "nbits": 8, "nprobe": 16, "train_points": 1000}
        assert faiss.extract_index_ivf(index).nprobe == 16 and index.nlist == 25


def test_faiss_parameters_are_checked():
    with pytest.raises(ValueError, match="the flat index has no parameter 'M'"):
        vector_build.check_faiss_params("flat", {"M": 8}, 384)
    with pytest.raises(ValueError, match="the hnsw index has no parameter 'nlist'"):
        vector_build.check_faiss_params("hnsw", {"nlist": 8}, 384)
    with pytest.raises(ValueError, match="m \\(7\\) must divide the vector size 384"):
        vector_build.check_faiss_params("ivfpq", {"m": 7}, 384)
    with pytest.raises(ValueError, match="trains on at least 256 vectors, but there are 100"):
        vector_build.faiss_params_for("ivfpq", {}, rows=100, dimensions=384)
    assert vector_build.faiss_params_for("ivfpq", {"nbits": 4, "nprobe": 3}, rows=100, dimensions=768) == {
        "nlist": 2, "m": 96, "nbits": 4, "nprobe": 3, "train_points": 100}


def test_streamed_bm25_ranks_as_the_in_memory_build(wiki_sample, tmp_path):
    manifest = build_index(wiki_sample, tmp_path, backend="bm25", chunk_passages=128, progress=False)
    assert manifest.bm25.k1 == 0.9 and manifest.bm25.b == 0.4 and manifest.encoder is None
    assert manifest.corpus.passages == 1000 and manifest.corpus.checksum == file_checksum(wiki_sample)
    corpus = load_corpus(wiki_sample)
    queries = [words_of(corpus.contents[row], start=3, count=6) for row in range(7, 1000, 41)]
    queries += ["who won the world cup", "the of and", "zzqx unknownword", "Genentech lobbyist Washington"]
    streamed = BM25Retriever.load(tmp_path).rank(queries, 10)
    in_memory = BM25Retriever.build(corpus.contents).rank(queries, 10)
    assert sum(bool(ranked.indices) for ranked in streamed) >= len(queries) - 2
    for got, expected in zip(streamed, in_memory):
        assert got.indices == expected.indices
        np.testing.assert_allclose(got.scores, expected.scores, rtol=1e-6)


def _interrupt_on_call(monkeypatch, owner, name: str, call: int, *, after: bool = False) -> list[int]:
    """Make ``owner.name(first_row, ...)`` raise KeyboardInterrupt on its ``call``-th call, before doing its work
    or ``after`` it (its chunk stored, the build's checkpoint not yet saved); the first rows of every call made."""
    original = getattr(owner, name)
    first_rows: list[int] = []

    def add(self, first_row, *args):
        first_rows.append(first_row)
        if len(first_rows) == call and not after:
            raise KeyboardInterrupt
        original(self, first_row, *args)
        if len(first_rows) == call:
            raise KeyboardInterrupt

    monkeypatch.setattr(owner, name, add)
    return first_rows


def test_interrupted_bm25_build_resumes_after_its_last_checkpoint(wiki_sample, tmp_path, monkeypatch):
    out, whole = tmp_path / "resumed", tmp_path / "whole"
    calls = _interrupt_on_call(monkeypatch, bm25_build.BM25Builder, "add", 3, after=True)
    with pytest.raises(BuildInterrupted) as stopped:
        build_index(wiki_sample, out, backend="bm25", chunk_passages=100, progress=False)
    assert stopped.value.done == 200 and calls == [0, 100, 200]
    assert json.loads((out / BUILD_DIR / STATE_FILE).read_text())["done"] == 200
    assert len(list((out / BUILD_DIR).rglob("*.npz"))) == 3  # the third chunk's, saved after the last checkpoint
    assert not (out / MANIFEST_FILE).exists()
    with pytest.raises(ValueError, match="holds no built index.*interrupted build"):
        read_manifest(out)
    monkeypatch.undo()

    calls = _interrupt_on_call(monkeypatch, bm25_build.BM25Builder, "add", 0)
    resumed = build_index(wiki_sample, out, backend="bm25", chunk_passages=100, progress=False)
    assert calls == list(range(200, 1000, 100))
    assert resumed.corpus.passages == 1000 and not (out / BUILD_DIR).exists()
    build_index(wiki_sample, whole, backend="bm25", chunk_passages=100, progress=False)
    for name in ("data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy"):
        assert np.array_equal(np.load(out / name), np.load(whole / name)), name
    assert json.loads((out / "vocab.index.json").read_text()) == json.loads((whole / "vocab.index.json").read_text())


def test_interrupted_dense_build_resumes_without_reencoding(offline_hub, wiki_sample, tmp_path, monkeypatch):
    corpus = write_passages(tmp_path / "corpus.jsonl", wiki_sample, 40, start=300)
    out, whole = tmp_path / "resumed", tmp_path / "whole"
    options = {"backend": "faiss", "model": MINILM, "max_length": 64, "chunk_passages": 10, "progress": False}
    calls = _interrupt_on_call(monkeypatch, FaissSink, "add", 3, after=True)
    with pytest.raises(BuildInterrupted) as stopped:
        build_index(corpus, out, **options)
    assert stopped.value.done == 20 and calls == [0, 10, 20]
    assert len(list((out / BUILD_DIR).rglob("*.npy"))) == 3  # the third chunk's, saved after the last checkpoint
    monkeypatch.undo()

    encoded: list[str] = []
    encode_passages = TextEncoder.encode_passages

    def counting(self, texts):
        encoded.extend(texts)
        return encode_passages(self, texts)

    monkeypatch.setattr(TextEncoder, "encode_passages", counting)
    manifest = build_index(corpus, out, **options)
    assert encoded == load_corpus(corpus).contents[20:]
    assert manifest.corpus.passages == 40 and sorted(p.name for p in out.iterdir()) == ["index.faiss", MANIFEST_FILE]
    build_index(corpus, whole, **options)
    faiss = import_faiss()
    resumed_vectors = faiss.read_index(str(out / "index.faiss")).reconstruct_n(0, 40)
    np.testing.assert_allclose(resumed_vectors, faiss.read_index(str(whole / "index.faiss")).reconstruct_n(0, 40),
                               atol=1e-6)


def test_a_stopped_build_of_other_settings_or_another_corpus_is_refused(offline_hub, wiki_sample, tmp_path,
                                                                        monkeypatch):
    corpus = write_passages(tmp_path / "corpus.jsonl", wiki_sample, 300)
    out = tmp_path / "index"
    _interrupt_on_call(monkeypatch, bm25_build.BM25Builder, "add", 2)
    with pytest.raises(BuildInterrupted):
        build_index(corpus, out, backend="bm25", chunk_passages=100, progress=False)
    monkeypatch.undo()
    with pytest.raises(ValueError, match="holds a stopped build with another backend .*--overwrite"):
        build_index(corpus, out, backend="faiss", model=MINILM, progress=False)

    with corpus.open("a", encoding="utf-8") as more:
        more.write(json.dumps({"id": "extra", "contents": '"Extra"\nOne more passage.'}) + "\n")
    with pytest.raises(ValueError, match="holds a stopped build with another corpus \\(100 passages done\\)"):
        build_index(corpus, out, backend="bm25", chunk_passages=100, progress=False)
    manifest = build_index(corpus, out, backend="bm25", chunk_passages=100, progress=False, overwrite=True)
    assert manifest.corpus.passages == 301


def test_a_built_index_is_replaced_only_with_overwrite(wiki_sample, tmp_path):
    corpus = write_passages(tmp_path / "corpus.jsonl", wiki_sample, 50)
    out = tmp_path / "index"
    first = build_index(corpus, out, backend="bm25", progress=False)
    with pytest.raises(ValueError, match="already holds a built index \\(bm25, 50 passages .*--overwrite"):
        build_index(corpus, out, backend="bm25", progress=False)
    assert read_manifest(out) == first
    write_passages(corpus, wiki_sample, 60)
    assert build_index(corpus, out, backend="bm25", progress=False, overwrite=True).corpus.passages == 60
    assert BM25Retriever.load(out).num_docs == 60


def test_a_directory_with_other_files_is_never_built_into_nor_cleared(wiki_sample, tmp_path):
    corpus = write_passages(tmp_path / "corpus.jsonl", wiki_sample, 20)
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.txt").write_text("mine")
    (home / MANIFEST_FILE).write_text("{}")
    for overwrite in (False, True):
        with pytest.raises(ValueError, match="holds files that are not an index built by rlf index build "
                                             "\\(notes.txt\\)"):
            build_index(corpus, home, backend="bm25", progress=False, overwrite=overwrite)
    assert sorted(path.name for path in home.iterdir()) == [MANIFEST_FILE, "notes.txt"]
    with pytest.raises(ValueError, match="is a file"):
        build_index(corpus, home / "notes.txt", backend="bm25", progress=False)


def test_leftovers_without_a_build_state_need_overwrite(wiki_sample, tmp_path):
    corpus = write_passages(tmp_path / "corpus.jsonl", wiki_sample, 20)
    out = tmp_path / "index"
    out.mkdir()
    (out / "index.faiss").write_bytes(b"half")
    with pytest.raises(ValueError, match="part of an index with no build state"):
        build_index(corpus, out, backend="bm25", progress=False)
    build_index(corpus, out, backend="bm25", progress=False, overwrite=True)
    assert not (out / "index.faiss").exists()

    (out / MANIFEST_FILE).unlink()
    (out / BUILD_DIR).mkdir()
    (out / BUILD_DIR / STATE_FILE).write_text("{not json")
    with pytest.raises(ValueError, match="state.json is not a build state; run with --overwrite"):
        build_index(corpus, out, backend="bm25", progress=False)
    assert build_index(corpus, out, backend="bm25", progress=False, overwrite=True).corpus.passages == 20


def test_option_errors(offline_hub, wiki_sample, tmp_path):
    with pytest.raises(ValueError, match="no corpus file at"):
        build_index(tmp_path / "missing.jsonl", tmp_path / "a", backend="bm25")
    with pytest.raises(ValueError, match="--backend faiss needs --model"):
        build_index(wiki_sample, tmp_path / "b", backend="faiss")
    with pytest.raises(ValueError, match="--model is for the dense backends"):
        build_index(wiki_sample, tmp_path / "c", backend="bm25", model=MINILM)
    with pytest.raises(ValueError, match="--faiss-type and --faiss-param are for --backend faiss, not bm25"):
        build_index(wiki_sample, tmp_path / "d", backend="bm25", faiss_params={"M": 8})
    with pytest.raises(ValueError, match="--faiss-type and --faiss-param are for --backend faiss, not milvus"):
        build_index(wiki_sample, tmp_path / "d", backend="milvus", model=MINILM, faiss_type="hnsw")
    with pytest.raises(ValueError, match="--milvus-uri is for --backend milvus, not faiss"):
        build_index(wiki_sample, tmp_path / "d", backend="faiss", model=MINILM, milvus_uri="other.db")
    with pytest.raises(ValueError, match="the flat index has no parameter 'efSearch'"):
        build_index(wiki_sample, tmp_path / "e", backend="faiss", model=MINILM, faiss_params={"efSearch": 8})
    assert not any((tmp_path / name).exists() for name in "abcde")


def test_milvus_build_resumes_and_guards_an_existing_collection(offline_hub, wiki_sample, tmp_path, monkeypatch):
    pytest.importorskip("milvus_lite", reason="the milvus extra (pymilvus with milvus-lite) is not installed")
    from rlfactory_tool_servers.search.milvus_index import MilvusRetriever, MilvusSink

    corpus = write_passages(tmp_path / "corpus.jsonl", wiki_sample, 24, start=600)
    out, shared_db = tmp_path / "index", tmp_path / "shared.db"
    options = {"backend": "milvus", "model": MINILM, "max_length": 64, "chunk_passages": 8, "progress": False}
    _interrupt_on_call(monkeypatch, MilvusSink, "add", 3)
    with pytest.raises(BuildInterrupted) as stopped:
        build_index(corpus, out, **options)
    assert stopped.value.done == 16
    monkeypatch.undo()
    manifest = build_index(corpus, out, **options)  # the stopped build let go of its Milvus Lite database
    assert manifest.milvus.uri == "milvus.db" and manifest.corpus.passages == 24
    contents = load_corpus(corpus).contents
    retriever = MilvusRetriever.load(out, manifest.milvus, make_query_encoder(manifest.encoder, device="cpu"),
                                     num_docs=24)
    try:
        ranked = retriever.rank([words_of(contents[row]) for row in (0, 17, 23)], 3)
    finally:
        retriever.close()
    assert [hits.indices[0] for hits in ranked] == [0, 17, 23]

    with MilvusSink(tmp_path / "elsewhere", uri=str(shared_db), collection="passages", dimensions=384):
        pass  # someone's collection in a database outside the index directory
    for _ in range(2):  # refused again on a second try: the refusal left no build state to resume into it
        with pytest.raises(ValueError, match=f"the Milvus at {shared_db} already has a collection passages; pass "
                                             "--overwrite"):
            build_index(corpus, tmp_path / "second", milvus_uri=str(shared_db), **options)
