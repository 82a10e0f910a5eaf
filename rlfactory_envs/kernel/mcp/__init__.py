"""The MCP transport layer: the ``mcpServers`` config, pooled sessions, the per-server client (limits, deadlines,
retries, merging), the loop thread the sessions live on, the hand-off to it, and the ``Toolbox`` over all of them.
It imports nothing of the env layer above it."""
