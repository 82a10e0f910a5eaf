"""Counters of what the toolbox did, per server and per tool, so that a degraded tool server is visible.

Every count is of tool calls (the calls a model made), not of MCP requests: a merged request of 8 calls that hit
its deadline counts 8 timeouts, and 8 retries when it is sent again.

- ``calls``: calls routed to the tool (counted when they finish);
- ``errors``: calls whose result is an error, whatever the cause (the tool's own errors, rejected arguments, a
  deadline, a server that stays unreachable);
- ``timeouts``: errors because a deadline passed: the toolbox's per-request ``timeout_s``, or the per-element
  deadline of a batched form, reported by the server;
- ``unavailable``: errors because the server could not be reached, every retry included;
- ``retries``: re-sends of a call after a transport failure (each after a reconnect, see ``server_client``);
- ``reconnects``: attempts to open again a pooled session that died, whether or not the attempt succeeded,
  counted against the tool whose call started it (a reconnect shared by concurrent calls counts once).

A server run as several replicas (an ``mcpServers`` entry with ``urls``, see ``replicas``) counts its calls as one
server does (each call once, whichever replicas it was sent to; a re-send to another replica after one failed to
answer is a retry), and also per replica, by URL (``ReplicaCounters``): each sending of a call to a replica counts
there, so a call re-sent after a replica failed counts at both.

The counters are plain ints, changed only on the toolbox's loop; ``snapshot`` may be read from any thread (a call
finishing meanwhile may show in one counter and not yet in another).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class CallCounters:
    """The counters of one tool (or the sum over tools)."""

    calls: int = 0
    errors: int = 0
    timeouts: int = 0
    unavailable: int = 0
    retries: int = 0
    reconnects: int = 0

    def add(self, other: CallCounters) -> None:
        for counter in fields(self):
            setattr(self, counter.name, getattr(self, counter.name) + getattr(other, counter.name))


@dataclass
class ReplicaCounters:
    """One replica of a replicated server: whether it takes calls now, and what was sent to it.

    - ``up``: it takes calls (false while it is taken out after failing to answer, and before it first answered;
      after the toolbox closed, as it was last seen);
    - ``calls``: calls sent to it, or routed to it by their affinity while it was down (counted when they finish);
    - ``errors``: those whose result is an error, whatever the cause;
    - ``unavailable``: errors because this replica could not be reached (every retry to it included), or was down
      when a call bound to it by affinity came;
    - ``marked_down``: times it was taken out; ``back_up``: times it answered a probe and took calls again.
    """

    up: bool = False
    calls: int = 0
    errors: int = 0
    unavailable: int = 0
    marked_down: int = 0
    back_up: int = 0


@dataclass
class ServerStats:
    """The counters of one server's tools, by tool name, and of its replicas, by URL (none for a single server)."""

    tools: dict[str, CallCounters] = field(default_factory=dict)
    replicas: dict[str, ReplicaCounters] = field(default_factory=dict)

    def tool(self, name: str) -> CallCounters:
        counters = self.tools.get(name)
        if counters is None:
            counters = self.tools[name] = CallCounters()
        return counters

    def replica(self, url: str) -> ReplicaCounters:
        counters = self.replicas.get(url)
        if counters is None:
            counters = self.replicas[url] = ReplicaCounters()
        return counters

    def totals(self) -> CallCounters:
        total = CallCounters()
        for counters in list(self.tools.values()):
            total.add(counters)
        return total

    def snapshot(self) -> dict[str, Any]:
        """The totals, ``"tools"``, and ``"replicas"`` (``{url: {"up": bool, counters...}}``) for a replicated
        server."""
        snapshot = {**asdict(self.totals()), "tools": {name: asdict(c) for name, c in sorted(self.tools.items())}}
        if self.replicas:
            snapshot["replicas"] = {url: asdict(c) for url, c in list(self.replicas.items())}
        return snapshot


@dataclass
class ToolboxStats:
    """The counters of every server of a toolbox, and of calls to tools no server offers."""

    servers: dict[str, ServerStats] = field(default_factory=dict)
    unknown_tool_calls: int = 0

    def server(self, name: str) -> ServerStats:
        stats = self.servers.get(name)
        if stats is None:
            stats = self.servers[name] = ServerStats()
        return stats

    def snapshot(self) -> dict[str, Any]:
        """A JSON-ready copy: ``{"servers": {name: {counters..., "tools": {tool: {counters...}}, "replicas": {url:
        {...}} (replicated servers only)}}, "totals": {...}, "unknown_tool_calls": n}``."""
        servers = {name: stats.snapshot() for name, stats in sorted(self.servers.items())}
        totals = CallCounters()
        for stats in list(self.servers.values()):
            totals.add(stats.totals())
        return {"servers": servers, "totals": asdict(totals), "unknown_tool_calls": self.unknown_tool_calls}
