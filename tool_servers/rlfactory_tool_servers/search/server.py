"""``search(query, topk)``: Wikipedia passage retrieval as an MCP tool, with a vectorised batched form.

The server loads a wiki-18 jsonl corpus and a retriever once at start: BM25 in memory by default, or any index
``rlf index build`` made (BM25, FAISS, Milvus; two fused by reciprocal rank), or Search-R1's e5 FAISS layout; or it
forwards to a Search-R1 retriever service. Retrieval runs in a worker thread so the event loop keeps serving other
requests; a batch of searches is one retriever call. Over HTTP it also answers Search-R1's ``POST /retrieve``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from rlfactory_tool_servers.batched_tool import add_batched_tool
from rlfactory_tool_servers.search.formatting import format_passages
from rlfactory_tool_servers.search.index_loading import describe_source, make_source
from rlfactory_tool_servers.search.passages import Passage, PassageSource
from rlfactory_tool_servers.search.remote_passages import retriever_endpoint
from rlfactory_tool_servers.search.retrieve_api import add_retrieve_route

PROG = "python -m rlfactory_tool_servers.search"

NO_MATCH_TEXT = "No passages matched the query. Try other keywords."

SEARCH_DESCRIPTION = """\
Search Wikipedia for a query and return the top passages, most relevant first.

Each passage comes back on its own line as `Doc i(Title: "Article title") passage text`. Use a short, \
specific query (key words or a question), one fact per search; search again with other words if the \
passages do not answer the question. `topk` (1 to {max_topk}, default {default_topk}) is how many passages \
to return; a query may be at most {max_query_chars} characters long."""


@dataclass(frozen=True)
class SearchLimits:
    """Bounds on one search request."""

    default_topk: int = 3
    max_topk: int = 20
    max_query_chars: int = 4096


class SearchService:
    """Checks search requests, retrieves, and formats the passages; no MCP in here."""

    def __init__(self, source: PassageSource, limits: SearchLimits = SearchLimits()) -> None:
        self.source = source
        self.limits = limits

    def check(self, query: str, topk: int) -> None:
        """Raise ``ToolError`` with a message the model can act on if the request is out of bounds."""
        if not query.strip():
            raise ToolError("query must not be empty")
        if len(query) > self.limits.max_query_chars:
            raise ToolError(f"query is {len(query)} characters long; the limit is {self.limits.max_query_chars}")
        if not 1 <= topk <= self.limits.max_topk:
            raise ToolError(f"topk must be between 1 and {self.limits.max_topk}, got {topk}")

    def search_checked(self, requests: Sequence[tuple[str, int]]) -> list[str]:
        """The formatted result of each ``(query, topk)`` request (already checked), from one retriever call.

        Every call retrieves ``max_topk`` passages and keeps the first ``topk``, so a request gets the same
        passages alone or in any batch.
        """
        if not requests:
            return []
        found = self.source.search([query for query, _ in requests], self.limits.max_topk)
        return [format_passages(passage.contents for passage in passages[:topk]) if passages else NO_MATCH_TEXT
                for (_, topk), passages in zip(requests, found)]

    def retrieve(self, queries: list[str], topk: int) -> list[list[Passage]]:
        """Search-R1's ``/retrieve``: each query's passages (checked as a tool call's are), in one blocking call."""
        for query in queries:
            self.check(query, topk)
        return self.source.search(queries, topk) if queries else []

    async def search(self, query: str, topk: int) -> str:
        """One search, checked, retrieved in a worker thread."""
        self.check(query, topk)
        [text] = await anyio.to_thread.run_sync(self.search_checked, [(query, topk)])
        return text

    async def search_batch(self, calls: list[dict[str, Any]]) -> list[str | Exception]:
        """Many searches (validated ``{"query", "topk"}`` dicts), aligned with ``calls``.

        An out-of-bounds element gets its ``ToolError`` in its place; the others are retrieved together in one
        worker-thread call.
        """
        results: list[str | Exception] = [""] * len(calls)
        positions: list[int] = []
        requests: list[tuple[str, int]] = []
        for position, call in enumerate(calls):
            try:
                self.check(call["query"], call["topk"])
            except ToolError as exc:
                results[position] = exc
                continue
            positions.append(position)
            requests.append((call["query"], call["topk"]))
        try:
            texts = await anyio.to_thread.run_sync(self.search_checked, requests) if requests else []
        except ToolError as exc:  # one retrieval for the batch (a remote retriever's failure): each element fails alike
            texts = [exc] * len(requests)
        for position, text in zip(positions, texts):
            results[position] = text
        return results


def options_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The search server's own options (the transport options are ``rlfactory_tool_servers.launch``'s)."""
    parser = argparse.ArgumentParser(
        prog=prog, description="MCP server: search a Wikipedia passage corpus.",
        epilog="Over HTTP it also answers Search-R1's POST /retrieve {\"queries\", \"topk\", \"return_scores\"}.")
    data = parser.add_argument_group("passages and index")
    data.add_argument("--corpus", type=Path, default=None,
                      help="passages in Search-R1 wiki-18 jsonl ({id, contents} or {id, title, text} per line); "
                           "required unless --retriever-url")
    data.add_argument("--index-dir", type=Path, action="append", default=[], metavar="DIR",
                      help="an index built by `rlf index build` (its manifest says the backend: bm25, faiss or "
                           "milvus); give it twice (e.g. BM25 and dense) for reciprocal-rank fusion. A new or empty "
                           "DIR with --retriever bm25: the BM25 index is built there once and loaded afterwards")
    data.add_argument("--retriever", choices=["bm25", "faiss"], default="bm25",
                      help="without --index-dir: bm25 (default, built in memory) or faiss (Search-R1's layout: "
                           "--faiss-index e5_Flat.index and --encoder)")
    data.add_argument("--faiss-index", type=Path, default=None,
                      help="faiss: the index file in Search-R1's e5_Flat.index layout, one row per passage")
    data.add_argument("--encoder", default=None,
                      help="faiss: the e5 query encoder, a local directory (or a model name to download)")
    data.add_argument("--milvus-uri", default=None,
                      help="a milvus index: the Milvus server to query (http://host:19530) instead of the "
                           "manifest's Milvus Lite file")
    data.add_argument("--retriever-url", default=None,
                      help="no local index: forward searches to a Search-R1 retriever (http://host:8000/retrieve)")
    data.add_argument("--fusion-k", type=int, default=60, help="reciprocal-rank fusion constant (default 60)")
    data.add_argument("--device", default=None, help="query encoder device (default: cuda when available, else cpu)")
    limits = parser.add_argument_group("limits")
    limits.add_argument("--default-topk", type=int, default=3, help="passages returned when topk is omitted")
    limits.add_argument("--max-topk", type=int, default=20, help="largest topk a call may ask for")
    limits.add_argument("--max-query-chars", type=int, default=4096, help="longest query accepted, in characters")
    return parser


def parse_options(argv: Sequence[str], prog: str = PROG) -> argparse.Namespace:
    """Parse and cross-check the options; a bad combination exits with a usage error, like argparse does."""
    parser = options_parser(prog)
    options = parser.parse_args(list(argv))
    if options.max_topk < 1:
        parser.error("--max-topk must be at least 1")
    if not 1 <= options.default_topk <= options.max_topk:
        parser.error("--default-topk must be between 1 and --max-topk")
    if options.max_query_chars < 1:
        parser.error("--max-query-chars must be at least 1")
    if options.fusion_k < 1:
        parser.error("--fusion-k must be at least 1")
    if options.retriever_url is not None:
        if options.index_dir or options.faiss_index:
            parser.error("--retriever-url serves a remote retriever's passages; drop --index-dir and --faiss-index")
        try:
            options.retriever_url = retriever_endpoint(options.retriever_url)
        except ValueError as exc:
            parser.error(f"--retriever-url: {exc}")
        return options
    if options.corpus is None:
        parser.error("--corpus is required (or --retriever-url for a remote retriever)")
    if not options.corpus.is_file():
        parser.error(f"--corpus {options.corpus}: no such file")
    if options.retriever == "faiss":
        if options.index_dir:
            parser.error("--index-dir and --retriever faiss exclude each other: an index's manifest names its backend")
        if options.faiss_index is None or options.encoder is None:
            parser.error("--retriever faiss needs --faiss-index and --encoder")
        if not options.faiss_index.is_file():
            parser.error(f"--faiss-index {options.faiss_index}: no such file")
    return options


def create_server(service: SearchService) -> MCPServer:
    """An MCP server named "search" publishing ``search`` and ``search_batch`` for ``service``."""
    limits = service.limits

    async def search(query: str, topk: int = limits.default_topk) -> str:
        return await service.search(query, topk)

    search.__doc__ = SEARCH_DESCRIPTION.format(default_topk=limits.default_topk, max_topk=limits.max_topk,
                                               max_query_chars=limits.max_query_chars)
    server = MCPServer("search", log_level="WARNING")
    add_batched_tool(server, search, name="search", batch_fn=service.search_batch)
    add_retrieve_route(server, service)
    return server


def describe_data(options: argparse.Namespace) -> str:
    """The passages and the retriever ``options`` name, for the start message."""
    return describe_source(options)


def build_server(argv: Sequence[str], prog: str = PROG) -> MCPServer:
    """Parse the options, load the corpus and the index (or reach the remote retriever), and build the server."""
    options = parse_options(argv, prog)
    limits = SearchLimits(default_topk=options.default_topk, max_topk=options.max_topk,
                          max_query_chars=options.max_query_chars)
    return create_server(SearchService(make_source(options), limits))
