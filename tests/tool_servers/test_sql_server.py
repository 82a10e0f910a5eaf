"""The SQL tool server: its tools through a real MCP client, the batched forms, the deadline that stops a
cartesian join while other calls are answered, and the server as a real stdio subprocess."""

from __future__ import annotations

import sys
import time

import anyio
import pytest
from mcp import Client, StdioServerParameters

from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.tool_call import ToolCall
from rlfactory_envs.sql.env import sql_server_config
from rlfactory_envs.sql.tasks import SAMPLE_DB_DIR
from rlfactory_tool_servers.wire import BATCH_OF, SHOW_BATCH_FORMS
from rlfactory_tool_servers.sql import build_server
from rlfactory_tool_servers.sql.formatting import format_rows
from rlfactory_tool_servers.sql.server import SqlLimits, SqlTools, create_server
from rlfactory_tool_servers.sql.sandbox.catalog import DatabaseCatalog, find_databases
from tests.conftest import REPO_ROOT, shared_file


def sample_server(**limits):
    return create_server(SqlTools(DatabaseCatalog(SAMPLE_DB_DIR, threads=4), SqlLimits(**limits)))


def text(result) -> str:
    return result.content[0].text


async def test_tools_and_their_batched_forms_are_listed():
    async with Client(sample_server()) as client:
        tools = {tool.name: tool for tool in (await client.list_tools(meta={SHOW_BATCH_FORMS: True})).tools}
    assert set(tools) == {"list_tables", "describe_table", "run_query", "list_tables_batch", "describe_table_batch",
                          "run_query_batch"}
    assert tools["run_query_batch"].meta == {BATCH_OF: "run_query"}
    assert tools["run_query"].input_schema["required"] == ["db_id", "sql"]
    assert "read-only" in tools["run_query"].description and "50 rows" in tools["run_query"].description


async def test_explore_a_database():
    async with Client(sample_server()) as client:
        tables = text(await client.call_tool("list_tables", {"db_id": "bookshop"}))
        described = text(await client.call_tool("describe_table", {"db_id": "bookshop", "table": "BOOKS"}))
        rows = text(await client.call_tool("run_query", {"db_id": "bookshop",
                                                         "sql": "SELECT name, birth_year FROM authors WHERE "
                                                                "author_id <= 2 ORDER BY author_id"}))
    assert tables.splitlines() == [
        "Database bookshop has 3 tables:",
        "authors (7 rows): author_id, name, country, birth_year",
        "books (24 rows): book_id, title, author_id, genre, year, price, pages",
        "sales (60 rows): sale_id, book_id, store, quantity, sale_date",
    ]
    assert "  book_id INTEGER (primary key)" in described and "  title TEXT (not null)" in described
    assert "  author_id -> authors.author_id" in described and "Sample rows (up to 3):" in described
    assert rows == "name | birth_year\nIdris Mallet | 1938\nTalia Verro | 1951\n(2 rows)"


async def test_results_are_capped_in_rows_and_characters_with_a_note():
    async with Client(sample_server(max_rows=5, max_chars=200)) as client:
        many = text(await client.call_tool("run_query", {"db_id": "tramways", "sql": "SELECT * FROM ridership"}))
        wide = text(await client.call_tool("run_query", {"db_id": "bookshop",
                                                         "sql": "SELECT title || title || title FROM books"}))
    assert len(many.splitlines()) == 1 + 5 + 1 and "showing the first 5 of 5+ rows" in many
    assert len(wide) <= 200 + 120 and "result cut" in wide


def test_cells_are_one_line_and_nulls_are_named():
    table = format_rows(["a", "b"], [(None, "x\ny|z"), (1.5, b"\x00\x01")], more=False, max_rows=10, max_chars=999)
    assert table.splitlines() == ["a | b", "NULL | x\\ny\\|z", "1.5 | <blob 2 bytes>", "(2 rows)"]


@pytest.mark.parametrize("arguments,message", [
    ({"db_id": "bookshop", "sql": "DROP TABLE books"}, "only a read-only SELECT"),
    ({"db_id": "bookshop", "sql": "SELECT 1; SELECT 2"}, "exactly one statement"),
    ({"db_id": "bookshop", "sql": "PRAGMA query_only = 0"}, "only a read-only SELECT"),
    ({"db_id": "bookshop", "sql": "ATTACH DATABASE ':memory:' AS m"}, "only a read-only SELECT"),
    ({"db_id": "bookshop", "sql": "SELECT load_extension('x')"}, "refused"),
    ({"db_id": "bookshop", "sql": "SELECT nope FROM books"}, "no such column: nope"),
    ({"db_id": "bookshop", "sql": ""}, "empty"),
    ({"db_id": "../bookshop", "sql": "SELECT 1"}, "no database '../bookshop'"),
    ({"db_id": "bookshop/bookshop.sqlite", "sql": "SELECT 1"}, "no database"),
])
async def test_refusals_and_errors_are_clear(arguments, message):
    async with Client(sample_server()) as client:
        result = await client.call_tool("run_query", arguments)
    assert result.is_error and message in text(result), text(result)


async def test_unknown_table_lists_the_real_ones():
    async with Client(sample_server()) as client:
        result = await client.call_tool("describe_table", {"db_id": "school", "table": "pupils"})
    assert result.is_error and "its tables are: courses, enrollments, students" in text(result)


async def test_batch_is_aligned_and_equal_to_single_calls():
    calls = [{"db_id": "bookshop", "sql": "SELECT count(*) FROM books"},
             {"db_id": "bookshop", "sql": "DELETE FROM books"},
             {"db_id": "school", "sql": "SELECT max(grade) FROM students"},
             {"db_id": "nowhere", "sql": "SELECT 1"}]
    async with Client(sample_server()) as client:
        batch = (await client.call_tool("run_query_batch", {"calls": calls})).structured_content["results"]
        singles = [await client.call_tool("run_query", call) for call in calls]
    assert [entry["is_error"] for entry in batch] == [False, True, False, True]
    for entry, single in zip(batch, singles):
        assert entry["is_error"] == single.is_error
        assert single.content[0].text in entry["text"]


def test_toolbox_merges_concurrent_queries_into_one_request():
    calls = [ToolCall("run_query", {"db_id": "bookshop", "sql": f"SELECT {i} + count(*) FROM books"}, i)
             for i in range(64)]
    with Toolbox(sql_server_config(str(SAMPLE_DB_DIR))) as toolbox:
        results = toolbox.call_many(calls)
    assert [r.text.splitlines()[1] for r in results] == [str(i + 24) for i in range(64)]


@pytest.mark.alone
async def test_a_cartesian_join_stops_by_its_deadline_while_other_calls_are_answered():
    world = shared_file("spider/database/world_1/world_1.sqlite")  # city: 4,079 rows, the largest dev table
    catalog = DatabaseCatalog({"world_1": world}, threads=4)
    server = create_server(SqlTools(catalog, SqlLimits(timeout_s=1.0)))
    outcome = {}

    async def slow(client):
        started = time.monotonic()
        outcome["result"] = await client.call_tool("run_query", {"db_id": "world_1", "sql":
                                                                 "SELECT count(*) FROM city a, city b, city c"})
        outcome["seconds"] = time.monotonic() - started

    async with Client(server) as client:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(slow, client)
            await anyio.sleep(0.2)
            started = time.monotonic()
            quick = await client.call_tool("run_query", {"db_id": "world_1", "sql": "SELECT count(*) FROM city"})
            quick_seconds = time.monotonic() - started
            assert "seconds" not in outcome, "the quick call waited for the cartesian join"
    assert text(quick).splitlines()[1] == "4079" and quick_seconds < 0.5
    assert outcome["result"].is_error and "ran longer than 1 s and was stopped" in text(outcome["result"])
    assert 0.9 <= outcome["seconds"] < 3.0
    catalog.close()


def test_finds_databases_in_spider_layout_and_flat_files(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "a.sqlite").write_bytes(b"")
    (tmp_path / "b.db").write_bytes(b"")
    (tmp_path / "c").mkdir()  # no database inside
    (tmp_path / "notes.txt").write_text("x")
    assert list(find_databases(tmp_path)) == ["a", "b"]
    with pytest.raises(FileNotFoundError):
        find_databases(tmp_path / "missing")


def test_bad_options_exit_with_usage(tmp_path, capsys):
    for argv in (["--db-dir", str(tmp_path / "none")], ["--db-dir", str(SAMPLE_DB_DIR), "--timeout-s", "0"],
                 ["--db-dir", str(tmp_path)]):
        with pytest.raises(SystemExit):
            build_server(argv)


@pytest.mark.integration
async def test_over_stdio_subprocess():
    params = StdioServerParameters(command=sys.executable, cwd=str(REPO_ROOT),
                                   args=["-m", "rlfactory_tool_servers.sql", "--db-dir", str(SAMPLE_DB_DIR), "--max-rows", "2"])
    with anyio.fail_after(60):
        async with Client(params) as client:
            tables = text(await client.call_tool("list_tables", {"db_id": "school"}))
            rows = text(await client.call_tool("run_query", {"db_id": "school", "sql":
                                                             "SELECT name FROM students ORDER BY student_id"}))
            refused = await client.call_tool("run_query", {"db_id": "school", "sql": "DELETE FROM students"})
    assert tables.startswith("Database school has 3 tables:")
    assert rows.splitlines()[:3] == ["name", "Ada Tully", "Bram Strake"] and "first 2 of 2+ rows" in rows
    assert refused.is_error and "DELETE" in text(refused)


async def test_semicolons_that_end_a_query_are_accepted_and_a_second_statement_is_not():
    async with Client(sample_server()) as client:
        ended = text(await client.call_tool("run_query", {"db_id": "bookshop",
                                                          "sql": "SELECT count(*) FROM books ;; \n"}))
        assert "(1 row)" in ended
        second = await client.call_tool("run_query", {"db_id": "bookshop", "sql": "SELECT 1; SELECT 2;"})
        assert second.is_error and "one statement" in text(second)
