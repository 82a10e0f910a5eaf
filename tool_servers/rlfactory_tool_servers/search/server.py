"""``search(query, topk)``: Wikipedia passage retrieval as an MCP server (the tool is ``tools.SearchTools``), with a
vectorised batched form.

The server loads a wiki-18 jsonl corpus and a retriever once at start: BM25 in memory by default, or any index
``rlf index build`` made (BM25, FAISS, Milvus; two fused by reciprocal rank), or Search-R1's e5 FAISS layout; or it
forwards to a Search-R1 retriever service. Retrieval runs in a worker thread so the event loop keeps serving other
requests; a batch of searches is one retriever call. Over HTTP it also answers Search-R1's ``POST /retrieve``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from mcp.server.mcpserver import MCPServer

from rlfactory_tool_servers.search.index_loading import describe_source, make_source
from rlfactory_tool_servers.search.remote_passages import retriever_endpoint
from rlfactory_tool_servers.search.retrieve_api import add_retrieve_route
from rlfactory_tool_servers.search.tools import SearchLimits, SearchTools
from rlfactory_tool_servers.toolset import publish_toolsets

PROG = "python -m rlfactory_tool_servers.search"


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


def create_server(tools: SearchTools) -> MCPServer:
    """An MCP server named "search" publishing ``search`` (and its batched form) for ``tools``, and, over HTTP,
    Search-R1's ``POST /retrieve``."""
    server = publish_toolsets("search", [tools])
    add_retrieve_route(server, tools)
    return server


def describe_data(options: argparse.Namespace) -> str:
    """The passages and the retriever ``options`` name, for the start message."""
    return describe_source(options)


def build_server(argv: Sequence[str], prog: str = PROG) -> MCPServer:
    """Parse the options, load the corpus and the index (or reach the remote retriever), and build the server."""
    options = parse_options(argv, prog)
    limits = SearchLimits(default_topk=options.default_topk, max_topk=options.max_topk,
                          max_query_chars=options.max_query_chars)
    return create_server(SearchTools(make_source(options), limits))
