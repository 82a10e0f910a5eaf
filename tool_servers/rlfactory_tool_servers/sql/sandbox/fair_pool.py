"""Fair use of the threads that run SQL: no client (an episode of the tools, an answer of the reward) can keep the
others waiting, whatever its queries do.

``FairPool.run(client, work, not_after)`` runs ``work(turn)`` in one of the pool's worker threads, once admitted:

- Admission: a waiting unit of a *light* client goes before any of a heavy one, then the client that has used the
  least CPU so far, then the oldest. A client runs at most its ``limit`` units at once, and heavy units hold at
  most ``threads - reserve`` threads, so light work always finds a thread. A unit still waiting at ``not_after``
  is not run (``QueryTimeout``).
- Light and heavy: a client starts light (unless the caller says heavy: a long SQL text, whose parse no check can
  cut). A light turn may use ``light_slice_s`` of CPU time; past it its query stops (``SliceSpent``, raised by
  the engine), the client becomes heavy for good, and the unit waits again, as heavy: ``work`` runs again with a
  heavy turn and goes on from the progress it keeps itself.
- Heavy work yields the CPU: a heavy turn runs only while it holds the process's ``HEAVY_BATON`` (one runner at a
  time per 8 cores, ``HEAVY_RUNNERS``), and while light work runs anywhere in the process (``LIGHT``) rests
  ``REST_S`` after each ``HEAVY_QUANTUM_S``. Its queries check in (``Turn.checkpoint``) from SQLite's progress
  handler and between the rows they fetch. So hostile queries share at most one core among themselves, a fifth of
  it while honest ones run, and the event loops keep the rest.
- Heavy work takes turns by least CPU used: the baton goes to the waiting turn whose client has used the least
  CPU, and its holder hands it over after a quantum when a waiter's client has used less than its own. A heavy
  unit waiting for a heavy thread while all are taken pre-empts a heavy turn that waits for the baton and whose
  client has used more than ``PREEMPT_RATIO`` times its CPU: that turn stops (``SliceSpent``) and its work goes
  on in a later turn. So a client with a real slow query (a second of CPU) is not held up by hostile ones that
  have used five, and deadlines, waits included, end hostile work.
- A client may excuse its units' waits for a thread behind light units that came before them
  (``Client.excuse_light_waits``: the reward's answers, so a batch's own size never times one out); waits behind
  heavy work always count.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from rlfactory_tool_servers.sql.sandbox.cpu_share import HEAVY_BATON, LIGHT, BatonWait, wait_s
from rlfactory_tool_servers.sql.sandbox.query_errors import QueryTimeout

__all__ = ["HEAVY_BATON", "LIGHT", "Client", "FairPool", "PythonStopped", "SliceSpent", "Turn", "started_pool"]

T = TypeVar("T")
LIGHT_SLICE_S = 0.02
"""CPU seconds one light turn may use before its client turns heavy, by default (a tool query on Spider uses about
1 ms)."""
HEAVY_QUANTUM_S = 0.01
"""How long a heavy turn runs holding the baton before it rests (while light work runs) or hands it over."""
REST_S = 0.04
"""How long the baton rests after a quantum while light work runs: heavy work then takes at most a fifth of one
core, and still moves on (an honest slow answer is slowed, not starved)."""
PREEMPT_RATIO = 2.0
"""A heavy turn waiting for the baton gives its thread to a heavy unit whose client used less than its CPU over
this: its query starts again in a later turn, so pre-emption among near equals would be work thrown away (at most
half of what the pre-empted client used)."""
PYTHON_CALLS_PER_CHECK = 2000
"""Function calls between two check-ins of pure Python work (``Turn.checking_python``): about a millisecond."""
MAX_CLIENTS = 16_384
"""Named clients remembered (their CPU so far, whether heavy); the least recently used idle one is forgotten."""
POOL_START_TIMEOUT_S = 10.0


class PythonStopped(BaseException):
    """Python work under ``Turn.checking_python`` was stopped at a check-in (a ``BaseException``, so no ``except
    Exception`` in the library it runs swallows it); ``Turn.spent``/``over_budget`` say why, else its deadline."""


class SliceSpent(Exception):
    """A turn ended before its work did (a light turn used its CPU slice, or a heavy one was pre-empted): the work
    goes on as heavy in a later turn (raised from a query; not a query error)."""


class Client:
    """Whose work a unit is: an episode of the tools, an answer of the reward. ``limit``: its units at once;
    ``slice_s``: the CPU of one light turn; ``cpu_budget_s``: the CPU all its units may use (``None``: no budget).
    ``cpu_s``: the CPU its finished turns used (its rank among heavy clients: the least goes first).
    ``excuse_light_waits``: its units' admission deadlines move on by the time they wait for a thread behind light
    units that came before them (a batch's own load, never heavy work), summed in ``excused_s``."""

    __slots__ = ("key", "limit", "slice_s", "cpu_budget_s", "excuse_light_waits", "running", "waiting", "cpu_s",
                 "excused_s", "heavy")

    def __init__(self, key: Hashable, limit: int, slice_s: float = LIGHT_SLICE_S,
                 cpu_budget_s: float | None = None, excuse_light_waits: bool = False) -> None:
        self.key, self.limit, self.slice_s, self.cpu_budget_s = key, limit, slice_s, cpu_budget_s
        self.excuse_light_waits = excuse_light_waits
        self.running = self.waiting = 0
        self.cpu_s = self.excused_s = 0.0
        self.heavy = False


class Turn:
    """One admitted run of a unit in a worker thread: its queries call ``checkpoint`` to know whether to stop."""

    __slots__ = ("client", "heavy", "on_baton_wait", "seq", "spent", "over_budget", "preempted", "uncharged_s",
                 "baton_wait", "_started", "_slice_until", "_budget_until", "_holding")

    def __init__(self, client: Client, heavy: bool, on_baton_wait: Callable[[], None] = lambda: None,
                 seq: int = 0) -> None:
        self.client, self.heavy, self.on_baton_wait, self.seq = client, heavy, on_baton_wait, seq
        self.spent = self.over_budget = self.preempted = False
        self.baton_wait: BatonWait | None = None  # while it waits for the baton
        self.uncharged_s = 0.0
        self._started = 0.0  # the thread's CPU instant when the turn began
        self._slice_until = self._budget_until = math.inf  # thread CPU instants
        self._holding = 0.0  # since when a heavy turn holds the baton (0: it does not)

    def begin(self) -> None:
        """Start in the worker thread: a light turn counts as light work from now (a heavy one takes the baton at
        its first ``checkpoint``)."""
        now = self._started = time.thread_time()
        if self.client.cpu_budget_s is not None:
            self._budget_until = now + self.client.cpu_budget_s - self.client.cpu_s
        if not self.heavy:
            LIGHT.enter()
            self._slice_until = now + self.client.slice_s

    def end(self) -> None:
        if not self.heavy:
            LIGHT.leave()
        elif self._holding:
            self._holding = 0.0
            HEAVY_BATON.release()

    def used_s(self, cpu: float) -> float:
        """The CPU this turn has charged by the thread CPU instant ``cpu``."""
        return cpu - self._started - self.uncharged_s

    @contextlib.contextmanager
    def uncharged(self) -> Iterator[None]:
        """A block whose CPU counts against neither the slice nor the budget: work done once for every client (a
        trusted gold query whose result is cached), which says nothing of this client's weight."""
        started, slice_until, budget_until = time.thread_time(), self._slice_until, self._budget_until
        self._slice_until = self._budget_until = math.inf
        try:
            yield
        finally:
            used = time.thread_time() - started
            self.uncharged_s += used
            self._slice_until, self._budget_until = slice_until + used, budget_until + used

    @contextlib.contextmanager
    def checking_python(self, until: float) -> Iterator[None]:
        """A block of pure Python (a long query's parse, which no SQLite handler sees) that checks in like a query:
        every ``PYTHON_CALLS_PER_CHECK`` function calls (a trace function of this thread), so it rests while light
        work runs, waits for the baton and stops at ``until`` (``PythonStopped``). Compiled code (sqlglotc's
        parser) calls no trace function: there the query's length cap bounds the block."""
        calls = itertools.count(1)

        def trace(frame: Any, event: str, arg: Any) -> None:
            if next(calls) % PYTHON_CALLS_PER_CHECK == 0 and self.checkpoint(until):
                raise PythonStopped()

        previous = sys.gettrace()
        sys.settrace(trace)
        try:
            yield
        finally:
            sys.settrace(previous)

    def checkpoint(self, until: float) -> bool:
        """Whether the work must stop now: past the client's CPU budget (``over_budget``), a light turn past its
        slice (``spent``), a heavy one past ``until`` (its deadline, a ``time.monotonic()`` instant, waits
        included). A heavy turn runs only holding the baton: it takes it here, waiting until ``until`` at most
        behind heavy turns of clients that used less CPU; after each quantum it rests while light work runs (still
        holding it, so no other heavy turn runs instead), then hands it over when a waiter's client used less. A
        turn waiting for the baton whose thread the pool needs for a client that used less stops (``spent``: its
        work goes on in a later turn)."""
        cpu = time.thread_time()
        if cpu > self._budget_until:
            self.over_budget = True
            return True
        if not self.heavy:
            self.spent = cpu > self._slice_until
            return self.spent
        rank = self.client.cpu_s + self.used_s(cpu)
        if self._holding and time.monotonic() - self._holding > HEAVY_QUANTUM_S:
            if LIGHT.running:
                LIGHT.wait_idle(min(REST_S, until - time.monotonic()))
            self._holding = 0.0 if HEAVY_BATON.outranked(rank) else time.monotonic()
            if not self._holding:
                HEAVY_BATON.release()
        if not self._holding:
            wait = BatonWait(rank)
            if not HEAVY_BATON.take(wait):
                self.baton_wait = wait
                self.on_baton_wait()
                HEAVY_BATON.wait(wait, until - time.monotonic())
                self.baton_wait = None
            self._holding = time.monotonic() if wait.state == "handed" else 0.0
            self.spent = wait.state == "withdrawn"
        return not self._holding or time.monotonic() > until


class _Waiter:
    """A unit waiting for a thread; ``clear_at``: when no light unit that came before it was waiting or running."""

    __slots__ = ("seq", "client", "loop", "future", "turn", "enqueued", "clear_at")

    def __init__(self, seq: int, client: Client, loop: asyncio.AbstractEventLoop) -> None:
        self.seq, self.client, self.loop = seq, client, loop
        self.future: asyncio.Future[None] = loop.create_future()
        self.turn: Turn | None = None
        self.enqueued = time.monotonic()
        self.clear_at: float | None = None

    def excused_s(self) -> float:
        """How long it has waited behind light units that came before it (the load of work like its own)."""
        return (self.clear_at or time.monotonic()) - self.enqueued


class FairPool:
    """``threads`` worker threads shared fairly by clients (see the module docstring); ``reserve`` of them
    (default a quarter) are for light work only."""

    def __init__(self, threads: int, *, reserve: int | None = None, name: str = "rlf-sql"):
        if threads < 1:
            raise ValueError("threads must be at least 1")
        self.threads = threads
        self.heavy_threads = max(1, threads - (reserve if reserve is not None else max(1, threads // 4)))
        self.name = name
        self.busy = self.heavy_busy = 0
        self._lock = threading.Lock()
        self._waiting: list[_Waiter] = []
        self._order = itertools.count()
        self._clients: OrderedDict[Hashable, Client] = OrderedDict()
        self._heavy_turns: set[Turn] = set()
        self._light_running: set[int] = set()  # the arrival numbers of the light units running
        self._preempting = 0  # heavy turns withdrawn from the baton's queue that have not left yet
        self._executor: ThreadPoolExecutor | None = None

    def client(self, key: Hashable | None = None, limit: int = 2, *, slice_s: float = LIGHT_SLICE_S,
               cpu_budget_s: float | None = None, excuse_light_waits: bool = False) -> Client:
        """The client named ``key`` (remembered, so its CPU and heaviness carry from unit to unit), or a client of
        its own when ``key`` is ``None`` (see ``Client`` for the others)."""
        if key is None:
            return Client(object(), limit, slice_s, cpu_budget_s, excuse_light_waits)
        with self._lock:
            found = self._clients.get(key)
            if found is None:
                found = self._clients[key] = Client(key, limit)
                self._forget_idle()
            self._clients.move_to_end(key)
            return found

    def _forget_idle(self) -> None:
        while len(self._clients) > MAX_CLIENTS:
            key, oldest = next(iter(self._clients.items()))
            if oldest.running or oldest.waiting:
                return
            del self._clients[key]

    async def run(self, client: Client, work: Callable[[Turn], T], not_after: float | Callable[[], float], *,
                  heavy: bool = False) -> T:
        """``work(turn)`` in a worker thread once admitted; again as heavy when a light turn raises
        ``SliceSpent``. ``QueryTimeout`` when no thread came by ``not_after`` (a ``time.monotonic()`` instant,
        ``math.inf`` to wait as long as it takes, or a function giving it, asked before every admission: a
        deadline the work itself moves on)."""
        client.heavy = client.heavy or heavy
        while True:
            turn = await self._admitted(client, not_after() if callable(not_after) else not_after)
            try:
                return await asyncio.wrap_future(self._pool().submit(self._in_thread, turn, work))
            except SliceSpent:
                client.heavy = True

    def _in_thread(self, turn: Turn, work: Callable[[Turn], T]) -> T:
        turn.begin()
        try:
            return work(turn)
        finally:
            turn.end()
            self._leave(turn, turn.used_s(time.thread_time()))

    async def _admitted(self, client: Client, not_after: float) -> Turn:
        """The unit's turn once a thread is free for it; ``QueryTimeout`` past ``not_after`` (moved on by its
        waits behind light units that came first when the client excuses them)."""
        waiter = _Waiter(next(self._order), client, asyncio.get_running_loop())
        with self._lock:
            client.waiting += 1
            self._waiting.append(waiter)
            self._admit()
        try:
            while not waiter.future.done():
                left = not_after + (waiter.excused_s() if client.excuse_light_waits else 0.0) - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(waiter.future), wait_s(left))
        except BaseException as exc:
            with self._lock:
                if waiter.turn is None:
                    self._waiting.remove(waiter)
                    client.waiting -= 1
                    self._clear_behind_light()
            if waiter.turn is not None:  # admitted as the wait ended: give the thread back unused
                self._leave(waiter.turn, 0.0)
            if client.excuse_light_waits:
                client.excused_s += waiter.excused_s()
            if isinstance(exc, TimeoutError):
                raise QueryTimeout("the query waited past its deadline for a worker (other queries of this "
                                     "client or of others held them) and was not run") from None
            raise
        assert waiter.turn is not None
        if client.excuse_light_waits:
            client.excused_s += waiter.excused_s()
        return waiter.turn

    def _admit(self) -> None:
        """Admit waiting units while threads are free (called with the lock held)."""
        while self.busy < self.threads and self._waiting:
            eligible = [w for w in self._waiting if w.client.running < w.client.limit
                        and (not w.client.heavy or self.heavy_busy < self.heavy_threads)]
            if not eligible:
                break
            chosen = min(eligible, key=lambda w: (w.client.heavy, w.client.cpu_s, w.seq))
            self._waiting.remove(chosen)
            client = chosen.client
            client.waiting -= 1
            client.running += 1
            self.busy += 1
            self.heavy_busy += client.heavy
            chosen.turn = Turn(client, client.heavy, self._preempt_now, chosen.seq)
            if client.heavy:
                self._heavy_turns.add(chosen.turn)
            else:
                self._light_running.add(chosen.seq)
            chosen.loop.call_soon_threadsafe(_wake, chosen)
        self._clear_behind_light()
        self._preempt()

    def _clear_behind_light(self) -> None:
        """Note when each waiting unit stopped waiting behind light units that came before it: running, or waiting
        and not held back by their own client's limit (lock held)."""
        waiting = (w.seq for w in self._waiting if not w.client.heavy and w.client.running < w.client.limit)
        oldest_light = min(min(waiting, default=math.inf), min(self._light_running, default=math.inf))
        now = time.monotonic()
        for waiter in self._waiting:
            if waiter.clear_at is None and waiter.seq <= oldest_light:
                waiter.clear_at = now

    def _preempt_now(self) -> None:
        """``_preempt``, from a heavy turn that starts waiting for the baton (it may be the one to give way)."""
        with self._lock:
            self._preempt()

    def _preempt(self) -> None:
        """For each heavy unit waiting for a heavy thread, a running heavy turn that waits for the baton and whose
        client used more than ``PREEMPT_RATIO`` times its CPU gives its thread back (the most CPU first; called with
        the lock held)."""
        if self.heavy_busy < self.heavy_threads:
            return
        blocked = sorted(w.client.cpu_s for w in self._waiting if w.client.heavy and w.client.running < w.client.limit)
        waits = ((turn, turn.baton_wait) for turn in self._heavy_turns if not turn.preempted)
        victims = sorted(((wait, turn) for turn, wait in waits if wait is not None), reverse=True)
        for rank, (wait, victim) in zip(blocked[self._preempting:], victims):
            if wait.rank <= PREEMPT_RATIO * rank:
                return
            if HEAVY_BATON.withdraw(wait):
                victim.preempted = True
                self._preempting += 1

    def _leave(self, turn: Turn, cpu_s: float) -> None:
        with self._lock:
            self._heavy_turns.discard(turn)
            self._light_running.discard(turn.seq)
            self._preempting -= turn.preempted
            turn.client.running -= 1
            turn.client.cpu_s += cpu_s
            self.busy -= 1
            self.heavy_busy -= turn.heavy
            self._admit()

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            with self._lock:
                if self._executor is None:
                    self._executor = started_pool(self.threads, self.name)
        return self._executor

    def close(self) -> None:
        """Stop the worker threads (a unit running finishes first; a new ``run`` starts them again)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)


def _wake(waiter: _Waiter) -> None:
    if not waiter.future.done():
        waiter.future.set_result(None)


def started_pool(threads: int, name: str = "rlf-sql") -> ThreadPoolExecutor:
    """A pool whose ``threads`` workers all start now, not one by one as load first reaches them: a burst finds
    them ready, and the process's thread count does not creep up during a run (it is what a soak checks for
    leaks). Each worker's first task waits until every worker holds one, so the pool must start them all."""
    pool = ThreadPoolExecutor(threads, thread_name_prefix=name)
    everyone = threading.Barrier(threads)
    for _ in range(threads):
        pool.submit(everyone.wait, POOL_START_TIMEOUT_S)
    return pool
