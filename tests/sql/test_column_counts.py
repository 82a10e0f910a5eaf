"""A query's column count (which bounds the bytes of its rows) is learnt once per schema and text: files of one
schema share it, a file of another schema learns its own, so a count learnt on a narrow table never loosens the
row bound of the same text on a wide one."""

from __future__ import annotations

import sqlite3

import pytest

from rlfactory_tool_servers.sql.sandbox.column_counts import ColumnCounts, schema_digest
from rlfactory_tool_servers.sql.sandbox.engine import QueryError, ReadOnlyDatabase, ResultTooLarge

WIDE_BLOB = "SELECT *, zeroblob(999999) FROM t"  # 2 columns on a 1-column t: 1 MB values allowed; 101 columns: 39 KB


def table_file(path, columns: int):
    """A database whose table ``t`` has ``columns`` columns and one row."""
    conn = sqlite3.connect(path)
    names = [f"c{i}" for i in range(columns)]
    conn.execute(f"CREATE TABLE t ({', '.join(names)})")
    conn.execute(f"INSERT INTO t VALUES ({', '.join('1' * columns)})")
    conn.commit()
    conn.close()
    return path


def test_files_of_one_schema_prepare_the_wrapper_once(tmp_path):
    counts, prepared = ColumnCounts(), []
    conns = [sqlite3.connect(table_file(tmp_path / name, columns)) for name, columns in
             (("a.sqlite", 3), ("b.sqlite", 3), ("wide.sqlite", 7))]
    for conn in conns:
        conn.set_trace_callback(lambda statement: prepared.append(statement) if "LIMIT 0" in statement else None)
    assert [counts.count(conn, schema_digest(conn), "SELECT * FROM t;") for conn in conns] == [3, 3, 7]
    assert len(prepared) == 2 and len(counts) == 2  # a.sqlite's count served b.sqlite
    assert counts.count(conns[0], schema_digest(conns[0]), "SELECT nope FROM t") is None  # not kept
    assert len(counts) == 2


def test_a_count_learnt_on_a_narrow_table_does_not_loosen_a_wide_one(tmp_path):
    narrow = ReadOnlyDatabase(table_file(tmp_path / "narrow.sqlite", 1))
    wide = ReadOnlyDatabase(table_file(tmp_path / "wide.sqlite", 100))
    try:
        assert len(narrow.execute(WIDE_BLOB).rows) == 1
        for _ in range(2):
            with pytest.raises(ResultTooLarge, match="too big for a row"):
                wide.execute(WIDE_BLOB)
        assert len(narrow.execute(WIDE_BLOB).rows) == 1
    finally:
        narrow.close()
        wide.close()


def test_a_file_that_is_no_database_fails_as_a_query_error(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database " * 100)
    db = ReadOnlyDatabase(junk)
    try:
        with pytest.raises(QueryError, match="not a database"):  # its schema is read where errors are translated
            db.execute("SELECT 1")
    finally:
        db.close()
