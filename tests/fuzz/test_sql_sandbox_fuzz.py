"""The SQLite sandbox's query handling, fed any text: huge, deeply nested, multi-statement, PRAGMA, ATTACH, NUL
bytes, lone surrogates. Each query is refused or fails with a ``QueryError`` (never another exception), or answers
within the row and byte caps; the statement check raises only ``UnsafeQuery``; the database file never changes; the
SQL tool server's ``run_query`` answers every such text with a result capped at ``--max-chars``.

``tests/sql/test_sql_safety.py`` holds the hand-written attacks; this module fuzzes around them.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator

import anyio
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mcp import Client

from rlfactory_envs.sql.tasks import SAMPLE_DB_DIR
from rlfactory_tool_servers.sql import build_server
from rlfactory_tool_servers.sql.sandbox.engine import QueryError, QueryLimits, QueryResult, ReadOnlyDatabase
from rlfactory_tool_servers.sql.sandbox.statement_check import (UnsafeQuery, has_top_level_order_by,
                                                                   parse_read_query, without_distinct)
from tests.fuzz import FUZZ_EXAMPLES, any_char, wire_char

LIMITS = QueryLimits(timeout_s=0.5, max_rows=200, max_bytes=2_000_000)
MAX_CHARS = 4_000
"""The server's ``--max-chars`` (its default): the most characters of rows a result shows."""
MAX_MESSAGE_CHARS = MAX_CHARS + 1_000
"""A result's text: the rows shown, the line that says how many, or an error sentence."""

FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

SQL_WORDS = ("SELECT", "FROM", "WHERE", "books", "authors", "*", ",", "(", ")", ";", "--", "/*", "*/", "'", '"',
             "PRAGMA", "query_only", "writable_schema", "=", "0", "1", "ATTACH", "DATABASE", "':memory:'", "AS", "x",
             "DETACH", "main", "INSERT", "INTO", "UPDATE", "SET", "DELETE", "DROP", "TABLE", "CREATE", "TEMP",
             "WITH", "RECURSIVE", "UNION", "ALL", "ORDER", "BY", "DISTINCT", "LIMIT", "-1", "zeroblob(999999)",
             "randomblob(999999)", "printf('%.*c', 999999, 'x')", "hex(zeroblob(500000))", "load_extension('x')",
             "VACUUM", "BEGIN", "COMMIT", "\x00", "\ud800", "NULL", "9223372036854775808", "1e999", "?", ":name")

WIRE_WORDS = [word for word in SQL_WORDS if word != "\ud800"]
"""What an MCP client can send (it refuses to encode a lone surrogate)."""

sql_text = (st.lists(st.sampled_from(SQL_WORDS) | st.text(any_char, max_size=6), max_size=30).map(" ".join)
            | st.text(any_char, max_size=100))

HOSTILE_SQL = [
    "SELECT 1; SELECT 2",
    "SELECT 1;;;",
    "PRAGMA writable_schema = 1",
    "ATTACH DATABASE ':memory:' AS other",
    "SELECT * FROM pragma_table_info('books')",
    "SELECT " + "(" * 5_000 + "1" + ")" * 5_000,
    "SELECT " + " + ".join(["1"] * 20_000),
    "SELECT '" + "x" * 99_000 + "'",
    "SELECT '" + "x" * 200_000 + "'",
    "SELECT 1 " + "UNION ALL SELECT 1 " * 3_000,
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT zeroblob(999999) FROM c",
    "SELECT " + ", ".join(["zeroblob(999999)"] * 64),
    "SELECT " + ", ".join(["hex(zeroblob(400000))"] * 64),
    "SELECT * FROM books a, books b, books c, books d, books e, books f",
    "SELECT ?",
    "SELECT 1\x00; DROP TABLE books",
    "SELECT '\ud800'",
    "SELECT 9223372036854775808 * 9223372036854775808",
]


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> Iterator[tuple]:
    """A writable copy of the bookshop sample, opened by the sandbox (read-only), with the copy's digest."""
    directory = tmp_path_factory.mktemp("sandbox") / "bookshop"
    directory.mkdir()
    path = directory / "bookshop.sqlite"
    shutil.copy(SAMPLE_DB_DIR / "bookshop" / "bookshop.sqlite", path)
    db = ReadOnlyDatabase(path)
    yield path, db, hashlib.sha256(path.read_bytes()).hexdigest()
    db.close()


def check_query(database, sql: str) -> None:
    path, db, original = database
    for run in (lambda: db.execute(sql, LIMITS), lambda: db.run_trusted(sql, (), LIMITS)):
        try:
            result = run()
        except QueryError as exc:
            assert str(exc)
        else:
            assert isinstance(result, QueryResult) and len(result.rows) <= LIMITS.max_rows
    assert hashlib.sha256(path.read_bytes()).hexdigest() == original
    assert sorted(p.name for p in path.parent.iterdir()) == ["bookshop.sqlite"]


@FUZZ
@given(sql=sql_text)
def test_any_text_is_refused_or_answered_within_the_caps(database, sql):
    check_query(database, sql)


@pytest.mark.parametrize("sql", HOSTILE_SQL, ids=range(len(HOSTILE_SQL)))
def test_hostile_queries_are_refused_or_capped(database, sql):
    check_query(database, sql)


@FUZZ
@given(sql=sql_text)
@example(sql="SELECT " + "(" * 5_000 + "1" + ")" * 5_000)
@example(sql="SELECT DISTINCT " + "(" * 3_000 + "1" + ")" * 3_000)
@example(sql="x" * 100_001)
def test_the_statement_check_raises_only_its_own_error(sql):
    for check in (parse_read_query, has_top_level_order_by, without_distinct):
        try:
            check(sql)
        except UnsafeQuery as exc:
            assert str(exc)


async def run_queries(queries: list[str]) -> list:
    server = build_server(["--db-dir", str(SAMPLE_DB_DIR), "--timeout-s", "0.5", "--max-chars", str(MAX_CHARS)])
    async with Client(server) as client:
        return [await client.call_tool("run_query", {"db_id": "bookshop", "sql": sql}) for sql in queries]


@FUZZ
@given(queries=st.lists(st.lists(st.sampled_from(WIRE_WORDS) | st.text(wire_char, max_size=6), max_size=30)
                        .map(" ".join), min_size=1, max_size=8))
def test_run_query_answers_any_text_with_a_capped_result(queries):
    for result in anyio.run(run_queries, queries):
        assert sum(len(item.text) for item in result.content) <= MAX_MESSAGE_CHARS


def test_run_query_answers_hostile_queries_with_a_capped_result():
    sendable = [sql for sql in HOSTILE_SQL if "\ud800" not in sql]
    results = anyio.run(run_queries, sendable)
    for sql, result in zip(sendable, results):
        assert sum(len(item.text) for item in result.content) <= MAX_MESSAGE_CHARS, sql[:80]
    assert any(r.is_error and "at most 100,000" in r.content[0].text for r in results)
    assert any(not r.is_error and "result cut" in r.content[0].text for r in results)


@pytest.mark.parametrize("depth", [500, 700, 900])
def test_a_distinct_query_too_deep_to_write_again_is_refused(depth):
    """sqlglot's writer recurses deeper than its parser: a query parsed at this depth raised RecursionError when
    ``distinct="strip"`` wrote it again, and the reward counted a failure the policy could cause at will.
    (Hypothesis raises the recursion limit while it runs a test, so this is a plain test.)"""
    with pytest.raises(UnsafeQuery):
        without_distinct("SELECT DISTINCT " + "abs(" * depth + "1" + ")" * depth)
