"""Search-R1's ``POST /retrieve`` on the search server: the exact request and answer shapes over real HTTP, what a
Search-R1 training script makes of the answer, and the error statuses of hostile or malformed requests."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from mcp import Client
from mcp.server.mcpserver.exceptions import ToolError

from rlfactory_tool_servers.search.passages import Passage
from rlfactory_tool_servers.search.server import create_server
from rlfactory_tool_servers.search.tools import SearchLimits, SearchTools
from tests.server_process import http_tool_server

PASSAGES = [
    ("p0", "Marie Curie", "Marie Curie was a physicist and chemist who conducted pioneering research on radioactivity."),
    ("p1", "Mount Everest", "Mount Everest is Earth's highest mountain above sea level, in the Himalayas."),
    ("p2", "Python (programming language)", "Python is a high-level programming language created by Guido van Rossum."),
    ("p3", "Great Barrier Reef", "The Great Barrier Reef is the world's largest coral reef system, off Queensland."),
    ("p4", "Amazon River", "The Amazon River in South America is the largest river by discharge volume of water."),
    ("p5", "Penicillin", "Penicillin was discovered by Alexander Fleming in 1928 at St Mary's Hospital, London."),
    ("p6", "Radium", "Radium is a radioactive element discovered by Marie and Pierre Curie in 1898."),
]
CONTENTS = {passage_id: f'"{title}"\n{text}' for passage_id, title, text in PASSAGES}
# The server under test: a default topk of 2 and at most 4, so that "the default" and "the bound" are visible.
SERVER_LIMITS = ["--default-topk", "2", "--max-topk", "4", "--max-query-chars", "100"]
# Each matches at least three passages (BM25 returns only passages sharing a term with the query).
QUERIES = ["who discovered penicillin in the largest hospital", "highest mountain in the Himalayas and the largest river",
           "radioactive element discovered by Curie"]


def write_corpus(path: Path) -> Path:
    path.write_text("".join(json.dumps({"id": passage_id, "contents": contents}) + "\n"
                            for passage_id, contents in CONTENTS.items()), encoding="utf-8")
    return path


def search_r1_passages2string(retrieval_result: list[dict[str, Any]]) -> str:
    """Search-R1's ``LLMGenerationManager._passages2string`` (search_r1/llm_agent/generation.py), verbatim."""
    format_reference = ''
    for idx, doc_item in enumerate(retrieval_result):

        content = doc_item['document']['contents']
        title = content.split("\n")[0]
        text = "\n".join(content.split("\n")[1:])
        format_reference += f"Doc {idx+1}(Title: {title}) {text}\n"

    return format_reference


@contextmanager
def serve_app(app: Any) -> Iterator[str]:
    """Serve the ASGI ``app`` over real HTTP on a loopback port, in a thread; yields ``http://127.0.0.1:PORT``."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the test server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        listener.close()


@pytest.fixture(scope="module")
def search_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Our search server over HTTP, in a subprocess; yields its MCP URL (``.../mcp``)."""
    corpus = write_corpus(tmp_path_factory.mktemp("retrieve") / "corpus.jsonl")
    with http_tool_server("rlfactory_tool_servers.search", "--corpus", str(corpus), *SERVER_LIMITS) as url:
        yield url


@pytest.fixture(scope="module")
def retrieve_url(search_server: str) -> str:
    return search_server.removesuffix("/mcp") + "/retrieve"


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


def post(http: httpx.Client, url: str, payload: Any) -> Any:
    response = http.post(url, json=payload)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()


# --- the answer -------------------------------------------------------------------------------------------------

def test_scored_answer_has_search_r1_shape(http: httpx.Client, retrieve_url: str) -> None:
    answer = post(http, retrieve_url, {"queries": QUERIES, "topk": 3, "return_scores": True})
    assert list(answer) == ["result"] and len(answer["result"]) == len(QUERIES)
    for hits in answer["result"]:
        assert len(hits) == 3
        for hit in hits:
            assert set(hit) == {"document", "score"} and set(hit["document"]) == {"id", "contents"}
            assert isinstance(hit["score"], float)
            assert hit["document"]["contents"] == CONTENTS[hit["document"]["id"]]
        scores = [hit["score"] for hit in hits]
        assert scores == sorted(scores, reverse=True)
    assert [hits[0]["document"]["id"] for hits in answer["result"]] == ["p5", "p1", "p6"]


def test_without_return_scores_the_documents_come_bare(http: httpx.Client, retrieve_url: str) -> None:
    scored = post(http, retrieve_url, {"queries": QUERIES, "topk": 3, "return_scores": True})["result"]
    bare = post(http, retrieve_url, {"queries": QUERIES, "topk": 3})["result"]
    assert bare == [[hit["document"] for hit in hits] for hits in scored]
    assert post(http, retrieve_url, {"queries": QUERIES, "topk": 3, "return_scores": False})["result"] == bare


@pytest.mark.parametrize("topk", ["omitted", None, 0])
def test_a_missing_or_zero_topk_means_the_server_default(http: httpx.Client, retrieve_url: str, topk: Any) -> None:
    payload: dict[str, Any] = {"queries": QUERIES, "return_scores": True}
    if topk != "omitted":
        payload["topk"] = topk
    answer = post(http, retrieve_url, payload)
    assert [len(hits) for hits in answer["result"]] == [2, 2, 2]  # --default-topk 2
    topk_2 = post(http, retrieve_url, {"queries": QUERIES, "topk": 2, "return_scores": True})
    assert answer == topk_2


def test_no_queries_get_an_empty_result(http: httpx.Client, retrieve_url: str) -> None:
    assert post(http, retrieve_url, {"queries": [], "topk": 3}) == {"result": []}


async def test_a_search_r1_training_script_reads_what_the_search_tool_shows(search_server: str,
                                                                             retrieve_url: str) -> None:
    # Search-R1's LLMGenerationManager._batch_search posts this payload to its search_url and formats
    # response.json()["result"] with _passages2string; the model must see the same text as from our search tool.
    payload = {"queries": QUERIES, "topk": 3, "return_scores": True}
    async with httpx.AsyncClient(timeout=30) as http_client:
        response = await http_client.post(retrieve_url, json=payload)
    texts = [search_r1_passages2string(result) for result in response.json()["result"]]
    with anyio.fail_after(30):
        async with Client(search_server) as client:
            for query, text in zip(QUERIES, texts):
                tool = await client.call_tool("search", {"query": query, "topk": 3})
                assert not tool.is_error and tool.content[0].text == text
    assert texts[0].startswith('Doc 1(Title: "Penicillin") Penicillin was discovered by Alexander Fleming')


# --- hostile and malformed requests ------------------------------------------------------------------------------

@pytest.mark.parametrize(("body", "status", "message"), [
    (b"{not json", 400, "the request body is not JSON: "),
    (b"\xff\xfe\x00garbage", 400, "the request body is not JSON: "),
    (b"[" * 100_000 + b"]" * 100_000, 400, "the request body is not JSON: recursion limit"),
    (b"", 400, "the request body is not JSON: "),
    (b'["who discovered penicillin"]', 422, 'the body must be a JSON object {"queries"'),
    (b'{"topk": 3}', 422, "invalid request: queries: Field required"),
    (b'{"queries": "who discovered penicillin"}', 422, "invalid request: queries: Input should be a valid array"),
    (b'{"queries": ["ok", 7, null]}', 422,
     "invalid request: queries[1]: Input should be a valid string; queries[2]: Input should be a valid string"),
    (b'{"queries": ["ok"], "topk": "3"}', 422, "invalid request: topk: Input should be a valid integer"),
    (b'{"queries": ["ok"], "topk": 2.5}', 422, "invalid request: topk: Input should be a valid integer"),
    (b'{"queries": ["ok"], "return_scores": "yes"}', 422,
     "invalid request: return_scores: Input should be a valid boolean"),
    (b'{"queries": ["ok"], "topk": 5}', 422, "topk must be between 1 and 4 (0 or null: the default, 2), got 5"),
    (b'{"queries": ["ok"], "topk": -1}', 422, "topk must be between 1 and 4"),
    (b'{"queries": ["ok", "  "]}', 422, "queries[1]: query must not be empty"),
    (json.dumps({"queries": ["x" * 101]}).encode(), 422, "queries[0]: query is 101 characters long; the limit is 100"),
    (json.dumps({"queries": ["q"] * 1025}).encode(), 422, "queries: List should have at most 1024 items"),
])
def test_a_bad_request_gets_a_json_error_saying_what_is_wrong(http: httpx.Client, retrieve_url: str, body: bytes,
                                                              status: int, message: str) -> None:
    response = http.post(retrieve_url, content=body, headers={"content-type": "application/json"})
    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    assert detail.startswith(message) or message in detail, detail
    assert "Traceback" not in detail and len(detail) < 400


def test_an_oversized_body_is_refused_before_it_is_read(http: httpx.Client, retrieve_url: str) -> None:
    big = json.dumps({"queries": ["q" * 90] * 100_000}).encode()  # ~9.3 MB, over the 8 MiB bound
    response = http.post(retrieve_url, content=big)
    assert response.status_code == 413
    assert response.json() == {"detail": f"the request body is larger than {8 * 1024 * 1024} bytes"}

    def chunks() -> Iterator[bytes]:  # no content-length: the bound applies as the body arrives
        for start in range(0, len(big), 1 << 20):
            yield big[start:start + (1 << 20)]

    chunked = http.post(retrieve_url, content=chunks())
    assert chunked.status_code == 413 and "larger than" in chunked.json()["detail"]
    assert post(http, retrieve_url, {"queries": ["penicillin"], "topk": 1})["result"][0][0]["id"] == "p5"


def test_get_says_to_post(http: httpx.Client, retrieve_url: str) -> None:
    response = http.get(retrieve_url)
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert response.json()["detail"].startswith('use POST with a JSON body {"queries": [...]')


# --- retrieval runs off the event loop; failures of the passage source ---------------------------------------------

class ScriptedSource:
    """A passage source that waits for ``release`` before answering, or raises ``error``."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.entered = threading.Event()
        self.release = threading.Event()

    def search(self, queries: list[str], topk: int) -> list[list[Passage]]:
        self.entered.set()
        if self.error is not None:
            raise self.error
        assert self.release.wait(10)
        return [[Passage("p0", CONTENTS["p0"], 1.5)] for _ in queries]

    def describe(self) -> str:
        return "scripted"


@contextmanager
def in_process_server(source: ScriptedSource) -> Iterator[str]:
    """Our search server over ``source``, over real HTTP in this process; yields its ``/retrieve`` URL."""
    server = create_server(SearchTools(source, SearchLimits()))
    with serve_app(server.streamable_http_app(json_response=True)) as base:
        yield f"{base}/retrieve"


def test_a_slow_retrieval_does_not_block_other_requests() -> None:
    source = ScriptedSource()
    with in_process_server(source) as url, httpx.Client(timeout=10) as http:
        answers: list[httpx.Response] = []
        slow = threading.Thread(target=lambda: answers.append(http.post(url, json={"queries": ["a", "b"]})))
        slow.start()
        assert source.entered.wait(10)
        started = time.monotonic()
        assert http.get(url).status_code == 405  # answered while the retrieval still waits
        assert http.post(url, json={"queries": [""]}).status_code == 422
        assert time.monotonic() - started < 5 and not answers
        source.release.set()
        slow.join(10)
    assert answers[0].status_code == 200
    assert answers[0].json() == {"result": [[{"id": "p0", "contents": CONTENTS["p0"]}]] * 2}


@pytest.mark.parametrize(("error", "status", "detail"), [
    (ToolError("cannot reach the retriever at http://x/retrieve: connection refused"), 502,
     "cannot reach the retriever at http://x/retrieve: connection refused"),
    (RuntimeError("disk /secret/path failed"), 500,
     "retrieval failed with an internal error; the server's log has the details"),
])
def test_a_failing_source_gives_a_json_error(error: Exception, status: int, detail: str) -> None:
    with in_process_server(ScriptedSource(error)) as url:
        response = httpx.post(url, json={"queries": ["anything"], "topk": 3}, timeout=10)
    assert response.status_code == status and response.json() == {"detail": detail}
