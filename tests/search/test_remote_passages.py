"""``RemotePassages``: passages from a Search-R1-compatible retriever over real HTTP, against our own server's
``/retrieve`` (the search tool answers the same through it), against a stand-in of Search-R1's own retrieval server,
and against broken ones."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver.exceptions import ToolError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from rlfactory_tool_servers.search import build_server
from rlfactory_tool_servers.search.bm25_retriever import BM25Retriever
from rlfactory_tool_servers.search.corpus import Corpus, load_corpus
from rlfactory_tool_servers.search.passages import LocalPassages, Passage
from rlfactory_tool_servers.search.remote_passages import RemotePassages
from rlfactory_tool_servers.search.server import create_server
from rlfactory_tool_servers.search.tools import SearchTools
from tests.conftest import free_port
from tests.search.test_retrieve_api import CONTENTS, QUERIES, serve_app, write_corpus
from tests.server_process import http_tool_server


@pytest.fixture(scope="module")
def corpus_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("remote") / "corpus.jsonl")


@pytest.fixture(scope="module")
def corpus(corpus_path: Path) -> Corpus:
    return load_corpus(corpus_path)


@pytest.fixture(scope="module")
def local(corpus: Corpus) -> LocalPassages:
    return LocalPassages(corpus, BM25Retriever.build(corpus.contents))


@pytest.fixture(scope="module")
def our_server(corpus_path: Path) -> Iterator[str]:
    """Our search server over HTTP in a subprocess; yields its MCP URL."""
    with http_tool_server("rlfactory_tool_servers.search", "--corpus", str(corpus_path)) as url:
        yield url


# --- both ways round: our server as the remote retriever -----------------------------------------------------------

def test_passages_from_our_server_equal_the_local_ones(our_server: str, local: LocalPassages) -> None:
    with RemotePassages(our_server.removesuffix("/mcp") + "/retrieve") as remote:
        assert remote.search(QUERIES, 4) == local.search(QUERIES, 4)  # ids, contents and scores, exactly
        assert remote.search(["zzyzx"], 3) == [[]]
        # One client, many threads at once (as the server calls it from its worker threads).
        with ThreadPoolExecutor(8) as threads:
            answers = list(threads.map(lambda i: remote.search([QUERIES[i % 3]], 1 + i % 4), range(32)))
    assert answers == [local.search([QUERIES[i % 3]], 1 + i % 4) for i in range(32)]


async def test_the_search_tool_answers_the_same_through_a_remote_retriever(our_server: str) -> None:
    base = our_server.removesuffix("/mcp")  # no path: RemotePassages asks base/retrieve
    calls = [{"query": query, "topk": topk} for query in QUERIES for topk in (1, 3)] + [{"query": "zzyzx", "topk": 2}]
    with anyio.fail_after(30):
        async with Client(our_server) as direct, Client(build_server(["--retriever-url", base])) as forwarding:
            for call in calls:
                expected = await direct.call_tool("search", call)
                got = await forwarding.call_tool("search", call)
                assert not got.is_error and got.content[0].text == expected.content[0].text
            batch = {"calls": calls}
            assert ((await forwarding.call_tool("search_batch", batch)).structured_content
                    == (await direct.call_tool("search_batch", batch)).structured_content)


# --- a stand-in of Search-R1's retrieval server ---------------------------------------------------------------------

class SearchR1StandIn:
    """Search-R1's ``retrieval_server.py`` endpoint, its code reproduced, over a BM25 ``batch_search`` of ours.

    ``rows`` are the corpus rows it answers with (as its corpus holds them); ``honours_return_scores=False`` is a
    server that always answers bare documents. Every request body is kept in ``requests``.
    """

    def __init__(self, rows: list[dict[str, Any]], *, honours_return_scores: bool = True,
                 retrieval_topk: int = 3) -> None:
        self.rows = rows
        self.bm25 = BM25Retriever.build(list(CONTENTS.values()))
        self.honours_return_scores = honours_return_scores
        self.retrieval_topk = retrieval_topk
        self.requests: list[dict[str, Any]] = []

    def batch_search(self, query_list: list[str], num: int) -> tuple[list[list[dict[str, Any]]], list[list[float]]]:
        ranked = self.bm25.rank(query_list, num)
        return [[self.rows[i] for i in r.indices] for r in ranked], [list(r.scores) for r in ranked]

    async def retrieve_endpoint(self, http_request: Request) -> JSONResponse:
        request = await http_request.json()
        self.requests.append(request)
        # From here on, Search-R1's endpoint (request fields read from the dict instead of its pydantic model).
        if not request.get("topk"):
            request["topk"] = self.retrieval_topk  # fallback to default
        results, scores = self.batch_search(query_list=request["queries"], num=request["topk"])
        resp = []
        for i, single_result in enumerate(results):
            if request.get("return_scores", False) and self.honours_return_scores:
                combined = []
                for doc, score in zip(single_result, scores[i]):
                    combined.append({"document": doc, "score": score})
                resp.append(combined)
            else:
                resp.append(single_result)
        return JSONResponse({"result": resp})

    @contextmanager
    def serving(self) -> Iterator[str]:
        with serve_app(Starlette(routes=[Route("/retrieve", self.retrieve_endpoint, methods=["POST"])])) as base:
            yield f"{base}/retrieve"


CONTENTS_ROWS = [{"id": passage_id, "contents": contents} for passage_id, contents in CONTENTS.items()]


def test_search_r1_server_with_scores(local: LocalPassages) -> None:
    stand_in = SearchR1StandIn(CONTENTS_ROWS)
    with stand_in.serving() as url, RemotePassages(url) as remote:
        found = remote.search(QUERIES, 3)
    assert stand_in.requests == [{"queries": QUERIES, "topk": 3, "return_scores": True}]
    assert found == local.search(QUERIES, 3)
    assert all(passage.score > 0 for passages in found for passage in passages)


def test_bare_documents_get_score_zero(local: LocalPassages) -> None:
    with SearchR1StandIn(CONTENTS_ROWS, honours_return_scores=False).serving() as url, RemotePassages(url) as remote:
        found = remote.search(QUERIES, 3)
    assert found == [[passage._replace(score=0.0) for passage in passages] for passages in local.search(QUERIES, 3)]


def test_title_and_text_rows_without_ids() -> None:
    rows = []
    for contents in CONTENTS.values():
        title, _, text = contents.partition("\n")
        rows.append({"title": title.strip('"'), "text": text})
    with SearchR1StandIn(rows).serving() as url, RemotePassages(url) as remote:
        [passages] = remote.search(["Alexander Fleming penicillin"], 1)
    assert passages == [Passage("", CONTENTS["p5"], passages[0].score)]


def test_batches_above_max_batch_are_split_in_order(local: LocalPassages) -> None:
    queries = QUERIES + ["Python programming language", "coral reef Queensland"]
    stand_in = SearchR1StandIn(CONTENTS_ROWS)
    with stand_in.serving() as url, RemotePassages(url, max_batch=2) as remote:
        found = remote.search(queries, 2)
        assert remote.search([], 2) == []
    assert [request["queries"] for request in stand_in.requests] == [queries[0:2], queries[2:4], queries[4:]]
    assert found == local.search(queries, 2)


# --- failures ---------------------------------------------------------------------------------------------------

class ScriptedRetriever:
    """A ``/retrieve`` that answers each request with the next of ``answers`` (the last one repeats)."""

    def __init__(self, *answers: Response) -> None:
        self.answers = list(answers)
        self.count = 0

    async def endpoint(self, request: Request) -> Response:
        await request.body()
        self.count += 1
        answer = self.answers[min(self.count, len(self.answers)) - 1]
        if isinstance(answer, SlowAnswer):
            await asyncio.sleep(answer.delay_s)
        return answer

    @contextmanager
    def serving(self) -> Iterator[str]:
        with serve_app(Starlette(routes=[Route("/retrieve", self.endpoint, methods=["POST"])])) as base:
            yield f"{base}/retrieve"


class SlowAnswer(JSONResponse):
    def __init__(self, content: Any, delay_s: float) -> None:
        super().__init__(content)
        self.delay_s = delay_s


ONE_HIT = {"result": [[{"document": CONTENTS_ROWS[0], "score": 1.0}]]}


def test_passages_beyond_topk_are_dropped() -> None:
    hits = [{"document": row, "score": 3.0 - i} for i, row in enumerate(CONTENTS_ROWS[:3])]
    with ScriptedRetriever(JSONResponse({"result": [hits]})).serving() as url, RemotePassages(url) as remote:
        assert [passage.id for passage in remote.search(["q"], 2)[0]] == ["p0", "p1"]


def test_a_refused_connection_names_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/retrieve"
    with RemotePassages(url, retries=1, backoff=0.01) as remote, pytest.raises(ToolError) as raised:
        remote.search(["q"], 3)
    assert str(raised.value) == f"cannot reach the retriever at {url}: connection refused"


def test_5xx_is_retried_until_it_succeeds() -> None:
    script = ScriptedRetriever(Response("overloaded", 503), JSONResponse({"detail": "boom"}, 500),
                               JSONResponse(ONE_HIT))
    with script.serving() as url, RemotePassages(url, retries=2, backoff=0.01) as remote:
        assert remote.search(["q"], 3) == [[Passage("p0", CONTENTS["p0"], 1.0)]]
    assert script.count == 3


def test_5xx_after_the_last_retry_is_an_error() -> None:
    script = ScriptedRetriever(JSONResponse({"detail": "index not loaded"}, 500))
    with script.serving() as url, RemotePassages(url, retries=2, backoff=0.01) as remote, \
            pytest.raises(ToolError, match=f"^the retriever at {url} answered HTTP 500: index not loaded$"):
        remote.search(["q"], 3)
    assert script.count == 3


def test_4xx_is_not_retried() -> None:
    script = ScriptedRetriever(JSONResponse({"detail": "topk must be between 1 and 5, got 20"}, 422))
    with script.serving() as url, RemotePassages(url, backoff=0.01) as remote, \
            pytest.raises(ToolError, match=r"answered HTTP 422: topk must be between 1 and 5, got 20$"):
        remote.search(["q"], 20)
    assert script.count == 1


def test_a_timeout_is_not_retried() -> None:
    script = ScriptedRetriever(SlowAnswer(ONE_HIT, delay_s=0.6))
    with script.serving() as url, RemotePassages(url, timeout=0.1, backoff=0.01) as remote, \
            pytest.raises(ToolError, match=f"^the retriever at {url} did not answer within 0.1 s$"):
        remote.search(["q"], 3)
    assert script.count == 1


@pytest.mark.parametrize(("answer", "problem"), [
    (Response("<html>Bad Gateway</html>", 200), "did not answer JSON: '<html>Bad Gateway</html>'"),
    (JSONResponse(["a", "list"]), 'sent a malformed answer: expected a JSON object {"result": [...]}'),
    (JSONResponse({"result": [[], []]}), "sent a malformed answer: 2 result lists for 1 queries"),
    (JSONResponse({"result": [{"document": {}}]}), "sent a malformed answer: result[0] is a object, not a list"),
    (JSONResponse({"result": [[{"document": {"id": "x"}, "score": 1}]]}),
     "sent a malformed answer: result[0][0]: expected a string 'contents', or string 'title' and 'text'"),
    (JSONResponse({"result": [[{"document": CONTENTS_ROWS[0], "score": "high"}]]}),
     "sent a malformed answer: result[0][0]: 'score' must be a number, got string"),
    (JSONResponse({"result": [["just a string"]]}), "sent a malformed answer: result[0][0]: expected a JSON object"),
])
def test_a_malformed_answer_says_what_is_wrong(answer: Response, problem: str) -> None:
    with ScriptedRetriever(answer).serving() as url, RemotePassages(url) as remote, \
            pytest.raises(ToolError) as raised:
        remote.search(["q"], 3)
    assert str(raised.value).startswith(f"the retriever at {url} {problem}"), str(raised.value)


def test_an_oversized_answer_is_refused() -> None:
    big = json.dumps({"result": [[{"document": {"id": "p", "contents": "x" * 5000}, "score": 1.0}]]}).encode()

    async def chunks() -> Any:
        for start in range(0, len(big), 1000):
            yield big[start:start + 1000]

    answers = {"with content-length": lambda: Response(big, media_type="application/json"),
               "streamed, no content-length": lambda: StreamingResponse(chunks())}
    for kind, answer in answers.items():
        with ScriptedRetriever(answer()).serving() as url, RemotePassages(url, max_response_bytes=4096) as remote, \
                pytest.raises(ToolError, match=f"^the retriever at {url} sent an answer larger than 4096 bytes$"):
            remote.search(["q"], 3)
        with ScriptedRetriever(answer()).serving() as url, RemotePassages(url, max_response_bytes=len(big)) as remote:
            assert remote.search(["q"], 3)[0][0].contents == "x" * 5000, kind


def test_bad_construction_arguments() -> None:
    with pytest.raises(ValueError, match="expected http://HOST:PORT/retrieve"):
        RemotePassages("localhost:8000/retrieve")
    with pytest.raises(ValueError, match="max_batch >= 1"):
        RemotePassages("http://localhost:8000/retrieve", max_batch=0)
    with RemotePassages("http://localhost:8000") as remote:
        assert remote.describe() == "Search-R1 retriever at http://localhost:8000/retrieve"


async def test_an_unreachable_retriever_is_the_tool_calls_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/retrieve"
    message = f"cannot reach the retriever at {url}: connection refused"
    with anyio.fail_after(30), RemotePassages(url, backoff=0.01) as remote:
        async with Client(create_server(SearchTools(remote))) as client:
            single = await client.call_tool("search", {"query": "penicillin"})
            batch = await client.call_tool("search_batch", {"calls": [{"query": "a"}, {"query": "b", "topk": 2}]})
    assert single.is_error and message in single.content[0].text
    entries = batch.structured_content["results"]
    assert [entry["is_error"] for entry in entries] == [True, True]
    assert all(message in entry["text"] for entry in entries)
