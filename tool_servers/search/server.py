"""``search(query, topk)``: Wikipedia passage retrieval as an MCP tool, with a vectorised batched form.

The server loads a wiki-18 jsonl corpus and a retriever (BM25 by default, optionally dense FAISS) once at start,
then answers from memory: no network access at run time. Retrieval runs in a worker thread so the event loop
keeps serving other requests; a batch of searches is one retriever call.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from rlfactory_tool_servers.batched_tool import add_batched_tool
from rlfactory_tool_servers.search.corpus import Corpus, load_corpus
from rlfactory_tool_servers.search.formatting import format_passages

PROG = "python -m rlfactory_tool_servers.search"

NO_MATCH_TEXT = "No passages matched the query. Try other keywords."

SEARCH_DESCRIPTION = """\
Search Wikipedia for a query and return the top passages, most relevant first.

Each passage comes back on its own line as `Doc i(Title: "Article title") passage text`. Use a short, \
specific query (key words or a question), one fact per search; search again with other words if the \
passages do not answer the question. `topk` (1 to {max_topk}, default {default_topk}) is how many passages \
to return; a query may be at most {max_query_chars} characters long."""


class Retriever(Protocol):
    """What the server needs of a retriever: passage indices, best first, for many queries in one call."""

    def retrieve(self, queries: list[str], topk: int) -> list[list[int]]: ...


@dataclass(frozen=True)
class SearchLimits:
    """Bounds on one search request."""

    default_topk: int = 3
    max_topk: int = 20
    max_query_chars: int = 4096


class SearchService:
    """Checks search requests, retrieves, and formats the passages; no MCP in here."""

    def __init__(self, corpus: Corpus, retriever: Retriever, limits: SearchLimits = SearchLimits()) -> None:
        self.corpus = corpus
        self.retriever = retriever
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
        ranked = self.retriever.retrieve([query for query, _ in requests], self.limits.max_topk)
        contents = self.corpus.contents
        return [format_passages(contents[i] for i in indices[:topk]) if indices else NO_MATCH_TEXT
                for (_, topk), indices in zip(requests, ranked)]

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
        texts = await anyio.to_thread.run_sync(self.search_checked, requests) if requests else []
        for position, text in zip(positions, texts):
            results[position] = text
        return results


def options_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The search server's own options (the transport options are ``rlfactory_tool_servers.launch``'s)."""
    parser = argparse.ArgumentParser(prog=prog, description="MCP server: search a Wikipedia passage corpus.")
    parser.add_argument("--corpus", required=True, type=Path,
                        help="passages in Search-R1 wiki-18 jsonl ({id, contents} or {id, title, text} per line)")
    parser.add_argument("--retriever", choices=["bm25", "faiss"], default="bm25",
                        help="bm25 (default) or faiss (dense e5, needs --faiss-index and --encoder)")
    parser.add_argument("--index-dir", type=Path, default=None,
                        help="bm25: cache the index here (built and saved once, memory-mapped afterwards)")
    parser.add_argument("--faiss-index", type=Path, default=None,
                        help="faiss: the index file in Search-R1's e5_Flat.index layout, one row per passage")
    parser.add_argument("--encoder", type=Path, default=None,
                        help="faiss: a local directory holding the e5 query encoder (loaded with transformers)")
    parser.add_argument("--default-topk", type=int, default=3, help="passages returned when topk is omitted")
    parser.add_argument("--max-topk", type=int, default=20, help="largest topk a call may ask for")
    parser.add_argument("--max-query-chars", type=int, default=4096, help="longest query accepted, in characters")
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
    if not options.corpus.is_file():
        parser.error(f"--corpus {options.corpus}: no such file")
    if options.retriever == "faiss":
        if options.faiss_index is None or options.encoder is None:
            parser.error("--retriever faiss needs --faiss-index and --encoder")
        if not options.faiss_index.is_file():
            parser.error(f"--faiss-index {options.faiss_index}: no such file")
    return options


def make_retriever(options: argparse.Namespace, corpus: Corpus) -> Retriever:
    """The retriever ``options`` ask for, over ``corpus``."""
    if options.retriever == "faiss":
        from rlfactory_tool_servers.search.dense_retriever import DenseRetriever, E5QueryEncoder

        return DenseRetriever.load(options.faiss_index, E5QueryEncoder(options.encoder), num_docs=len(corpus))
    from rlfactory_tool_servers.search.bm25_retriever import BM25Retriever

    if options.index_dir is not None:
        return BM25Retriever.cached(corpus.contents, options.index_dir)
    return BM25Retriever.build(corpus.contents)


def create_server(service: SearchService) -> MCPServer:
    """An MCP server named "search" publishing ``search`` and ``search_batch`` for ``service``."""
    limits = service.limits

    async def search(query: str, topk: int = limits.default_topk) -> str:
        return await service.search(query, topk)

    search.__doc__ = SEARCH_DESCRIPTION.format(default_topk=limits.default_topk, max_topk=limits.max_topk,
                                               max_query_chars=limits.max_query_chars)
    server = MCPServer("search", log_level="WARNING")
    add_batched_tool(server, search, name="search", batch_fn=service.search_batch)
    return server


def describe_data(options: argparse.Namespace) -> str:
    """The corpus and the retriever ``options`` name, for the start message."""
    if options.retriever == "faiss":
        return f"corpus {options.corpus}, dense retriever (index {options.faiss_index}, encoder {options.encoder})"
    cached = f", index cached in {options.index_dir}" if options.index_dir is not None else ""
    return f"corpus {options.corpus}, BM25 retriever{cached}"


def build_server(argv: Sequence[str], prog: str = PROG) -> MCPServer:
    """Parse the options, load the corpus and the retriever, and build the server."""
    options = parse_options(argv, prog)
    corpus = load_corpus(options.corpus)
    limits = SearchLimits(default_topk=options.default_topk, max_topk=options.max_topk,
                          max_query_chars=options.max_query_chars)
    return create_server(SearchService(corpus, make_retriever(options, corpus), limits))
