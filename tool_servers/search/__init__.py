"""Wikipedia passage search as an MCP tool server: ``search(query, topk)`` over a wiki-18 corpus (BM25 or FAISS)."""

from rlfactory_tool_servers.search.server import build_server, describe_data, options_parser

__all__ = ["build_server", "describe_data", "options_parser"]
