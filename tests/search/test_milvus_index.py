"""The Milvus backend on real Milvus Lite databases: vectors of real wiki-18 passages from all-MiniLM-L6-v2 go in
through ``MilvusSink`` and come back through ``MilvusRetriever``, in a build directory of each test."""

from __future__ import annotations

import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from rlfactory_tool_servers.search.manifest import MilvusRecord
from rlfactory_tool_servers.search.milvus_index import LITE_FILE, MilvusRetriever, MilvusSink, import_pymilvus
from tests.conftest import free_port
from tests.search.conftest import minilm_encode

pytest.importorskip("pymilvus", reason="the milvus extra (pymilvus) is not installed")
pytest.importorskip("milvus_lite", reason="the milvus extra (milvus-lite) is not installed")

COLLECTION = "passages"
MIN_TOP1_RATE = 0.9  # observed: 20 of 20 at top 1
MIN_TOP5_RATE = 0.95  # observed: 20 of 20

# Questions written by hand from one passage's words each (row: question).
QUESTIONS = {
    0: "lobbyist for Genentech who died in 2015",
    9: "Red Army airborne corps in the Vyazma landing",
    13: "historian from Trinidad and Tobago who ran a virtual museum",
    14: "concrete arch dam in the Superstition Mountains near Phoenix",
    17: "women's basketball coach, daughter of Dick Bennett",
    18: "Scottish-American actress born in Glasgow in 1918",
    42: "international art competition for children aged 8 to 12",
    45: "engine part pressing valves open, worn by the camshaft",
    50: "first British woman to swim the English Channel",
    59: "design style that appeared in France before World War I",
    67: "Italian wooden fighter interceptor of World War II",
    86: "road junction in the Sinai fought over by Israel and Egypt",
    89: "song by Rudy Clark later covered by George Harrison",
    100: "Egyptian town on the Gulf of Suez in South Sinai",
    111: "ground orchid endemic to south-eastern Australia",
    112: "live NBC anthology drama series sponsored by an aluminium company",
    130: "warehouse in New Orleans where parade floats are built",
    131: "founder of The Overlook Press and head of Penguin",
    138: "oldest Native American church on Cape Cod",
    143: "Guam government agency for mental health",
}


@pytest.fixture(scope="session")
def passages(subset_passages: list[str]) -> list[str]:
    return subset_passages


@pytest.fixture(scope="session")
def model(minilm):
    return minilm


@pytest.fixture(scope="session")
def vectors(subset_vectors: np.ndarray) -> np.ndarray:
    return subset_vectors


def encode(model, texts: list[str]) -> np.ndarray:
    return minilm_encode(model, texts)


def stored_vector_encoder(passages: list[str], vectors: np.ndarray):
    """A query encoder that embeds a passage's text as the model embedded it at build time (no second model pass)."""
    row_of = {text: row for row, text in enumerate(passages)}
    return lambda texts: vectors[[row_of[text] for text in texts]]


def build(index_dir: Path, vectors: np.ndarray, **options) -> MilvusRecord:
    sink = MilvusSink(index_dir, uri=None, collection=COLLECTION, dimensions=vectors.shape[1], **options)
    sink.add(0, vectors)
    return sink.finish()


@pytest.fixture(scope="module")
def built(tmp_path_factory, vectors) -> tuple[Path, MilvusRecord]:
    index_dir = tmp_path_factory.mktemp("milvus-index")
    return index_dir, build(index_dir, vectors)


@pytest.fixture(scope="module")
def retriever(built, model, passages):
    index_dir, record = built
    retriever = MilvusRetriever.load(index_dir, record, lambda texts: encode(model, texts), num_docs=len(passages))
    yield retriever
    retriever.close()


def test_finish_records_the_lite_database_relative_to_the_index_dir(built):
    index_dir, record = built
    assert record == MilvusRecord(uri=LITE_FILE, collection=COLLECTION, metric="IP", index_type="FLAT")
    assert (index_dir / LITE_FILE).exists()


def test_each_passage_vector_finds_its_own_passage_first(built, passages, vectors):
    index_dir, record = built
    retriever = MilvusRetriever.load(index_dir, record, stored_vector_encoder(passages, vectors),
                                     num_docs=len(passages))
    try:
        ranked = retriever.rank(passages, 3)
    finally:
        retriever.close()
    assert [hits.indices[0] for hits in ranked] == list(range(len(passages)))
    assert [hits.scores[0] for hits in ranked] == pytest.approx([1.0] * len(passages), abs=1e-4)
    assert all(hits.scores == sorted(hits.scores, reverse=True) for hits in ranked)


def test_questions_written_from_a_passage_find_it(retriever):
    ranked = retriever.rank(list(QUESTIONS.values()), 5)
    top1 = sum(hits.indices[0] == row for row, hits in zip(QUESTIONS, ranked))
    top5 = sum(row in hits.indices for row, hits in zip(QUESTIONS, ranked))
    assert top1 >= MIN_TOP1_RATE * len(QUESTIONS), top1
    assert top5 >= MIN_TOP5_RATE * len(QUESTIONS), top5


def test_a_batch_ranks_as_one_query_at_a_time_with_one_encode_and_one_search(retriever, monkeypatch):
    questions = list(QUESTIONS.values())
    one_by_one = [retriever.rank([question], 10)[0] for question in questions]
    encodes, searches = [], []
    encode_queries, search = retriever._encoder, retriever._client.search

    def counted_encode(texts):
        encodes.append(texts)
        return encode_queries(texts)

    def counted_search(*args, **kwargs):
        searches.append(kwargs["data"])
        return search(*args, **kwargs)

    monkeypatch.setattr(retriever, "_encoder", counted_encode)
    monkeypatch.setattr(retriever._client, "search", counted_search)
    batch = retriever.rank(questions, 10)
    assert len(encodes) == 1 and len(searches) == 1 and len(searches[0]) == len(questions)
    assert [hits.indices for hits in batch] == [hits.indices for hits in one_by_one]
    for batched, single in zip(batch, one_by_one):
        assert batched.scores == pytest.approx(single.scores, abs=1e-5)


def test_topk_is_capped_at_the_corpus_size_and_must_be_positive(retriever, passages):
    hits = retriever.rank(["a lighthouse on a rocky coast"], 10_000)[0]
    assert sorted(hits.indices) == list(range(len(passages)))
    assert retriever.rank([], 5) == []
    with pytest.raises(ValueError, match="topk must be at least 1"):
        retriever.rank(["anything"], 0)


def test_concurrent_searches_agree_with_sequential_ones(built, passages, vectors):
    index_dir, record = built
    retriever = MilvusRetriever.load(index_dir, record, stored_vector_encoder(passages, vectors),
                                     num_docs=len(passages))
    try:
        batches = [passages[start:start + 8] for start in range(0, len(passages), 8)]
        sequential = [retriever.rank(batch, 5) for batch in batches]
        with ThreadPoolExecutor(8) as pool:
            concurrent = list(pool.map(lambda batch: retriever.rank(batch, 5), batches * 2))
    finally:
        retriever.close()
    assert concurrent == sequential * 2


def test_a_resumed_build_upserts_the_rows_it_adds_again(tmp_path, vectors):
    # Milvus Lite 3 keeps one entity per key even for plain inserts; a Milvus server would keep both copies of a
    # row inserted twice (so count 200 here), which is why the sink upserts.
    first = MilvusSink(tmp_path, uri=None, collection=COLLECTION, dimensions=vectors.shape[1])
    first.add(0, vectors[:50])
    first.add(50, vectors[100:150])  # rows 50..99 with wrong vectors, as if the build died mid-batch
    first.close()
    resumed = MilvusSink(tmp_path, uri=None, collection=COLLECTION, dimensions=vectors.shape[1])
    resumed.add(50, vectors[50:150])
    record = resumed.finish()
    retriever = MilvusRetriever.load(tmp_path, record, lambda rows: vectors[[int(row) for row in rows]],
                                     num_docs=150)
    try:
        ranked = retriever.rank([str(row) for row in range(150)], 1)
    finally:
        retriever.close()
    assert [hits.indices[0] for hits in ranked] == list(range(150))


def test_a_resumed_build_with_a_gap_is_refused_at_finish(tmp_path, vectors):
    with MilvusSink(tmp_path, uri=None, collection=COLLECTION, dimensions=vectors.shape[1]) as first:
        first.add(0, vectors[:50])
    resumed = MilvusSink(tmp_path, uri=None, collection=COLLECTION, dimensions=vectors.shape[1])
    resumed.add(100, vectors[100:150])
    with pytest.raises(ValueError, match="holds 100 vectors, expected 150"):
        resumed.finish()


def test_finish_checks_the_rows_the_builder_expects(tmp_path, vectors):
    build(tmp_path, vectors[:40])
    nothing_added = MilvusSink(tmp_path, uri=None, collection=COLLECTION, dimensions=vectors.shape[1])
    assert nothing_added.finish(expected_rows=40).collection == COLLECTION
    again = MilvusSink(tmp_path, uri=None, collection=COLLECTION, dimensions=vectors.shape[1])
    with pytest.raises(ValueError, match="holds 40 vectors, expected 41"):
        again.finish(expected_rows=41)


def test_overwrite_drops_the_old_collection(tmp_path, vectors):
    build(tmp_path, vectors)
    record = build(tmp_path, vectors[:10], overwrite=True)
    # load checks the collection holds exactly num_docs vectors
    MilvusRetriever.load(tmp_path, record, lambda texts: vectors[:len(texts)], num_docs=10).close()


def test_a_collection_of_another_dimension_is_refused_unless_overwritten(tmp_path, vectors):
    build(tmp_path, vectors[:10])
    with pytest.raises(ValueError, match=rf"collection {COLLECTION} .* holds 384-d vectors but the encoder gives "
                                         r"768-d ones; overwrite it"):
        MilvusSink(tmp_path, uri=None, collection=COLLECTION, dimensions=768)
    wider = np.hstack([vectors[:10], vectors[:10]]) / np.sqrt(2)
    assert build(tmp_path, wider, overwrite=True).collection == COLLECTION


def test_a_collection_of_another_size_than_the_corpus_is_refused(built, vectors):
    index_dir, record = built
    with pytest.raises(ValueError, match=f"holds {len(vectors)} vectors but the corpus holds {len(vectors) + 1} "
                                         "passages"):
        MilvusRetriever.load(index_dir, record, lambda texts: vectors[:len(texts)], num_docs=len(vectors) + 1)


def test_a_moved_index_dir_still_loads(tmp_path, passages, vectors):
    record = build(tmp_path / "built", vectors[:30])
    shutil.move(tmp_path / "built", tmp_path / "moved")
    retriever = MilvusRetriever.load(tmp_path / "moved", record, stored_vector_encoder(passages, vectors),
                                     num_docs=30)
    try:
        assert [hits.indices[0] for hits in retriever.rank(passages[:30], 1)] == list(range(30))
    finally:
        retriever.close()


def test_the_uri_option_overrides_the_manifest(tmp_path, passages, vectors):
    record = build(tmp_path / "built", vectors[:30])
    shutil.move(tmp_path / "built" / LITE_FILE, tmp_path / "elsewhere.db")
    with pytest.raises(ValueError, match="no Milvus Lite database at .*incomplete"):
        MilvusRetriever.load(tmp_path / "built", record, stored_vector_encoder(passages, vectors), num_docs=30)
    with pytest.raises(ValueError, match="no Milvus Lite database at .*; give --milvus-uri an existing"):
        MilvusRetriever.load(tmp_path / "built", record, stored_vector_encoder(passages, vectors), num_docs=30,
                             uri=str(tmp_path / "nowhere.db"))
    retriever = MilvusRetriever.load(tmp_path / "built", record, stored_vector_encoder(passages, vectors),
                                     num_docs=30, uri=str(tmp_path / "elsewhere.db"))
    try:
        assert retriever.rank([passages[7]], 1)[0].indices == [7]
    finally:
        retriever.close()


def test_a_lite_database_outside_the_index_dir_is_recorded_by_its_absolute_path(tmp_path, passages, vectors):
    sink = MilvusSink(tmp_path / "index", uri=str(tmp_path / "shared" / ".." / "vectors.db"), collection=COLLECTION,
                      dimensions=vectors.shape[1])
    sink.add(0, vectors[:20])
    record = sink.finish()
    assert record.uri == str((tmp_path / "vectors.db").resolve())
    retriever = MilvusRetriever.load(tmp_path / "index", record, stored_vector_encoder(passages, vectors),
                                     num_docs=20)
    try:
        assert retriever.rank([passages[3]], 1)[0].indices == [3]
    finally:
        retriever.close()


def test_ivf_flat_index_with_search_params(tmp_path, passages, vectors):
    record = build(tmp_path, vectors, index_type="IVF_FLAT", index_params={"nlist": 8})
    assert record.index_type == "IVF_FLAT"
    retriever = MilvusRetriever.load(tmp_path, record, stored_vector_encoder(passages, vectors),
                                     num_docs=len(passages), search_params={"nprobe": 8})
    try:  # nprobe = nlist visits every list: exact
        assert [hits.indices[0] for hits in retriever.rank(passages, 1)] == list(range(len(passages)))
    finally:
        retriever.close()


def test_a_missing_collection_is_named(built, vectors):
    index_dir, record = built
    other = record.model_copy(update={"collection": "other_passages"})
    with pytest.raises(ValueError, match="has no collection other_passages"):
        MilvusRetriever.load(index_dir, other, lambda texts: vectors[:len(texts)], num_docs=len(vectors))


def test_an_unreachable_server_is_named_in_one_line(tmp_path, vectors):
    uri = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ValueError, match=f"cannot reach the Milvus server at {uri}") as raised:
        MilvusRetriever.load(tmp_path, MilvusRecord(uri=uri, collection=COLLECTION), lambda texts: vectors[:1],
                             num_docs=1)
    assert "\n" not in str(raised.value)
    with pytest.raises(ValueError, match=f"cannot reach the Milvus server at {uri}"):
        MilvusSink(tmp_path, uri=uri, collection=COLLECTION, dimensions=384)


def test_a_lite_database_open_in_another_process_is_refused(built, retriever):
    index_dir, _ = built  # `retriever` holds it open in this process
    opening = ("from rlfactory_tool_servers.search.milvus_index import connect\n"
               f"connect({str(index_dir / LITE_FILE)!r})\n")
    probe = subprocess.run([sys.executable, "-c", opening], capture_output=True, text=True, timeout=60,
                           check=False)
    assert probe.returncode != 0
    assert "ValueError: cannot open the Milvus Lite database" in probe.stderr
    assert "one process open a database at a time" in probe.stderr
    assert probe.stderr.count("Traceback") == 1  # ours: milvus-lite's logged traceback is folded into the message


def test_sink_arguments_are_checked(tmp_path, vectors):
    with pytest.raises(ValueError, match="not a Milvus collection name"):
        MilvusSink(tmp_path, uri=None, collection="wiki-18", dimensions=384)
    with pytest.raises(ValueError, match="unknown Milvus index type 'IVF_PQQ'"):
        MilvusSink(tmp_path, uri=None, collection=COLLECTION, dimensions=384, index_type="IVF_PQQ")
    with MilvusSink(tmp_path, uri=None, collection=COLLECTION, dimensions=384) as sink:
        with pytest.raises(ValueError, match=r"expected vectors of shape \(n, 384\), got \(2, 768\)"):
            sink.add(0, np.zeros((2, 768), dtype=np.float32))
        with pytest.raises(ValueError, match="first_row must be at least 0"):
            sink.add(-1, vectors[:1])


def test_a_missing_pymilvus_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pymilvus", None)
    with pytest.raises(ImportError, match=r"pip install 'rlfactory-envs\[milvus\]'"):
        import_pymilvus()
