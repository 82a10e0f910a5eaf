"""MCP tool servers, one package per domain, each runnable on its own (``python -m rlfactory_tool_servers.<name>``).

Every server package exports ``build_server(argv, prog=...) -> MCPServer`` so the same server can run in a
subprocess (stdio or streamable HTTP) or in-process, built from the same command-line arguments; and, for its
command line (``launch``), ``options_parser(prog=...)`` (its own options) and ``describe_data(options)`` (what it
answers from, for the start message).
"""
