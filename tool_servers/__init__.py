"""MCP tool servers, one package per domain, each runnable on its own (``python -m rlfactory_tool_servers.<name>``).

Every server package exposes ``build_server(argv) -> MCPServer`` so the same server can run in a subprocess
(stdio or streamable HTTP) or in-process, built from the same command-line arguments.
"""
