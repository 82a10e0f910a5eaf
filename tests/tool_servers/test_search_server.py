"""The search MCP server: corpus loading, BM25, Search-R1 formatting, the tool's errors, and real transports."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import anyio
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters

from rlfactory_tool_servers.wire import BATCH_OF, SHOW_BATCH_FORMS
from rlfactory_tool_servers.search import build_server
from rlfactory_tool_servers.search.bm25_retriever import BM25Retriever
from rlfactory_tool_servers.search.corpus import Corpus, load_corpus
from rlfactory_tool_servers.search.formatting import format_passages
from rlfactory_tool_servers.search.manifest import read_manifest
from rlfactory_tool_servers.search.passages import LocalPassages
from rlfactory_tool_servers.search.ranking import Ranked
from rlfactory_tool_servers.search.server import create_server
from rlfactory_tool_servers.search.tools import NO_MATCH_TEXT, SearchLimits, SearchTools
from tests.conftest import REPO_ROOT, SHARED_DATA
from tests.server_process import http_tool_server

WIKI_SAMPLE = SHARED_DATA / "wiki" / "wiki18_sample_1000.jsonl"
FAISS_SAMPLE = SHARED_DATA / "wiki" / "e5_flat_sample.index"

PASSAGES = [
    ("p0", "Marie Curie", "Marie Curie was a physicist and chemist who conducted pioneering research on radioactivity."),
    ("p1", "Mount Everest", "Mount Everest is Earth's highest mountain above sea level, in the Himalayas."),
    ("p2", "Python (programming language)", "Python is a high-level programming language created by Guido van Rossum."),
    ("p3", "Great Barrier Reef", "The Great Barrier Reef is the world's largest coral reef system, off Queensland."),
    ("p4", "Amazon River", "The Amazon River in South America is the largest river by discharge volume of water."),
    ("p5", "Penicillin", "Penicillin was discovered by Alexander Fleming in 1928 at St Mary's Hospital, London."),
]


def search_r1_passages2string(contents: list[str]) -> str:
    """Search-R1's ``_passages2string``, verbatim but for taking the contents strings directly."""
    format_reference = ''
    for idx, content in enumerate(contents):
        title = content.split("\n")[0]
        text = "\n".join(content.split("\n")[1:])
        format_reference += f"Doc {idx+1}(Title: {title}) {text}\n"
    return format_reference


def write_corpus(path: Path) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for passage_id, title, text in PASSAGES:
            f.write(json.dumps({"id": passage_id, "contents": f'"{title}"\n{title} {text}'}) + "\n")
    return path


@pytest.fixture
def corpus_path(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus.jsonl")


@pytest.fixture
def corpus(corpus_path: Path) -> Corpus:
    return load_corpus(corpus_path)


class CountingRetriever:
    """Wraps a retriever, recording each call's queries and the thread it ran on."""

    def __init__(self, inner: BM25Retriever) -> None:
        self.inner = inner
        self.calls: list[list[str]] = []
        self.threads: list[int] = []

    @property
    def num_docs(self) -> int:
        return self.inner.num_docs

    def rank(self, queries: list[str], topk: int) -> list[Ranked]:
        self.calls.append(list(queries))
        self.threads.append(threading.get_ident())
        return self.inner.rank(queries, topk)


@pytest.fixture
def retriever(corpus: Corpus) -> CountingRetriever:
    return CountingRetriever(BM25Retriever.build(corpus.contents))


@pytest.fixture
def service(corpus: Corpus, retriever: CountingRetriever) -> SearchTools:
    return SearchTools(LocalPassages(corpus, retriever), SearchLimits(default_topk=2, max_topk=5, max_query_chars=100))


# --- formatting ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("contents", [
    ['"Title A"\nfirst line\nsecond line', '"Title B"\nbody'],
    ['"No body"'],
    ['"Empty body"\n', '"Trailing"\ntext\n'],
    [],
])
def test_format_matches_search_r1(contents: list[str]) -> None:
    assert format_passages(contents) == search_r1_passages2string(contents)


@given(st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=40), max_size=5))
def test_format_matches_search_r1_on_any_text(contents: list[str]) -> None:
    assert format_passages(contents) == search_r1_passages2string(contents)


def test_format_shape() -> None:
    text = format_passages(['"Marie Curie"\nMarie Curie was a physicist.', '"Radium"\nRadium is an element.'])
    assert text == ('Doc 1(Title: "Marie Curie") Marie Curie was a physicist.\n'
                    'Doc 2(Title: "Radium") Radium is an element.\n')


# --- corpus ----------------------------------------------------------------------------------------------------

def test_corpus_reads_both_row_shapes(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps({"id": "a", "contents": '"T"\nbody'}) + "\n\n"
                    + json.dumps({"id": 7, "title": "Other", "text": "more text"}) + "\n", encoding="utf-8")
    corpus = load_corpus(path)
    assert corpus.ids == ["a", "7"]
    assert corpus.contents == ['"T"\nbody', '"Other"\nmore text']
    assert len(corpus) == 2


@pytest.mark.parametrize("bad_line", [
    "{not json",
    "[1, 2]",
    json.dumps({"contents": '"T"\nno id'}),
    json.dumps({"id": "x", "contents": 3}),
    json.dumps({"id": "x", "title": "only a title"}),
])
def test_corpus_bad_line_names_file_and_line(tmp_path: Path, bad_line: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": "ok", "contents": '"T"\nfine'}) + "\n" + bad_line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: "):
        load_corpus(path)


def test_empty_corpus_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no passages"):
        load_corpus(path)


# --- BM25 ------------------------------------------------------------------------------------------------------

def test_bm25_finds_the_right_passage(corpus: Corpus) -> None:
    bm25 = BM25Retriever.build(corpus.contents)
    ranked = bm25.rank(["who discovered penicillin", "highest mountain on earth", "coral reefs"], 3)
    assert [corpus.ids[r.indices[0]] for r in ranked] == ["p5", "p1", "p3"]
    assert all(r.scores == sorted(r.scores, reverse=True) and min(r.scores) > 0 for r in ranked)


def test_bm25_edge_cases(corpus: Corpus) -> None:
    bm25 = BM25Retriever.build(corpus.contents)
    # More than the corpus holds: every matching passage, no error.
    assert len(bm25.rank(["the largest river reef"], 100)[0].indices) == 2
    # Nothing in common with the corpus, or only stopwords: nothing comes back.
    assert bm25.rank(["zzyzx qwertyuiop", "the of and", ""], 3) == [([], [])] * 3
    assert bm25.rank([], 3) == []
    with pytest.raises(ValueError):
        bm25.rank(["river"], 0)


def test_bm25_batch_equals_single_queries(corpus: Corpus) -> None:
    bm25 = BM25Retriever.build(corpus.contents)
    queries = ["radioactivity research", "the", "programming language", "largest", "Fleming London"]
    assert bm25.rank(queries, 4) == [bm25.rank([q], 4)[0] for q in queries]


def test_bm25_index_dir_is_built_once_then_loaded(corpus_path: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    index_dir = tmp_path / "index"
    build_server(["--corpus", str(corpus_path), "--index-dir", str(index_dir)])
    manifest = read_manifest(index_dir)
    assert manifest.backend == "bm25" and manifest.corpus.passages == len(PASSAGES)

    def no_build(*args: object, **kwargs: object) -> BM25Retriever:
        raise AssertionError("the built index should have been loaded, not rebuilt")

    monkeypatch.setattr(BM25Retriever, "build", no_build)
    from rlfactory_tool_servers.search import index_loading

    monkeypatch.setattr(index_loading, "build_index", no_build)
    build_server(["--corpus", str(corpus_path), "--index-dir", str(index_dir)])


def test_server_processes_starting_together_build_the_bm25_index_once(corpus_path: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from rlfactory_tool_servers.search import index_loading

    builds: list[int] = []
    real_build = index_loading.build_index

    def counted_build(*args: object, **kwargs: object) -> object:
        builds.append(threading.get_ident())
        return real_build(*args, **kwargs)

    monkeypatch.setattr(index_loading, "build_index", counted_build)
    argv = ["--corpus", str(corpus_path), "--index-dir", str(tmp_path / "shared")]
    threads = [threading.Thread(target=build_server, args=(argv,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(builds) == 1 and read_manifest(tmp_path / "shared").corpus.passages == len(PASSAGES)


def test_an_index_is_refused_with_another_corpus(corpus_path: Path, tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    build_server(["--corpus", str(corpus_path), "--index-dir", str(index_dir)])
    edited = tmp_path / "edited.jsonl"
    edited.write_text(corpus_path.read_text(encoding="utf-8").replace("Everest", "Elbrus"), encoding="utf-8")
    with pytest.raises(ValueError, match=r"built from another corpus .* rlf index build --corpus .*edited\.jsonl"):
        build_server(["--corpus", str(edited), "--index-dir", str(index_dir)])


def test_a_directory_without_an_index_is_refused(corpus_path: Path, tmp_path: Path) -> None:
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ValueError, match=r"holds no built index: no manifest\.json"):
        build_server(["--corpus", str(corpus_path), "--index-dir", str(stray)])
    assert [p.name for p in stray.iterdir()] == ["notes.txt"]


# --- the tool, in process --------------------------------------------------------------------------------------

async def test_tools_listed_with_description_and_batch_meta(service: SearchTools) -> None:
    async with Client(create_server(service)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools(meta={SHOW_BATCH_FORMS: True})).tools}
        shown = {tool.name for tool in (await client.list_tools()).tools}
    assert set(tools) == {"search", "search_batch"} and shown == {"search"}
    description = tools["search"].description or ""
    assert "Search Wikipedia" in description and "top passages" in description
    assert "1 to 5" in description and "100 characters" in description
    assert tools["search"].input_schema["properties"]["topk"]["default"] == 2
    assert tools["search_batch"].meta == {BATCH_OF: "search"}


async def test_search_returns_search_r1_text(service: SearchTools, corpus: Corpus,
                                             retriever: CountingRetriever) -> None:
    async with Client(create_server(service)) as client:
        result = await client.call_tool("search", {"query": "Alexander Fleming penicillin", "topk": 1})
        default_topk = await client.call_tool("search", {"query": "largest river reef"})
        no_match = await client.call_tool("search", {"query": "zzyzx"})
    assert not result.is_error
    assert result.content[0].text == search_r1_passages2string([corpus.contents[5]])
    assert default_topk.content[0].text.count("\nDoc ") == 1  # two passages: the default topk is 2
    assert no_match.content[0].text == NO_MATCH_TEXT and not no_match.is_error
    # Retrieval ran in a worker thread, not on the event loop's.
    assert threading.get_ident() not in retriever.threads


@pytest.mark.parametrize(("arguments", "message"), [
    ({"query": ""}, "query must not be empty"),
    ({"query": "   "}, "query must not be empty"),
    ({"query": "river", "topk": 0}, "topk must be between 1 and 5, got 0"),
    ({"query": "river", "topk": 6}, "topk must be between 1 and 5, got 6"),
    ({"query": "x" * 101}, "query is 101 characters long; the limit is 100"),
    ({"query": "river", "topk": "many"}, "topk"),
    ({"topk": 2}, "query"),
])
async def test_bad_input_gives_a_clear_error(service: SearchTools, arguments: dict, message: str) -> None:
    async with Client(create_server(service)) as client:
        result = await client.call_tool("search", arguments)
    assert result.is_error
    assert message in result.content[0].text


async def test_batch_is_aligned_equal_to_single_calls_and_one_retrieval(service: SearchTools,
                                                                         retriever: CountingRetriever) -> None:
    calls = [
        {"query": "Marie Curie radioactivity"},
        {"query": "", "topk": 2},
        {"query": "Himalayas mountain", "topk": 5},
        {"query": "river", "topk": 99},
        {"query": "programming", "topk": 1},
        {"qurey": "typo"},
        "not an object",
        {"query": "zzyzx"},
    ]
    async with Client(create_server(service)) as client:
        retriever.calls.clear()
        batch = await client.call_tool("search_batch", {"calls": calls})
        assert retriever.calls == [["Marie Curie radioactivity", "Himalayas mountain", "programming", "zzyzx"]]
        # Elements that pass the schema; the SDK words schema errors its own way.
        schema_valid = [0, 1, 2, 3, 4, 7]
        singles = {i: await client.call_tool("search", calls[i]) for i in schema_valid}
    entries = batch.structured_content["results"]
    assert len(entries) == len(calls)
    assert [entry["is_error"] for entry in entries] == [False, True, False, True, False, True, True, False]
    for i, single in singles.items():
        assert entries[i] == {"text": single.content[0].text, "is_error": single.is_error, "failure": None}
    assert "qurey" in entries[5]["text"]
    assert "query must not be empty" in entries[1]["text"]
    assert "topk must be between 1 and 5" in entries[3]["text"]


async def test_server_answers_while_a_search_runs(corpus: Corpus) -> None:
    entered, release, finished = threading.Event(), threading.Event(), threading.Event()

    class BlockingRetriever:
        num_docs = len(corpus)

        def rank(self, queries: list[str], topk: int) -> list[Ranked]:
            entered.set()
            release.wait(timeout=3)
            finished.set()
            return [Ranked([0], [1.0]) for _ in queries]

    async with Client(create_server(SearchTools(LocalPassages(corpus, BlockingRetriever())))) as client:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(client.call_tool, "search", {"query": "blocked"})
            assert await anyio.to_thread.run_sync(entered.wait, 5)
            with anyio.fail_after(5):
                assert [tool.name for tool in (await client.list_tools()).tools] == ["search"]
            assert not finished.is_set(), "the server answered only after the search: retrieval blocked the loop"
            release.set()


# --- command line and real transports --------------------------------------------------------------------------

def test_bad_options_exit_with_usage(corpus_path: Path) -> None:
    for argv in (["--corpus", str(corpus_path), "--default-topk", "30"],
                 ["--corpus", str(corpus_path), "--max-topk", "0"],
                 ["--corpus", str(corpus_path), "--retriever", "faiss"],
                 ["--corpus", str(corpus_path), "--retriever", "faiss", "--faiss-index", "missing.index",
                  "--encoder", "e5"],
                 ["--corpus", str(corpus_path.with_name("missing.jsonl"))],
                 ["--corpus", str(corpus_path), "--retriever", "faiss", "--index-dir", "x"],
                 ["--retriever-url", "http://127.0.0.1:9/retrieve", "--index-dir", "x"],
                 ["--corpus", str(corpus_path), "--fusion-k", "0"],
                 []):
        with pytest.raises(SystemExit):
            build_server(argv)


async def test_build_server_with_index_dir(corpus_path: Path, tmp_path: Path) -> None:
    argv = ["--corpus", str(corpus_path), "--index-dir", str(tmp_path / "index"), "--default-topk", "1"]
    for _ in range(2):  # builds the index, then loads it
        async with Client(build_server(argv)) as client:
            result = await client.call_tool("search", {"query": "Great Barrier Reef"})
        assert result.content[0].text.startswith('Doc 1(Title: "Great Barrier Reef")')
    assert read_manifest(tmp_path / "index").backend == "bm25"


async def check_search_over(client: Client) -> None:
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert tools == {"search"}  # the batched form is hidden from a client that does not ask for it, but answers
    result = await client.call_tool("search", {"query": "Everest Himalayas", "topk": 1})
    assert not result.is_error
    assert result.content[0].text.startswith('Doc 1(Title: "Mount Everest") Mount Everest')
    batch = await client.call_tool("search_batch", {"calls": [{"query": "Amazon"}, {"query": ""}]})
    assert [entry["is_error"] for entry in batch.structured_content["results"]] == [False, True]


@pytest.mark.integration
async def test_over_stdio_subprocess(corpus_path: Path) -> None:
    parameters = StdioServerParameters(command=sys.executable, args=["-m", "rlfactory_tool_servers.search", "--corpus",
                                                                     str(corpus_path)], cwd=str(REPO_ROOT))
    with anyio.fail_after(30):
        async with Client(parameters) as client:
            await check_search_over(client)


@pytest.mark.integration
async def test_over_streamable_http_subprocess(corpus_path: Path, tmp_path: Path) -> None:
    with http_tool_server("rlfactory_tool_servers.search", "--corpus", str(corpus_path)) as url:
        with anyio.fail_after(20):
            async with Client(url) as client:
                await check_search_over(client)


# --- the real wiki-18 sample -----------------------------------------------------------------------------------

needs_wiki_sample = pytest.mark.skipif(not WIKI_SAMPLE.is_file(),
                                       reason=f"the wiki-18 sample is not at {WIKI_SAMPLE} (shared data absent)")


@pytest.fixture(scope="module")
def wiki_corpus() -> Corpus:
    return load_corpus(WIKI_SAMPLE)


@needs_wiki_sample
def test_real_wiki18_sample(wiki_corpus: Corpus) -> None:
    assert len(wiki_corpus) == 1000
    assert wiki_corpus.contents[0].startswith('"Evan Morris"\n')
    bm25 = BM25Retriever.build(wiki_corpus.contents)
    # A passage's own title and opening words find it first.
    picks = range(0, 1000, 50)
    queries = [" ".join(wiki_corpus.contents[i].replace("\n", " ").split()[:30]) for i in picks]
    ranked = bm25.rank(queries, 3)
    assert sum(r.indices[0] == i for i, r in zip(picks, ranked)) >= 0.9 * len(queries)
    service = SearchTools(LocalPassages(wiki_corpus, bm25))
    [text] = service.search_checked([("Evan Morris lobbyist Genentech Roche", 3)])
    assert text.startswith('Doc 1(Title: "Evan Morris") Evan Morris Evan L. Morris')
    assert text.count("\n") >= 3 and text.endswith("\n")


# --- dense FAISS retrieval (optional extra) --------------------------------------------------------------------

class StoredVectorEncoder:
    """A stand-in query encoder: query ``"doc 12"`` embeds as row 12 of ``vectors``."""

    def __init__(self, vectors) -> None:
        self.vectors = vectors
        self.calls = 0

    def __call__(self, queries: list[str]):
        self.calls += 1
        return self.vectors[[int(query.split()[1]) for query in queries]]


@pytest.fixture
def faiss_module():
    return pytest.importorskip("faiss", reason="faiss-cpu (the 'faiss' extra) is not installed")


def test_missing_faiss_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlfactory_tool_servers.search.dense_retriever import import_faiss

    monkeypatch.setitem(sys.modules, "faiss", None)  # makes `import faiss` fail
    with pytest.raises(ImportError, match="faiss-cpu"):
        import_faiss()


def test_dense_retriever_on_a_small_index(faiss_module, tmp_path: Path) -> None:
    from rlfactory_tool_servers.search.dense_retriever import DenseRetriever

    vectors = np.random.default_rng(0).normal(size=(5, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = faiss_module.IndexFlatIP(8)
    index.add(vectors)
    faiss_module.write_index(index, str(tmp_path / "flat.index"))
    encoder = StoredVectorEncoder(vectors)
    dense = DenseRetriever.load(tmp_path / "flat.index", encoder, num_docs=5)
    ranked = dense.rank([f"doc {i}" for i in range(5)], 20)
    assert [r.indices[0] for r in ranked] == [0, 1, 2, 3, 4]
    assert all(sorted(r.indices) == [0, 1, 2, 3, 4] for r in ranked)
    assert all(r.scores[0] == pytest.approx(1.0, abs=1e-5) for r in ranked)
    assert encoder.calls == 1
    with pytest.raises(ValueError, match="holds 5 vectors but the corpus holds 6"):
        DenseRetriever.load(tmp_path / "flat.index", encoder, num_docs=6)


@needs_wiki_sample
def test_dense_retriever_on_the_real_e5_index(faiss_module, wiki_corpus: Corpus) -> None:
    if not FAISS_SAMPLE.is_file():
        pytest.skip(f"the e5 FAISS sample is not at {FAISS_SAMPLE}")
    from rlfactory_tool_servers.search.dense_retriever import DenseRetriever

    stored = faiss_module.read_index(str(FAISS_SAMPLE))
    assert stored.ntotal == len(wiki_corpus) == 1000 and stored.d == 768
    encoder = StoredVectorEncoder(stored.reconstruct_n(0, stored.ntotal))
    for mmap in (False, True):
        dense = DenseRetriever.load(FAISS_SAMPLE, encoder, num_docs=len(wiki_corpus), mmap=mmap)
        ranked = dense.rank([f"doc {i}" for i in range(1000)], 3)
        assert [r.indices[0] for r in ranked] == list(range(1000))  # each passage's own vector finds it first


@needs_wiki_sample
async def test_server_with_faiss_retriever(faiss_module, monkeypatch: pytest.MonkeyPatch) -> None:
    if not FAISS_SAMPLE.is_file():
        pytest.skip(f"the e5 FAISS sample is not at {FAISS_SAMPLE}")
    from rlfactory_tool_servers.search import encoders

    vectors = faiss_module.read_index(str(FAISS_SAMPLE)).reconstruct_n(0, 1000)
    # No e5 weights here: the stored vectors stand in for the e5 query encoder (the real encoder is tested with
    # all-MiniLM-L6-v2 in tests/search/test_encoders.py).
    monkeypatch.setattr(encoders, "encoder_record_for", lambda model, **options: None)
    monkeypatch.setattr(encoders, "make_query_encoder", lambda record, **options: StoredVectorEncoder(vectors))
    server = build_server(["--corpus", str(WIKI_SAMPLE), "--retriever", "faiss", "--faiss-index", str(FAISS_SAMPLE),
                           "--encoder", "unused-model-dir"])
    async with Client(server) as client:
        result = await client.call_tool("search", {"query": "doc 0", "topk": 2})
    assert result.content[0].text.startswith('Doc 1(Title: "Evan Morris") Evan Morris')
    assert result.content[0].text.count("\n") == 2
