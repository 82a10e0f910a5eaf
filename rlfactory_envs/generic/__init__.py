"""``rlf/MCP-v0``: a user's own environment from data, with no subclass: an ``mcpServers`` config (or plain Python
functions, or qwen-agent tools), a dataset, and a reward function."""
