"""Hostile SQL never changes a database: hand-written attacks and hypothesis-generated ones, through the statement
check and straight at the read-only connection (the second wall alone), with the file's hash checked after."""

from __future__ import annotations

import hashlib
import shutil
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlfactory_envs.sql.tasks import SAMPLE_DB_DIR
from rlfactory_reward_models.sql.execution import SqlExecutionReward
from rlfactory_tool_servers.sql.sandbox.catalog import DatabaseCatalog
from rlfactory_tool_servers.sql.sandbox.engine import QueryError, QueryLimits, QueryRefused, ReadOnlyDatabase
from rlfactory_tool_servers.sql.sandbox.statement_check import UnsafeQuery, parse_read_query

HOSTILE = [
    "DROP TABLE books",
    "DELETE FROM books",
    "UPDATE books SET price = 0",
    "INSERT INTO authors VALUES (99, 'x', 'y', 2000)",
    "REPLACE INTO authors VALUES (1, 'x', 'y', 2000)",
    "INSERT OR REPLACE INTO authors VALUES (1, 'x', 'y', 2000)",
    "CREATE TABLE evil (a)",
    "CREATE TEMP TABLE evil (a)",
    "CREATE INDEX evil ON books (price)",
    "CREATE VIEW evil AS SELECT 1",
    "CREATE TRIGGER evil AFTER INSERT ON books BEGIN DELETE FROM books; END",
    "ALTER TABLE books ADD COLUMN evil TEXT",
    "ALTER TABLE books RENAME TO evil",
    "PRAGMA query_only = 0",
    "PRAGMA journal_mode = WAL",
    "PRAGMA user_version = 7",
    "PRAGMA writable_schema = 1",
    "VACUUM",
    "VACUUM INTO '{tmp}/copy.sqlite'",
    "REINDEX",
    "ANALYZE",
    "ATTACH DATABASE '{tmp}/evil.sqlite' AS evil",
    "ATTACH DATABASE ':memory:' AS evil",
    "DETACH DATABASE main",
    "BEGIN",
    "BEGIN; DELETE FROM books; COMMIT",
    "SAVEPOINT s",
    "SELECT 1; DROP TABLE books",
    "SELECT load_extension('{tmp}/evil')",
    "SELECT writefile('{tmp}/evil.txt', 'x')",
    "WITH gone AS (DELETE FROM books RETURNING *) SELECT * FROM gone",
    "SELECT * FROM books; -- harmless comment",
    "/* comment */ DELETE FROM books",
    "SELECT zeroblob(2000000000)",
    "SELECT randomblob(2000000000)",
    "SELECT printf('%.*c', 2000000000, 'x')",
    "SELECT format('%.*c', (SELECT 2000000000), 'x')",
]

SAFE_ENOUGH = ["SELECT * FROM books; -- harmless comment"]  # one statement and a comment: a read
HARMLESS_NO_OPS = ["REINDEX"]  # sqlglot reads a lone word as a column: refused; the bare connection has nothing to do


@pytest.fixture
def writable_copy(tmp_path):
    """A writable copy of a sample database: only the connection's own guards keep it unchanged."""
    path = tmp_path / "bookshop" / "bookshop.sqlite"
    path.parent.mkdir()
    shutil.copy(SAMPLE_DB_DIR / "bookshop" / "bookshop.sqlite", path)
    return path


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(directory) -> list[str]:
    return sorted(p.name for p in directory.rglob("*"))


@pytest.mark.alone
@pytest.mark.parametrize("template", HOSTILE)
def test_hand_written_attacks_fail_at_both_walls_and_change_nothing(writable_copy, tmp_path, template):
    sql = template.format(tmp=tmp_path)
    before, files = digest(writable_copy), listing(tmp_path)
    db = ReadOnlyDatabase(writable_copy)
    limits = QueryLimits(timeout_s=2.0)
    try:
        if template in SAFE_ENOUGH:
            assert db.execute(sql, limits).rows
        elif template in HARMLESS_NO_OPS:
            with pytest.raises(QueryRefused):
                db.execute(sql, limits)
            assert db.run_trusted(sql, (), limits).rows == []
        elif "printf(" in template or "format(" in template:
            started = time.monotonic()
            assert db.execute(sql, limits).rows == [(None,)]  # bounded: NULL at once, not seconds in one call
            assert time.monotonic() - started < 1.0
        else:
            with pytest.raises(QueryError):
                db.execute(sql, limits)  # the statement check and the connection
            with pytest.raises(QueryError):
                db.run_trusted(sql, (), limits)  # the connection alone: mode=ro, query_only, authorizer, limits
    finally:
        db.close()
    assert digest(writable_copy) == before
    assert listing(tmp_path) == files, "a file was created"


def test_the_statement_check_names_what_it_refused():
    for sql, words in [("DROP TABLE t", "DROP"),
                       ("SELECT 1; SELECT 2", "exactly one statement is allowed per query, got 2"),
                       ("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "only reads")]:
        with pytest.raises(UnsafeQuery, match=words):
            parse_read_query(sql)
    assert parse_read_query("WITH a AS (SELECT 1 AS x) SELECT x FROM a UNION SELECT 2") is not None
    assert parse_read_query("SELECT 1; -- a trailing comment is no statement") is not None


def test_printf_still_works_within_bounds(writable_copy):
    db = ReadOnlyDatabase(writable_copy)
    try:
        sql = "SELECT printf('%05.1f|%-3s|%d%%|%.*c', 2.25, 'ab', 7, 3, 'z'), format('%s', 1)"
        rows = db.execute(sql).rows
        assert rows == [("002.2|ab |7%|zzz", "1")] or rows == [("002.3|ab |7%|zzz", "1")]
    finally:
        db.close()


def test_an_authorizer_refusal_reads_as_a_refusal(writable_copy):
    db = ReadOnlyDatabase(writable_copy)
    try:
        with pytest.raises(QueryRefused, match="only reads are allowed"):
            db.run_trusted("DELETE FROM books")
    finally:
        db.close()


_KEYWORDS = st.sampled_from(["SELECT", "DELETE", "DROP", "TABLE", "books", "authors", "FROM", "WHERE", ";", "--",
                             "/*", "*/", "PRAGMA", "query_only", "=", "0", "1", "ATTACH", "'x.db'", "AS", "INSERT",
                             "INTO", "VALUES", "(", ")", "UPDATE", "SET", "price", "WITH", "RETURNING", "*",
                             "CREATE", "VACUUM", "INTO", "BEGIN", "COMMIT", "load_extension", "'", '"', ","])
_ATTACKS = st.one_of(
    st.lists(_KEYWORDS, min_size=1, max_size=14).map(" ".join),
    st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=3).map("; ".join),
    st.tuples(st.sampled_from(["SELECT 1", "SELECT * FROM books"]), st.sampled_from(HOSTILE)).map("; ".join),
    st.text(max_size=80),
)


@pytest.fixture(scope="module")
def fuzz_target(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fuzz")
    (directory / "bookshop").mkdir()
    path = directory / "bookshop" / "bookshop.sqlite"
    shutil.copy(SAMPLE_DB_DIR / "bookshop" / "bookshop.sqlite", path)
    catalog = DatabaseCatalog(directory, threads=2)
    reward = SqlExecutionReward(catalog, timeout_s=0.5)
    yield path, catalog.get("bookshop"), reward, digest(path)
    catalog.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sql=_ATTACKS)
def test_generated_attacks_never_change_the_file(fuzz_target, sql):
    path, db, reward, original = fuzz_target
    sql = sql.replace("{tmp}", str(path.parent))
    limits = QueryLimits(timeout_s=0.5)
    for run in (lambda: db.execute(sql, limits), lambda: db.run_trusted(sql, (), limits)):
        try:
            run()
        except QueryError:
            pass
    result = reward.verify("bookshop", "SELECT count(*) FROM books", sql)
    assert result.value in (0.0, 1.0) and (result.value == 1.0 or result.reason)
    assert digest(path) == original
    assert sorted(p.name for p in path.parent.iterdir()) == ["bookshop.sqlite"]


SLOW_IN_ONE_CALL = [
    # each of these spent seconds to hours inside one SQLite function call, where no deadline can stop it
    "SELECT printf(CAST('%.2000000000c' AS BLOB), 'x')",  # a blob format escaped the width check
    "SELECT printf(replace(hex(zeroblob(200000)), '00', '%.99999c'), 'x')",  # many specs, each under the cap
    "SELECT printf('%n%.*c', 2000000000, 'x')",  # %n takes no argument: the check read the wrong one
    "SELECT printf('%.c%.*c', 'x', '2000000000 junk', 'y')",  # '%.c' was no spec to the check
    "SELECT instr(hex(zeroblob(4000000)) || '1', hex(zeroblob(2000000)) || '1')",
    "SELECT replace(hex(zeroblob(4000000)) || '1', hex(zeroblob(2000000)) || '1', '')",
    "SELECT trim(hex(zeroblob(100000)), replace(hex(zeroblob(50000)), '0', '1') || '0')",
    "SELECT hex(zeroblob(7000000)) || 'b' LIKE '%' || hex(zeroblob(24990)) || 'a%'",
    "SELECT hex(zeroblob(7000000)) || 'b' GLOB '*' || hex(zeroblob(24990)) || 'a*'",
    # a merge of two 60,000-key objects: 24 s in one call (a hostile review's find)
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 60000) "
    "SELECT length(json_patch((SELECT json_group_object('a' || i, 0) FROM r), "
    "(SELECT json_group_object('b' || i, 0) FROM r)))",
]


@pytest.mark.alone
@pytest.mark.parametrize("sql", SLOW_IN_ONE_CALL)
def test_functions_whose_one_call_could_run_for_minutes_stay_within_the_deadline(writable_copy, sql):
    db = ReadOnlyDatabase(writable_copy)
    try:
        started = time.monotonic()
        try:
            assert db.execute(sql, QueryLimits(timeout_s=0.5)).rows in ([(None,)], [(0,)])
        except QueryError:
            pass
        assert time.monotonic() - started < 1.5
    finally:
        db.close()


def test_guarded_functions_keep_sqlite_semantics(writable_copy):
    db = ReadOnlyDatabase(writable_copy)
    try:
        sql = ("SELECT instr('héllo wörld', 'wö'), instr('abc', ''), instr(NULL, 'a'), instr(x'0102', x'02'), "
               "replace('a,b,c', ',', ''), replace(123, 2, 9), trim('  x '), ltrim('xxay', 'x'), rtrim(12300, 0), "
               "printf('%5.2f|%.*s', 3.14159, 2, 'abcdef'), 'abc' LIKE 'A%', 'abc' GLOB 'a*', "
               "json_patch('{\"a\":1,\"b\":2}', '{\"b\":null,\"c\":3}')")
        assert db.execute(sql).rows == [(7, 1, None, 2, "abc", "193", "x", "ay", "123", " 3.14|ab", 1, 1,
                                         '{"a":1,"c":3}')]
    finally:
        db.close()


def test_the_byte_limit_holds_while_fetching(writable_copy):
    """Rows were fetched 256 at a time before the byte limit was checked: 256 rows of large blobs."""
    db = ReadOnlyDatabase(writable_copy)
    sql = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 300) "
           "SELECT zeroblob(1000000) FROM c")
    tracemalloc.start()
    try:
        result = db.execute(sql, QueryLimits(timeout_s=5.0, max_bytes=5_000_000))
        peak = tracemalloc.get_traced_memory()[1]
        assert result.truncated and len(result.rows) == 4  # each blob counts its 33-byte object header too
        assert peak < 15_000_000, f"{peak:,} bytes held for a 5 MB limit"
    finally:
        tracemalloc.stop()
        db.close()


def test_one_row_is_bounded_by_the_value_and_column_caps(writable_copy):
    """60 columns of 15 MB blobs made one 900 MB row before values were capped at 1 MB and results at 512
    columns."""
    db = ReadOnlyDatabase(writable_copy)
    try:
        with pytest.raises(QueryError, match="too big"):
            db.execute("SELECT zeroblob(1000001)")
        wide = "SELECT " + ", ".join(f"{i} AS c{i}" for i in range(600))
        with pytest.raises(QueryError, match="too many columns"):
            db.execute(wide)
        assert len(db.execute("SELECT " + ", ".join(str(i) for i in range(200))).columns) == 200
    finally:
        db.close()
