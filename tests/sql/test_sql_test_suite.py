"""Test-suite accuracy: a database folder with variants of ``<db_id>.sqlite`` (the official Spider test-suite
layout) makes the reward require a match on every file, which closes the empty-gold and constant-answer holes of a
single database, while the tools keep seeing the main file only."""

from __future__ import annotations

import json
import shutil
import sqlite3

import gymnasium as gym
import pytest

import rlfactory_envs  # noqa: F401 - registers the ids
from rlfactory_envs.sql.tasks import SAMPLE_DB_DIR
from rlfactory_reward_models.sql.execution import SqlExecutionReward
from rlfactory_tool_servers.sql.sandbox.catalog import DatabaseCatalog, find_variants
from rlfactory_tool_servers.sql.sandbox.engine import QueryRefused

EMPTY_ON_MAIN = "SELECT name FROM authors WHERE birth_year > 1990"  # no author on the main file, one on the variant
COUNT_BOOKS = "SELECT count(*) FROM books"  # 24 on the main file, 25 on the variant


@pytest.fixture
def sample(tmp_path):
    """A copy of the embedded sample whose bookshop folder holds the main file, an identical variant
    (``bookshop_1``), a variant with an author and a book more (``bookshop_2``) and files that are no variants."""
    root = tmp_path / "sample"
    shutil.copytree(SAMPLE_DB_DIR.parent, root)
    folder = root / "database" / "bookshop"
    shutil.copy(folder / "bookshop.sqlite", folder / "bookshop_1.sqlite")
    shutil.copy(folder / "bookshop.sqlite", folder / "bookshop_2.sqlite")
    conn = sqlite3.connect(folder / "bookshop_2.sqlite")  # the copy; the embedded sample is never opened for writing
    with conn:
        conn.execute("INSERT INTO authors VALUES (8, 'Ilse Varn', 'Tarsk', 1995)")
        conn.execute("INSERT INTO books VALUES (25, 'The Salt Ledger', 8, 'novel', 2023, 12.0, 300)")
    conn.close()
    (folder / "schema.sql").write_text("-- not a database\n")
    (folder / "bookshop.db").write_bytes((folder / "bookshop_2.sqlite").read_bytes())  # .db: not a variant
    return root


@pytest.fixture
def suite(sample):
    reward = SqlExecutionReward(sample / "database", timeout_s=1.0)
    single = SqlExecutionReward(sample / "database", timeout_s=1.0, test_suite="off", empty_gold="match")
    yield reward, single
    reward.close()
    single.close()


def test_the_catalog_finds_the_variants_of_a_folder_only(sample, tmp_path):
    catalog = DatabaseCatalog(sample / "database", threads=2)
    try:
        suite = catalog.variants("bookshop")
        assert [db.path.name for db in suite] == ["bookshop.sqlite", "bookshop_1.sqlite", "bookshop_2.sqlite"]
        assert suite[0] is catalog.get("bookshop") and catalog.variants("bookshop") is suite
        assert catalog.variants("school") == (catalog.get("school"),)
        with pytest.raises(QueryRefused):  # every variant is as read-only as the main file
            suite[2].execute("DELETE FROM books")
        assert suite[2].execute(COUNT_BOOKS).rows == [(25,)]
    finally:
        catalog.close()
    flat = tmp_path / "flat"  # flat files are other databases, never variants, even in a folder named like one
    flat.mkdir()
    for name in ("flat.sqlite", "other.sqlite"):
        shutil.copy(SAMPLE_DB_DIR / "school" / "school.sqlite", flat / name)
    assert find_variants("flat", flat / "flat.sqlite", flat) == [flat / "flat.sqlite"]


def test_an_empty_answer_no_longer_matches_a_gold_result_empty_on_the_main_file_only(suite):
    reward, single = suite
    for gamed in ("SELECT NULL WHERE 0", "SELECT name FROM authors WHERE 0"):
        assert single.verify("bookshop", EMPTY_ON_MAIN, gamed).value == 1.0  # the hole, on one file
        verdict = reward.verify("bookshop", EMPTY_ON_MAIN, gamed)
        assert verdict.value == 0.0 and verdict.parts["executed"] == 1.0
        assert verdict.reason.startswith("result differs on bookshop_2.sqlite: "), verdict.reason
    for correct in (EMPTY_ON_MAIN, "SELECT name FROM authors WHERE birth_year >= 1991"):
        assert reward.verify("bookshop", EMPTY_ON_MAIN, correct).value == 1.0


def test_a_constant_computed_on_the_main_file_scores_zero(suite):
    reward, single = suite
    assert single.verify("bookshop", COUNT_BOOKS, "SELECT 24").value == 1.0
    verdict = reward.verify("bookshop", COUNT_BOOKS, "SELECT 24")
    assert verdict.value == 0.0 and "bookshop_2.sqlite" in verdict.reason
    for correct in (COUNT_BOOKS, "SELECT count(book_id) FROM books", "```sql\nSELECT COUNT(*) FROM books;\n```"):
        assert reward.verify("bookshop", COUNT_BOOKS, correct).value == 1.0
    wrong = reward.verify("bookshop", COUNT_BOOKS, "SELECT 25")  # wrong on the main file: named first
    assert wrong.value == 0.0 and wrong.reason.startswith("result differs on bookshop.sqlite: ")
    failed = reward.verify("bookshop", COUNT_BOOKS, "SELECT count(*) FROM nothing")
    assert failed.value == 0.0 and failed.reason.startswith("error on bookshop.sqlite: ")


def test_official_variants_come_first_and_other_databases_get_generated_ones(suite, sample):
    reward, _ = suite
    assert [d.path.name for d in reward.databases("bookshop")[0]] == [
        "bookshop.sqlite", "bookshop_1.sqlite", "bookshop_2.sqlite"]
    generated, is_generated = reward.databases("school")
    assert is_generated and [d.path.name for d in generated][1:] == [f"variant_{i:02d}.sqlite" for i in range(10)]
    assert reward.verify("school", "SELECT count(*) FROM students", "SELECT count(*) FROM students").value == 1.0
    official = SqlExecutionReward(sample / "database", test_suite="official")
    try:  # "official": a database without variants is scored on its own file, as before
        verdict = official.verify("school", "SELECT count(*) FROM students", "SELECT -1")
        assert verdict.value == 0.0 and verdict.reason.startswith("result differs: ")
        assert len(official.databases("school")[0]) == 1
    finally:
        official.close()


def test_gold_results_are_cached_per_variant_and_query(suite):
    reward, _ = suite
    for _ in range(3):
        reward.verify("bookshop", COUNT_BOOKS, "SELECT 24")
    assert sorted(key[1].rsplit("/", 1)[-1] for key in reward._gold_cache) == [
        "bookshop.sqlite", "bookshop_1.sqlite", "bookshop_2.sqlite"]
    assert [result.rows for result in reward._gold_cache.values()] == [[(24,)], [(24,)], [(25,)]]


def test_unscored_means_empty_on_every_variant(sample):
    reward = SqlExecutionReward(sample / "database", empty_gold="unscored")
    try:
        assert reward.verify("bookshop", EMPTY_ON_MAIN, EMPTY_ON_MAIN).value == 1.0  # scored: rows on a variant
        assert reward.verify("bookshop", EMPTY_ON_MAIN, "SELECT NULL WHERE 0").value == 0.0
        nowhere = "SELECT name FROM authors WHERE birth_year > 3000"
        verdict = reward.verify("bookshop", nowhere, nowhere)
        assert verdict.value == 0.0 and "unscored" in verdict.reason
    finally:
        reward.close()


def test_a_gold_result_the_same_on_every_variant_is_unscored(sample):
    zero = "SELECT count(*) FROM authors WHERE birth_year > 3000"  # 0 on every file: a constant would match it
    default = SqlExecutionReward(sample / "database")
    matching = SqlExecutionReward(sample / "database", constant_gold="match")
    single = SqlExecutionReward(sample / "database", test_suite="off")
    try:
        for answer in (zero, "SELECT 0"):
            verdict = default.verify("bookshop", zero, answer)
            assert verdict.value == 0.0 and verdict.parts["executed"] == 1.0
            assert verdict.reason == ("the gold result is the same on every database of the suite, so a constant "
                                      "answer would match it: unscored (constant_gold='unscored')")
            assert matching.verify("bookshop", zero, answer).value == 1.0  # the official evaluators' semantics
            assert single.verify("bookshop", zero, answer).value == 1.0  # one database tells nothing apart
        assert default.verify("bookshop", COUNT_BOOKS, COUNT_BOOKS).value == 1.0  # 24, 24, 25: scored
        assert default.verify("bookshop", COUNT_BOOKS, "SELECT 24").value == 0.0
        assert "constant_gold='match'" in repr(matching)
    finally:
        for reward in (default, matching, single):
            reward.close()
    with pytest.raises(ValueError, match="constant_gold must be 'match' or 'unscored'"):
        SqlExecutionReward(sample / "database", constant_gold="skip")


def call(name: str, **arguments) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def test_the_env_rewards_on_every_variant_while_its_tools_see_the_main_file(sample):
    task = {"db_id": "bookshop", "question": "How many books are there?", "query": COUNT_BOOKS}
    questions = str(sample / "questions.json")
    env = gym.make("rlf/NL2SQL-Spider-v0", data_path=questions).unwrapped
    single = gym.make("rlf/NL2SQL-Spider-v0", data_path=questions, test_suite=False).unwrapped
    try:
        assert env.reward_model.test_suite == "generate" and single.reward_model.test_suite == "off"
        env.reset(options={"task": task})
        obs, *_ = env.step(call("describe_table", table="authors") + call("run_query", sql=COUNT_BOOKS)
                           + call("run_query", sql=EMPTY_ON_MAIN))
        assert "Table authors (7 rows)" in obs and "Ilse Varn" not in obs and "\n24" in obs and "25" not in obs
        _, reward, terminated, _, info = env.step("<answer>SELECT 24</answer>")
        assert terminated and reward == 0.0 and "bookshop_2.sqlite" in info["reward_reason"]
        env.reset(options={"task": task})
        _, reward, *_ = env.step(f"<answer>{COUNT_BOOKS}</answer>")
        assert reward == 1.0
        single.reset(options={"task": task})
        _, reward, *_ = single.step("<answer>SELECT 24</answer>")
        assert reward == 1.0  # test_suite=False: the main file only, the constant scores again
    finally:
        env.close()
        single.close()
