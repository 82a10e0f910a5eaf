"""Read-only SQLite execution with a deadline and size limits, from a pool of connections per database.

Every connection of a ``ReadOnlyDatabase``:

- opens the file with ``mode=ro`` (SQLite never writes to it, whatever runs) and sets ``PRAGMA query_only``;
- has an authorizer that allows reads, SELECT, functions (not ``load_extension``), recursive CTEs and the
  schema pragmas the server uses itself (``table_info``, ``foreign_key_list``, ...), and denies everything else:
  writes, ATTACH, transactions, pragma writes, temp tables;
- may attach no database (``SQLITE_LIMIT_ATTACHED = 0``), caps the length of one value (``MAX_VALUE_BYTES``),
  the columns of a result (``MAX_COLUMNS``) and the length of the SQL text;
- bounds the bytes of one row before SQLite builds it: a model's query is first prepared with ``LIMIT 0`` to learn
  its column count (once per schema and text: ``column_counts``), and the length limit of every value (intermediate
  ones too) becomes ``MAX_ROW_BYTES`` divided by that count (at least ``MIN_VALUE_BYTES``, at most
  ``MAX_VALUE_BYTES``), so 512 columns of ``zeroblob(999999)`` fail with ``ResultTooLarge`` instead of allocating
  512 MB; a query of up to four columns keeps the full ``MAX_VALUE_BYTES`` per value;
- counts the bytes of a result as Python holds them (``sys.getsizeof``: a short value is a 50-byte object, not its
  length, and a text with one 4-byte character holds 4 bytes for each of its characters), so ``max_bytes`` bounds
  the memory of wide results of small values and of wide characters too;
- checks a deadline from a progress handler every ``PROGRESS_OPCODES`` virtual-machine steps, so a cartesian join
  or an endless recursive CTE stops in time; rows are fetched one at a time, the deadline and the byte limit checked
  after each, so neither is overshot by more than one row (at most ``MAX_ROW_BYTES`` for a model's query);
- has a watchdog thread call ``Connection.interrupt()`` on a query still running ``INTERRUPT_GRACE_S`` after its
  deadline (what the progress handler cannot see: one long opcode); a caller that queued the query passes
  ``not_after``, so time spent waiting for a worker counts against the deadline;
- checks in with its ``fair_pool.Turn`` (when the caller runs it in a ``FairPool``) from the progress handler and
  after every row fetched: a light turn past its CPU slice stops with ``SliceSpent`` (its work goes on as heavy),
  a heavy one stands aside while light work runs;
- replaces ``printf``/``format`` by a bounded version: SQLite 3.40's ``%c`` with a huge precision loops for
  seconds inside one call, where no deadline can stop it; a width or precision over ``MAX_PRINTF_WIDTH``, or
  widths and precisions adding up to more than ``MAX_VALUE_BYTES``, give NULL (what SQLite gives for a result
  over its length limit), whether the format is text or a blob;
- guards the functions whose work inside one call grows with the product of their arguments' lengths
  (``instr``, ``replace``, ``trim``/``ltrim``/``rtrim``, ``json_patch``: a 200 KB ``trim`` runs for 40 s, a 16 MB
  ``instr`` for hours, a ``json_patch`` of two 60,000-key objects for 24 s, and no deadline can stop one call): over
  ``MAX_QUADRATIC_WORK`` they fail, below it SQLite computes them (``json_patch``'s result then reads as text, not
  JSON, inside another JSON function: ``json(json_patch(...))`` keeps it JSON);
  LIKE/GLOB patterns are capped at ``MAX_LIKE_PATTERN`` characters for the same reason, and a function call at
  ``MAX_FUNCTION_ARGS`` arguments;
- decodes text as the official Spider evaluator does (UTF-8, undecodable bytes dropped).

``execute`` is blocking and thread-safe: run it from worker threads (``DatabaseCatalog.run``) so an event loop is
never blocked. Query text from a model goes through ``statement_check.parse_read_query`` first: exactly one
read-only statement (a caller that checked it already, once for many databases, says ``checked=True``); a heavy
turn reads it holding the CPU baton (``check_statement``).
"""

from __future__ import annotations

import math
import queue
import re
import sqlite3
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlfactory_tool_servers.sql.sandbox.column_counts import ColumnCounts, schema_digest
from rlfactory_tool_servers.sql.sandbox.fair_pool import PythonStopped, SliceSpent, Turn
from rlfactory_tool_servers.sql.sandbox.query_errors import (
    QueryError, QueryFailed, QueryRefused, QueryTimeout, ResultOverLimits, ResultTooLarge)
from rlfactory_tool_servers.sql.sandbox.statement_check import MAX_SQL_CHARS, UnsafeQuery, parse_read_query

__all__ = ["QueryError", "QueryFailed", "QueryLimits", "QueryRefused", "QueryResult", "QueryTimeout",
           "ReadOnlyDatabase", "ResultOverLimits", "ResultTooLarge", "SliceSpent", "check_statement",
           "forget_column_counts", "value_limit"]

PROGRESS_OPCODES = 20_000  # ~0.1-1 ms of work between deadline checks
MAX_VALUE_BYTES = 1_000_000  # Spider/BIRD values are far shorter; one row holds at most MAX_COLUMNS of them
MAX_COLUMNS = 512  # in a result, a table or an index (BIRD's widest table has 115 columns)
MAX_ROW_BYTES = 4_000_000  # the values of one row of a model's query, together
MIN_VALUE_BYTES = 4096  # the per-value limit never goes below this, whatever the column count
INTERRUPT_GRACE_S = 0.05  # past its deadline, a query the progress handler did not stop is interrupted
_INTERNAL_PRAGMAS = frozenset({"table_info", "table_xinfo", "foreign_key_list", "index_list", "index_info",
                               "index_xinfo"})
_FORBIDDEN_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
_ALLOWED_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
                              getattr(sqlite3, "SQLITE_RECURSIVE", 33)})


MAX_PRINTF_WIDTH = 100_000
MAX_QUADRATIC_WORK = 50_000_000  # length x length: ~0.1 s of SQLite's trim, far less of instr/replace
MAX_LIKE_PATTERN = 100  # LIKE/GLOB work grows with value length x pattern length
MAX_FUNCTION_ARGS = 32  # printf's arguments become Python objects: at most 32 x MAX_VALUE_BYTES
_PRINTF_SPEC_RE = re.compile(r"%[-+ 0#,!]*(\*|\d+)?(?:\.(\*|\d*))?")
_LEADING_INT_RE = re.compile(rb"^\s*[-+]?\d+")
_QUADRATIC_FUNCTIONS = ("instr", "replace", "trim", "ltrim", "rtrim", "json_patch")
_helper = threading.local()


def _helper_connection() -> sqlite3.Connection:
    """This thread's in-memory connection that computes the guarded functions with SQLite's own code, under the
    same value-length limit as the databases."""
    conn = getattr(_helper, "conn", None)
    if conn is None:
        conn = _helper.conn = sqlite3.connect(":memory:")
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.text_factory = _decode_text
    return conn


def _as_width(value: Any) -> int:
    """The largest magnitude SQLite might read from ``value`` as a printf ``*`` width or precision (its 64-bit
    integer, or that integer cut to 32 bits), leaning high."""
    if isinstance(value, (int, float)):
        candidates = [value]
    elif isinstance(value, (str, bytes)):
        raw = value.encode("utf-8", "replace") if isinstance(value, str) else value
        candidates = []
        prefix = _LEADING_INT_RE.match(raw[:64])
        if prefix:
            candidates.append(int(prefix.group()))
        try:
            candidates.append(float(raw[:64]))
        except ValueError:
            pass
    else:
        return 0
    widest = 0
    for number in candidates:
        try:
            whole = int(number)
        except (OverflowError, ValueError):  # inf, nan
            return MAX_VALUE_BYTES + 1
        wrapped = ((whole + 2**31) % 2**32) - 2**31
        widest = max(widest, abs(whole), abs(wrapped))
    return widest


def bounded_printf(fmt: Any, *args: Any) -> Any:
    """SQLite's ``printf(FORMAT, ...)``, computed by SQLite itself, unless the arguments' lengths add up to more
    than ``MAX_VALUE_BYTES``, a width or precision (literal or ``*``) exceeds ``MAX_PRINTF_WIDTH``, or the widths
    and precisions together exceed ``MAX_VALUE_BYTES``: then NULL. A format given as a blob is read as text, as
    SQLite reads it. When the format has a ``*``, every argument counts as a possible width (no guessing which
    argument SQLite takes)."""
    if sum(_work_size(arg) for arg in args) > MAX_VALUE_BYTES:
        return None  # a result over SQLite's length limit
    text = fmt.decode("utf-8", "replace") if isinstance(fmt, bytes) else fmt
    if isinstance(text, str) and "%" in text:
        total, stars = 0, 0
        for width, precision in _PRINTF_SPEC_RE.findall(text):
            for part in (width, precision):
                if part == "*":
                    stars += 1
                elif part:
                    if len(part) > 9 or int(part) > MAX_PRINTF_WIDTH:
                        return None
                    total += int(part)
        if stars:
            widest = max((_as_width(arg) for arg in args), default=0)
            if widest > MAX_PRINTF_WIDTH:
                return None
            total += stars * widest
        if total > MAX_VALUE_BYTES:
            return None
    placeholders = ", ".join("?" * (len(args) + 1))
    return _helper_connection().execute(f"SELECT printf({placeholders})", (fmt, *args)).fetchone()[0]


def _work_size(value: Any) -> int:
    return len(value) if isinstance(value, (str, bytes)) else 32


def _guarded(name: str):
    """SQLite's ``name`` computed by SQLite itself, refused (an error, so the query fails) when the length of its
    first argument times the length of its second exceeds ``MAX_QUADRATIC_WORK``."""

    def call(*args: Any) -> Any:
        if len(args) >= 2 and _work_size(args[0]) * _work_size(args[1]) > MAX_QUADRATIC_WORK:
            raise ValueError(f"{name}() on values this long would take too long")
        placeholders = ", ".join("?" * len(args))
        return _helper_connection().execute(f"SELECT {name}({placeholders})", args).fetchone()[0]

    call.__name__ = f"bounded_{name}"
    return call


_GUARDED = {name: _guarded(name) for name in _QUADRATIC_FUNCTIONS}


@dataclass(frozen=True)
class QueryLimits:
    """Bounds on one query: wall-clock deadline, rows and bytes of the values fetched, as Python holds them."""

    timeout_s: float = 5.0
    max_rows: int = 100_000
    max_bytes: int = 64_000_000

    def __post_init__(self) -> None:
        if not (self.timeout_s > 0 and self.max_rows >= 0 and self.max_bytes > 0):
            raise ValueError(f"invalid query limits: {self}")


@dataclass(frozen=True)
class QueryResult:
    """Column names and rows (tuples of Python values); ``truncated`` when more rows existed than were kept;
    ``nbytes``: what the rows hold in Python, as the byte limit counts it."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    truncated: bool
    seconds: float
    nbytes: int = 0


def _authorize(action: int, arg1: str | None, arg2: str | None, db_name: str | None, source: str | None) -> int:
    if action in _ALLOWED_ACTIONS:
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _FORBIDDEN_FUNCTIONS:
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in _INTERNAL_PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def _decode_text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="ignore")


def check_statement(sql: str, turn: Turn | None, until: float) -> None:
    """``parse_read_query(sql)`` as part of a query's work: a heavy ``turn`` takes the CPU baton before the parse,
    which then checks in like its query (rests while light work runs, stops at ``until``, a ``time.monotonic()``
    instant), so long texts are read one at a time, not on every thread at once. Raises ``QueryRefused``,
    ``QueryTimeout`` or ``SliceSpent``."""
    try:
        if turn is None or not turn.heavy:
            parse_read_query(sql)
            return
        if turn.checkpoint(until):
            raise PythonStopped()
        with turn.checking_python(until):
            parse_read_query(sql)
    except UnsafeQuery as exc:
        raise QueryRefused(str(exc)) from None
    except PythonStopped:
        if turn is not None and turn.spent:
            raise SliceSpent() from None
        raise QueryTimeout("the query could not be read before its deadline and was not run") from None


class _Deadline:
    """The progress handler: asks SQLite to stop once ``monotonic()`` passes ``at``, or when the query's ``turn``
    says so (a light turn past its slice, a turn past its client's CPU budget; a heavy one rests first while light
    work runs, and waits for its turn on the CPU)."""

    __slots__ = ("at", "turn")

    def __init__(self) -> None:
        self.at = math.inf
        self.turn: Turn | None = None

    def __call__(self) -> int:
        at = self.at
        if time.monotonic() > at:
            return 1
        turn = self.turn
        return 1 if turn is not None and turn.checkpoint(at) else 0


class _Watchdog:
    """One daemon thread that interrupts the connections whose query runs past its deadline plus
    ``INTERRUPT_GRACE_S``. ``watch`` and ``unwatch`` bracket one query; an interrupt happens under the lock that
    ``unwatch`` takes, so it never reaches the next query of the same connection."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: dict[int, tuple[sqlite3.Connection, _Deadline]] = {}
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, conn: sqlite3.Connection, deadline: _Deadline) -> None:
        with self._lock:
            self._watched[id(conn)] = (conn, deadline)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="rlf-sql-watchdog", daemon=True)
                self._thread.start()
        if not self._wake.is_set():  # cleared only while nothing is watched, and this connection is, until unwatch
            self._wake.set()

    def unwatch(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            self._watched.pop(id(conn), None)

    def _loop(self) -> None:
        while True:
            self._wake.wait()
            time.sleep(INTERRUPT_GRACE_S / 2)
            now = time.monotonic()
            with self._lock:
                if not self._watched:
                    self._wake.clear()
                for conn, deadline in self._watched.values():
                    if now > deadline.at + INTERRUPT_GRACE_S:
                        conn.interrupt()


_watchdog = _Watchdog()
_column_counts = ColumnCounts()


def forget_column_counts() -> None:
    """Forget every column count learnt (a benchmark's cold start)."""
    global _column_counts
    _column_counts = ColumnCounts()


def value_limit(columns: int) -> int:
    """The length limit of one value in a result of ``columns`` columns: their row holds ``MAX_ROW_BYTES``."""
    return max(MIN_VALUE_BYTES, min(MAX_VALUE_BYTES, MAX_ROW_BYTES // max(columns, 1)))


SMALL_OBJECT_BYTES = 64  # a short str or bytes object in Python, with its slot in the row
NUMBER_BYTES = 32  # an int or a float object with its slot
_getsizeof = sys.getsizeof


def _row_bytes(row: tuple[Any, ...]) -> int:
    """What ``row`` holds in Python, about: a text or blob its size as an object (``sys.getsizeof``: a text of one
    4-byte character among ASCII ones holds 4 bytes a character), at least ``SMALL_OBJECT_BYTES`` (so 512 short
    values count 32 KB, not 2 KB), a number ``NUMBER_BYTES``, NULL a slot."""
    size = 0
    for value in row:  # a loop, not sum() over a generator: half the time, on every row fetched
        if isinstance(value, (str, bytes)):
            held = _getsizeof(value)
            size += held if held > SMALL_OBJECT_BYTES else SMALL_OBJECT_BYTES
        else:
            size += 8 if value is None else NUMBER_BYTES
    return size


class ReadOnlyDatabase:
    """One SQLite file, opened read-only, with up to ``pool_size`` connections (opened on demand, reused).

    ``FileNotFoundError`` when the file does not exist. ``close`` closes the idle connections."""

    def __init__(self, path: str | Path, db_id: str | None = None, pool_size: int = 8):
        self.path = Path(path).resolve()
        if not self.path.is_file():
            raise FileNotFoundError(f"no SQLite database at {self.path}")
        if pool_size < 1:
            raise ValueError("pool_size must be at least 1")
        self.db_id = db_id or self.path.stem
        self._uri = f"{self.path.as_uri()}?mode=ro"
        self._idle: queue.SimpleQueue[tuple[sqlite3.Connection, _Deadline]] = queue.SimpleQueue()
        self._slots = threading.BoundedSemaphore(pool_size)
        self._closed = False
        self._schema = b""  # its schema's digest, read by the first query whose rows are bounded

    # -- connections -----------------------------------------------------------------------------------------

    def _connect(self) -> tuple[sqlite3.Connection, _Deadline]:
        conn = sqlite3.connect(self._uri, uri=True, check_same_thread=False, isolation_level=None)
        try:
            conn.execute("PRAGMA query_only = ON")
            conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
            conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
            conn.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, MAX_COLUMNS)
            conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_CHARS * 4)
            conn.text_factory = _decode_text
            conn.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, MAX_LIKE_PATTERN)
            conn.setlimit(sqlite3.SQLITE_LIMIT_FUNCTION_ARG, MAX_FUNCTION_ARGS)  # a Python copy of each argument
            for name in ("printf", "format"):
                conn.create_function(name, -1, bounded_printf, deterministic=True)
            for name, function in _GUARDED.items():
                conn.create_function(name, -1, function, deterministic=True)
            conn.set_authorizer(_authorize)
            deadline = _Deadline()
            conn.set_progress_handler(deadline, PROGRESS_OPCODES)
        except BaseException:
            conn.close()
            raise
        return conn, deadline

    def _acquire(self) -> tuple[sqlite3.Connection, _Deadline]:
        if self._closed:
            raise QueryFailed(f"the database {self.db_id!r} is closed")
        self._slots.acquire()
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            try:
                return self._connect()
            except BaseException:
                self._slots.release()
                raise

    def _release(self, entry: tuple[sqlite3.Connection, _Deadline]) -> None:
        if self._closed:
            entry[0].close()
        else:
            self._idle.put(entry)
        self._slots.release()

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                conn, _ = self._idle.get_nowait()
            except queue.Empty:
                return
            conn.close()

    # -- queries ---------------------------------------------------------------------------------------------

    def execute(self, sql: str, limits: QueryLimits = QueryLimits(), *, truncate: bool = True,
                not_after: float | None = None, turn: Turn | None = None, checked: bool = False) -> QueryResult:
        """Run one untrusted read query. Over ``limits.max_rows``/``max_bytes``: the rows so far with
        ``truncated=True``, or ``ResultTooLarge`` when ``truncate`` is false; a row over ``MAX_ROW_BYTES``:
        ``ResultTooLarge`` before it is built. ``not_after`` (a ``time.monotonic()`` instant, e.g. when the query
        was queued plus its timeout) ends the query earlier than ``limits.timeout_s`` would; ``turn``: the
        ``FairPool`` turn it runs in; ``checked``: ``parse_read_query`` passed already. Raises a ``QueryError``
        (refused, timeout, error, too_large) rather than anything else, or ``SliceSpent``."""
        if not checked:
            check_statement(sql, turn, time.monotonic() + limits.timeout_s if not_after is None else not_after)
        return self.run_trusted(sql, (), limits, truncate=truncate, not_after=not_after, bound_rows=True, turn=turn)

    def run_trusted(self, sql: str, params: tuple[Any, ...] = (), limits: QueryLimits = QueryLimits(), *,
                    truncate: bool = True, not_after: float | None = None, bound_rows: bool = False,
                    turn: Turn | None = None) -> QueryResult:
        """Run SQL the caller wrote itself (schema look-ups): no statement check, the same connection guards;
        ``bound_rows`` bounds the bytes of a row as ``execute`` does."""
        started = time.monotonic()
        at = started + limits.timeout_s if not_after is None else min(started + limits.timeout_s, not_after)
        if at <= started:
            raise QueryTimeout("the deadline passed before the query could start (waiting for a worker, or the "
                               "caller's earlier work, took it) and it was not run")
        entry = self._acquire()
        conn, deadline = entry
        deadline.at = at
        deadline.turn = turn
        _watchdog.watch(conn, deadline)
        cursor = None
        narrowed = 0
        try:
            if bound_rows:
                narrowed = self._bound_row_bytes(conn, sql, params)
            cursor = conn.execute(sql, params)
            return self._fetch(cursor, deadline, limits, truncate, started)
        except QueryError:
            raise
        except sqlite3.Error as exc:
            if turn is not None and turn.spent:
                raise SliceSpent() from None
            raise self._translate(exc, limits, narrowed) from None
        except (OverflowError, MemoryError, ValueError) as exc:  # e.g. an integer parameter out of range
            raise QueryFailed(f"{type(exc).__name__}: {exc}") from None
        finally:
            deadline.at = math.inf
            deadline.turn = None
            if cursor is not None:
                try:
                    cursor.close()
                except sqlite3.Error:
                    pass
            _watchdog.unwatch(conn)
            if narrowed:
                conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
            self._release(entry)

    def _bound_row_bytes(self, conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> int:
        """Lower the connection's value-length limit to ``value_limit`` of the query's column count
        (``column_counts``: learnt by preparing it under ``LIMIT 0``, once per schema and text); the lowered limit,
        or 0 when it stays ``MAX_VALUE_BYTES``. A query that cannot be wrapped so gets the limit of ``MAX_COLUMNS``
        columns."""
        self._schema = self._schema or schema_digest(conn)  # here, where an unreadable file gives a QueryError
        columns = _column_counts.count(conn, self._schema, sql, params)
        limit = value_limit(MAX_COLUMNS if columns is None else columns)
        if limit >= MAX_VALUE_BYTES:
            return 0
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limit)
        return limit

    @staticmethod
    def _fetch(cursor: sqlite3.Cursor, deadline: _Deadline, limits: QueryLimits, truncate: bool,
               started: float) -> QueryResult:
        columns = tuple(d[0] for d in cursor.description or ())
        rows: list[tuple[Any, ...]] = []
        size, over = 0, False
        turn, max_rows, max_bytes, until = deadline.turn, limits.max_rows, limits.max_bytes, deadline.at
        for row in cursor:  # one row at a time: a chunk of rows of 16 MB values would be gigabytes
            if turn is not None and turn.checkpoint(until):  # making Python values is no SQLite step
                if turn.spent:
                    raise SliceSpent()
                raise QueryTimeout(f"the query ran longer than {limits.timeout_s:g} s and was stopped")
            if time.monotonic() > until:
                raise QueryTimeout(f"the query ran longer than {limits.timeout_s:g} s and was stopped")
            row_size = _row_bytes(row)
            if len(rows) >= max_rows or size + row_size > max_bytes:
                over = True
                break
            size += row_size
            rows.append(row)
        if over and not truncate:
            raise ResultOverLimits(f"the result has more than {limits.max_rows:,} rows or "
                                 f"{limits.max_bytes:,} bytes")
        return QueryResult(columns, rows, over, time.monotonic() - started, size)

    @staticmethod
    def _translate(exc: sqlite3.Error, limits: QueryLimits, narrowed: int = 0) -> QueryError:
        message = str(exc) or type(exc).__name__
        lowered = message.lower()
        if narrowed and "too big" in lowered:
            return ResultTooLarge(f"a value is too big for a row of this result: with this many columns one value "
                                  f"may hold {narrowed:,} bytes (a row {MAX_ROW_BYTES:,}); select fewer or shorter "
                                  "columns")
        if "interrupted" in lowered:
            return QueryTimeout(f"the query ran longer than {limits.timeout_s:g} s and was stopped")
        if "not authorized" in lowered or "readonly" in lowered or "read-only" in lowered or "prohibited" in lowered:
            return QueryRefused(f"the database refused the query ({message}); only reads are allowed")
        if isinstance(exc, sqlite3.ProgrammingError) and "one statement" in lowered:
            return QueryRefused("exactly one statement is allowed per query")
        return QueryFailed(message)
