"""Wikipedia passage search as an MCP tool server: ``search(query, topk)`` over a wiki-18 corpus (BM25, FAISS, Milvus
or a remote Search-R1 retriever), and Search-R1's ``POST /retrieve`` over HTTP; ``rlf index build`` makes the indexes."""

from rlfactory_tool_servers.search.server import build_server, describe_data, options_parser

OTHER_DATA_OPTIONS = ("--retriever-url",)
"""Data options besides ``--corpus``: given one, ``rlf serve search`` does not serve the embedded sample."""

__all__ = ["OTHER_DATA_OPTIONS", "build_server", "describe_data", "options_parser"]
