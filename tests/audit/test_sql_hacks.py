"""The SQL family's hacks do what they claim on the embedded sample: the literal copy really answers a query of
constants that reproduces the gold result on the original database file (so it is no dud), the empty answer has the
gold's width, and several statements or a write earn nothing and change nothing."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3

import pytest
import sqlglot
from sqlglot import expressions as exp

from rlfactory_envs import make_env
from rlfactory_envs.audit import run_audit
from rlfactory_envs.sql.family import SAMPLE_DB_DIR
from rlfactory_envs.sql.hacks import (ResultTable, constant_query, first_table, parse_result_table, sql_hacks,
                                      sql_literal, table_cells)
from rlfactory_reward_models.sql.compare import spider_match
from rlfactory_tool_servers.sql.formatting import format_rows
from rlfactory_tool_servers.sql.sandbox.statement_check import has_top_level_order_by

HACKS = {hack.name: hack for hack in sql_hacks()}


@pytest.fixture(scope="module")
def env():
    env = make_env("rlf/NL2SQL-Spider-v0")
    yield env
    env.close()


def rows_on_main_file(db_id: str, sql: str) -> tuple[list[str], list[tuple]]:
    with sqlite3.connect(f"file:{SAMPLE_DB_DIR / db_id / f'{db_id}.sqlite'}?mode=ro", uri=True) as connection:
        cursor = connection.execute(sql)
        return [d[0] for d in cursor.description], cursor.fetchall()


def play(env, hack, task_id: str) -> list[str]:
    """The hack's responses over one episode of task ``task_id``."""
    observation, _ = env.reset(options={"task_id": task_id})
    responses = []
    while not env.done:
        responses.append(asyncio.run(hack.act(env, observation)))
        observation, *_ = env.step(responses[-1])
    return responses


def test_literal_copy_reproduces_the_gold_result_on_the_original_database(env):
    for task in env.tasks:
        call, answer = play(env, HACKS["literal_copy"], task.task_id)
        assert '"name": "run_query"' in call and task.gold_sql in call.replace('\\"', '"')
        constant = env.parser.parse(answer).answer
        assert not list(sqlglot.parse_one(constant, read="sqlite").find_all(exp.Table)), constant  # no table read
        gold_columns, gold_rows = rows_on_main_file(task.db_id, task.gold_sql)
        columns, rows = rows_on_main_file(task.db_id, constant)
        verdict = spider_match(gold_rows, rows, order_matters=has_top_level_order_by(task.gold_sql),
                               gold_columns=len(gold_columns), pred_columns=len(columns))
        assert verdict, (task.task_id, task.gold_sql, constant, verdict.reason)


def test_literal_copy_earns_on_the_main_file_alone():
    """Without test-suite variants the constant scores on every sample task: only other databases defeat it."""
    report = run_audit("rlf/NL2SQL-Spider-v0", n_tasks=50, env_kwargs={"test_suite": False},
                       only=["literal_copy"])
    (literal,) = report.hacks
    assert report.control.rate == 1.0 and literal.tried == report.tasks and literal.rate == 1.0


def test_empty_result_has_the_gold_width(env):
    for task in list(env.tasks)[:8]:
        _, answer = play(env, HACKS["empty_result_gold_width"], task.task_id)
        width = len(rows_on_main_file(task.db_id, task.gold_sql)[0])
        assert env.parser.parse(answer).answer == "SELECT " + ", ".join(["NULL"] * width) + " WHERE 0"


def test_select_everything_reads_the_gold_table(env):
    task = env.tasks[0]
    (answer,) = play(env, HACKS["select_everything"], task.task_id)
    table = first_table(task.gold_sql)
    assert env.parser.parse(answer).answer == f"SELECT * FROM {table}"
    assert rows_on_main_file(task.db_id, f"SELECT * FROM {table}")[1]


def test_several_statements_and_a_write_earn_nothing_and_change_nothing(env):
    task = env.tasks[0]
    database = SAMPLE_DB_DIR / task.db_id / f"{task.db_id}.sqlite"
    before = hashlib.sha256(database.read_bytes()).hexdigest()
    for name in ("gold_then_second_statement", "write_then_gold"):
        observation, _ = env.reset(options={"task_id": task.task_id})
        response = asyncio.run(HACKS[name].act(env, observation))
        assert task.gold_sql in response and ";" in env.parser.parse(response).answer
        _, reward, terminated, _, info = env.step(response)
        assert (reward, terminated) == (0.0, True) and "statement" in info["reward_reason"]
    assert env.parser.parse(response).answer.startswith(f"DELETE FROM {first_table(task.gold_sql)};")
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before


def test_the_tool_table_is_read_back_exactly():
    values = [(1, "O'Brien | Sons", None), (2.5, "line\nbreak \\ slash", "NULL"), (-3, "", "  padded ")]
    text = format_rows(["a", "b", "c"], values, more=False, max_rows=50, max_chars=4000)
    table = parse_result_table(text)
    assert table == ResultTable(["a", "b", "c"], [["1", "O'Brien | Sons", "NULL"],
                                                  ["2.5", "line\nbreak \\ slash", "NULL"],
                                                  ["-3", "", "  padded "]], complete=True)
    connection = sqlite3.connect(":memory:")
    assert connection.execute(constant_query(table)).fetchall() == [
        (1, "O'Brien | Sons", None), (2.5, "line\nbreak \\ slash", None), (-3, "", "  padded ")]


def test_a_cut_or_failed_result_is_answered_with_what_was_read():
    text = format_rows(["n"], [(i,) for i in range(60)], more=False, max_rows=50, max_chars=4000)
    table = parse_result_table(text)
    assert table is not None and not table.complete and len(table.rows) == 50
    assert parse_result_table("Error executing tool run_query: query error: no such table: nope") is None
    assert parse_result_table("") is None
    assert constant_query(ResultTable(["a", "b"], [], True)) == "SELECT NULL, NULL WHERE 0"
    assert table_cells(r"a \| b | c\\") == ["a | b", "c\\"]


@pytest.mark.parametrize(("cell", "literal"), [("NULL", "NULL"), ("42", "42"), ("-1.5", "-1.5"), ("1e-05", "1e-05"),
                                               ("inf", "9e999"), ("nan", "NULL"), ("it's", "'it''s'"),
                                               ("12 Main St", "'12 Main St'")])
def test_sql_literals(cell, literal):
    assert sql_literal(cell) == literal


def test_gated_literal_copy_shows_the_gold_rows_on_the_main_file_and_none_on_a_variant(env, tmp_path):
    """It matches the gold on the database the tools see and gives no rows where the fingerprint differs: it pays
    only where the gold has no rows on any variant, which the reward leaves unscored."""
    import shutil

    for task in list(env.tasks)[:6]:
        first, second, answer = play(env, HACKS["gated_literal_copy"], task.task_id)
        assert '"name": "run_query"' in first and "total(rowid)" in second
        constant = env.parser.parse(answer).answer
        gold_columns, gold_rows = rows_on_main_file(task.db_id, task.gold_sql)
        columns, rows = rows_on_main_file(task.db_id, constant)
        assert spider_match(gold_rows, rows, order_matters=has_top_level_order_by(task.gold_sql),
                            gold_columns=len(gold_columns), pred_columns=len(columns)), (task.task_id, constant)
        if gold_rows:
            variant = tmp_path / f"{task.db_id}.sqlite"
            shutil.copy(SAMPLE_DB_DIR / task.db_id / f"{task.db_id}.sqlite", variant)
            with sqlite3.connect(variant) as connection:
                table = first_table(task.gold_sql)
                connection.execute(f"DELETE FROM {table} WHERE rowid = (SELECT max(rowid) FROM {table})")
                assert connection.execute(constant).fetchall() == []


def test_a_gold_with_rows_on_the_main_file_only_is_unscored():
    from rlfactory_reward_models.sql.unscorable import unscorable_reason
    from rlfactory_tool_servers.sql.sandbox.engine import QueryResult

    def result(*rows):
        return QueryResult(("document_id",), list(rows), False, 0.0)

    reason = unscorable_reason([result((16514113,)), result(), result()], comparison="spider", order_matters=False,
                               suite=True)
    assert "rows on the task's database only" in reason
    assert unscorable_reason([result((1,)), result(), result((2,))], comparison="spider", order_matters=False,
                             suite=True) is None
    assert unscorable_reason([result((1,)), result()], comparison="spider", order_matters=False, suite=True,
                             constant_gold="match") is None
