"""One tool server run as several replicas: an ``mcpServers`` entry with ``urls``, one stateless HTTP service each.

``ReplicatedClient`` is what the toolbox uses for such an entry in place of a ``ServerClient``, with the same
interface; it holds one ``ServerClient`` per replica (each with its own sessions, concurrency limit, retries and
merging of calls: a merged request always goes to one replica).

- Start: every replica is started at once. The server is usable when at least one answers; those that do must list
  the same tools (``ConfigError`` naming two that differ). A replica that does not answer begins down. When none
  answers, ``TransportError`` as for a single server.
- Spreading: a call without affinity goes to the live replica with the fewest calls in flight (ties in turn). When
  it comes back ``unavailable`` (the replica stayed unreachable through its own ``retries``), that replica is taken
  out, and the call is sent again, once, to each other live replica until one answers. A deadline or an error the
  tool gave is the call's result: it is not sent again.
- Out and back: a replica taken out is probed in the background (its tool list asked for, its session reopened),
  ``replica_probe_s`` after it was taken out, then after twice as long each time it does not answer, up to
  ``REPLICA_PROBE_MAX_FACTOR`` times ``replica_probe_s``. Once it answers (listing the same tools) it takes calls
  again.
- Affinity: a call with an ``affinity`` (an env sets the episode id) goes to the replica that affinity was given at
  its first call (the least loaded live one then); the last ``max_affinities`` affinities used are remembered. Such
  a call is never moved: the state it needs lives on its replica. When that replica is down, or goes down under
  the call, the call fails as ``unavailable`` with a message that says the episode's session is lost.

Every call is counted once in the server's counters, whichever replicas it went to (a re-send to another replica
is a retry), and every sending in the counters of the replica it went to (see ``stats``).
"""

from __future__ import annotations

import asyncio
import functools
from collections import OrderedDict
from collections.abc import Callable, Sequence

import mcp_types

from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.config import REPLICA_PROBE_MAX_FACTOR, ReplicatedHttpServerEntry
from rlfactory_envs.kernel.mcp.errors import TransportError
from rlfactory_envs.kernel.mcp.server_client import (UNAVAILABLE, Outcome, ServerClient, deliver_when_done,
                                                     result_sink, set_if_pending)
from rlfactory_envs.kernel.mcp.stats import ReplicaCounters, ServerStats
from rlfactory_envs.kernel.tool_call import ToolCall, ToolResult

MAX_AFFINITIES = 65_536


class _Replica:
    """One replica: its client, its counters (``counters.up`` says whether it takes calls), its calls in flight."""

    def __init__(self, url: str, client: ServerClient, counters: ReplicaCounters):
        self.url = url
        self.client = client
        self.counters = counters
        self.in_flight = 0
        self.started = False  # its client's start succeeded once (a probe then needs only to reach it)
        self.probe: asyncio.Task[None] | None = None


class ReplicatedClient:
    """The replicas of one server behind the interface of a ``ServerClient``; see the module docstring."""

    max_affinities = MAX_AFFINITIES

    def __init__(self, name: str, entry: ReplicatedHttpServerEntry, stats: ServerStats | None = None):
        self.name = name
        self.entry = entry
        self.stats = stats if stats is not None else ServerStats()
        self.tools: list[mcp_types.Tool] = []
        self._replicas = [_Replica(url, ServerClient(name, entry.replica(url), self.stats), self.stats.replica(url))
                          for url in entry.urls]
        self._affinities: OrderedDict[str, _Replica] = OrderedDict()
        self._turn = 0  # where the search for the least loaded replica starts, so ties are taken in turn
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------------------------

    async def start(self) -> list[mcp_types.Tool]:
        """Start every replica; the tools of those that answered. ``TransportError`` when none did, ``ConfigError``
        when two list different tools."""
        listed = await asyncio.gather(*(r.client.start() for r in self._replicas), return_exceptions=True)
        failures: list[str] = []
        first: tuple[_Replica, list[mcp_types.Tool]] | None = None
        for replica, tools in zip(self._replicas, listed):
            if isinstance(tools, TransportError):
                failures.append(str(tools))
                continue
            if isinstance(tools, BaseException):
                raise tools
            if first is None:
                first = (replica, tools)
            elif _names(tools) != _names(first[1]):
                raise ConfigError(f"the replicas of server {self.name!r} list different tools: {first[0].url} has "
                                  f"{', '.join(_names(first[1]))}; {replica.url} has {', '.join(_names(tools))}")
            replica.started = True
        if first is None:
            raise TransportError(f"server {self.name!r}: none of its {len(self._replicas)} replicas could be "
                                 f"reached: {'; '.join(failures)}")
        self.tools = first[1]
        for replica in self._replicas:
            replica.counters.up = replica.started
            if not replica.started:
                self._start_probe(replica)
        return self.tools

    async def close(self) -> None:
        """Stop probing and close every replica's sessions; the counters keep the last state seen."""
        self._closed = True
        probes = [r.probe for r in self._replicas if r.probe is not None]
        for probe in probes:
            probe.cancel()
        await asyncio.gather(*probes, return_exceptions=True)
        await asyncio.gather(*(r.client.close() for r in self._replicas), return_exceptions=True)

    # -- calling ---------------------------------------------------------------------------------------------

    def send(self, call: ToolCall, deliver: Callable[[ToolResult], None]) -> None:
        """Run ``call`` on a replica chosen as the module docstring says; ``deliver`` gets its result."""
        outcome = self._spread(call) if call.affinity is None else self._pinned(call, call.affinity)
        deliver_when_done(asyncio.ensure_future(outcome), result_sink(self.stats, self.name, call, deliver))

    async def call(self, call: ToolCall) -> ToolResult:
        """``send``, awaited: the result of ``call``; never raises."""
        future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
        self.send(call, functools.partial(set_if_pending, future))
        return await future

    async def _spread(self, call: ToolCall) -> Outcome:
        tried: list[_Replica] = []
        outcome: Outcome | None = None
        while (replica := self._least_loaded(tried)) is not None:
            if tried:
                self.stats.tool(call.name).retries += 1
            tried.append(replica)
            outcome = await self._send(replica, call)
            if outcome.failure != UNAVAILABLE:
                return outcome
        return outcome if outcome is not None else self._none_up()

    async def _pinned(self, call: ToolCall, affinity: str) -> Outcome:
        replica = self._affinities.get(affinity)
        if replica is not None:
            self._affinities.move_to_end(affinity)
        else:
            replica = self._least_loaded()
            if replica is None:
                return self._none_up()
            self._affinities[affinity] = replica
            if len(self._affinities) > self.max_affinities:
                self._affinities.popitem(last=False)
        if not replica.counters.up:
            lost = self._session_lost(replica, "it was taken out after failing to answer")
            self._count_at(replica, lost)
            return lost
        outcome = await self._send(replica, call)
        if outcome.failure == UNAVAILABLE:
            return self._session_lost(replica, outcome.text.removeprefix("Error: "))
        return outcome

    async def _send(self, replica: _Replica, call: ToolCall) -> Outcome:
        replica.in_flight += 1
        try:
            outcome = await replica.client.outcome(call)
        finally:
            replica.in_flight -= 1
        self._count_at(replica, outcome)
        if outcome.failure == UNAVAILABLE:
            self._take_out(replica)
        return outcome

    def _least_loaded(self, tried: Sequence[_Replica] = ()) -> _Replica | None:
        """The live replica not in ``tried`` with the fewest calls in flight, the next in turn among equals."""
        count = len(self._replicas)
        in_turn = [(self._turn + step) % count for step in range(count)]
        live = [i for i in in_turn if self._replicas[i].counters.up and self._replicas[i] not in tried]
        if not live:
            return None
        chosen = min(live, key=lambda i: self._replicas[i].in_flight)  # min keeps the first of equals
        self._turn = (chosen + 1) % count
        return self._replicas[chosen]

    def _none_up(self) -> Outcome:
        return Outcome(f"Error: the tool server {self.name!r} is unavailable: none of its {len(self._replicas)} "
                       f"replicas is up ({', '.join(r.url for r in self._replicas)}).", True, UNAVAILABLE)

    def _session_lost(self, replica: _Replica, cause: str) -> Outcome:
        return Outcome(f"Error: the replica of tool server {self.name!r} that holds this episode's session "
                       f"({replica.url}) is down ({cause.rstrip('.')}); the session's state is lost.", True,
                       UNAVAILABLE)

    @staticmethod
    def _count_at(replica: _Replica, outcome: Outcome) -> None:
        counters = replica.counters
        counters.calls += 1
        counters.errors += outcome.is_error
        counters.unavailable += outcome.failure == UNAVAILABLE

    # -- out and back ----------------------------------------------------------------------------------------

    def _take_out(self, replica: _Replica) -> None:
        if replica.counters.up:
            replica.counters.up = False
            replica.counters.marked_down += 1
            self._start_probe(replica)

    def _start_probe(self, replica: _Replica) -> None:
        if not self._closed and (replica.probe is None or replica.probe.done()):
            replica.probe = asyncio.ensure_future(self._probe(replica))

    async def _probe(self, replica: _Replica) -> None:
        """Ask ``replica`` whether it answers, less and less often, until it does; then it takes calls again."""
        delay = self.entry.replica_probe_s
        while not self._closed:
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.entry.replica_probe_s * REPLICA_PROBE_MAX_FACTOR)
            try:
                if replica.started:
                    await replica.client.probe()
                elif _names(await replica.client.start()) != _names(self.tools):
                    continue  # another server, or another version of it, answers there
            except Exception:  # noqa: BLE001 - whatever the failure, the replica stays out and is asked again
                continue
            replica.started = True
            replica.counters.up = True
            replica.counters.back_up += 1
            return


def _names(tools: Sequence[mcp_types.Tool]) -> list[str]:
    return sorted(tool.name for tool in tools)
