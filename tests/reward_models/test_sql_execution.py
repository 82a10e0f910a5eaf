"""The execution reward on the embedded sample databases: what scores 1, what scores 0 and why, both datasets'
comparisons and both DISTINCT modes."""

import asyncio
from types import SimpleNamespace

import pytest

from rlfactory_reward_models.base import RewardInput
from rlfactory_envs.sql.tasks import SAMPLE_DB_DIR
from rlfactory_reward_models.sql.execution import SqlExecutionReward, extract_sql


@pytest.fixture(scope="module")
def reward():
    model = SqlExecutionReward(SAMPLE_DB_DIR, timeout_s=0.3, test_suite="off", empty_gold="match")
    yield model  # the comparison on one database; test suites and empty gold results: tests/sql/test_sql_test_suite
    model.close()


def verify(model, gold, predicted, db_id="bookshop"):
    return model.verify(db_id, gold, predicted)


@pytest.mark.parametrize("predicted", [
    "SELECT count(*) FROM books",
    "select COUNT(book_id) from books;",
    "```sql\nSELECT count(*) FROM books\n```",
    "  SELECT count(*) FROM books  -- all of them",
    "SELECT 24",
])
def test_equivalent_queries_score_one(reward, predicted):
    result = verify(reward, "SELECT count(*) FROM books", predicted)
    assert result.value == 1.0, result
    assert result.parts == {"execution_match": 1.0, "executed": 1.0, "format": 1.0}


@pytest.mark.parametrize("predicted,reason", [
    (None, "no final answer"),
    ("   ", "empty query"),
    ("SELECT count(*) FROM books; SELECT 1", "exactly one statement"),
    ("SELECT count(*) FROM books; DROP TABLE books", "exactly one statement"),
    ("DELETE FROM books", "only a read-only SELECT"),
    ("PRAGMA query_only = 0", "only a read-only SELECT"),
    ("ATTACH DATABASE 'x.db' AS x", "only a read-only SELECT"),
    ("SELECT load_extension('evil')", "refused"),
    ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c", "timeout"),
    ("SELECT count(*) FROM books a, books b, books c, books d, books e, books f", "timeout"),
    ("SELECT count(*) FROM no_such_table", "no such table"),
    ("SELEC count(*) FROM books", "could not be parsed"),
    ("SELECT count(*) FROM authors", "result differs"),
])
def test_wrong_or_unsafe_predictions_score_zero_with_a_reason(reward, predicted, reason):
    result = verify(reward, "SELECT count(*) FROM books", predicted)
    assert result.value == 0.0
    assert reason in result.reason, result.reason


def test_order_counts_only_when_the_gold_query_orders_its_result(reward):
    ordered = "SELECT name FROM authors ORDER BY birth_year DESC"
    assert verify(reward, ordered, "SELECT name FROM authors ORDER BY birth_year DESC").value == 1.0
    wrong_order = verify(reward, ordered, "SELECT name FROM authors ORDER BY birth_year")
    assert wrong_order.value == 0.0 and "another order" in wrong_order.reason
    assert verify(reward, "SELECT name FROM authors", "SELECT name FROM authors ORDER BY name").value == 1.0
    # an ORDER BY inside a subquery does not order the outer result
    sub = "SELECT count(*) FROM books WHERE price > (SELECT price FROM books ORDER BY price LIMIT 1)"
    assert verify(reward, sub, "SELECT count(*) FROM books WHERE price > (SELECT min(price) FROM books)").value == 1.0


def test_columns_may_be_permuted_for_spider_but_not_for_bird():
    gold, predicted = "SELECT title, price FROM books", "SELECT price, title FROM books"
    spider = SqlExecutionReward(SAMPLE_DB_DIR, comparison="spider")
    bird = SqlExecutionReward(SAMPLE_DB_DIR, comparison="bird")
    try:
        assert verify(spider, gold, predicted).value == 1.0
        assert verify(bird, gold, predicted).value == 0.0
        # BIRD compares sets: a duplicate row more or less does not matter; Spider compares multisets
        dupes_gold, dupes_pred = "SELECT genre FROM books", "SELECT DISTINCT genre FROM books"
        assert verify(bird, dupes_gold, dupes_pred).value == 1.0
        assert verify(spider, dupes_gold, dupes_pred).value == 0.0
    finally:
        spider.close()
        bird.close()


def test_distinct_kept_by_default_and_stripped_like_the_official_evaluator_on_request():
    keep = SqlExecutionReward(SAMPLE_DB_DIR)
    strip = SqlExecutionReward(SAMPLE_DB_DIR, distinct="strip")
    try:
        gold = "SELECT count(DISTINCT student_id) FROM enrollments"
        assert verify(keep, gold, "SELECT count(student_id) FROM enrollments", "school").value == 0.0
        # the official default removes DISTINCT from both queries: count(student_id) then "matches"
        assert verify(strip, gold, "SELECT count(student_id) FROM enrollments", "school").value == 1.0
        assert verify(keep, gold, gold, "school").value == 1.0
        assert verify(strip, gold, gold, "school").value == 1.0
        genres = "SELECT DISTINCT genre FROM books"
        assert verify(keep, genres, "SELECT genre FROM books").value == 0.0
        assert verify(strip, genres, "SELECT genre FROM books").value == 1.0
    finally:
        keep.close()
        strip.close()


def test_nulls_and_numbers_compare_like_python(reward):
    two_nulls = "SELECT NULL UNION ALL SELECT NULL"
    assert verify(reward, "SELECT pages FROM books WHERE pages IS NULL", two_nulls).value == 1.0
    assert verify(reward, "SELECT avg(price) FROM books WHERE genre = 'novel'", "SELECT 17.5").value == 1.0
    assert verify(reward, "SELECT count(*) FROM books", "SELECT 24.0").value == 1.0
    assert verify(reward, "SELECT count(*) FROM books", "SELECT '24'").value == 0.0


def test_empty_results_must_agree_in_width(reward):
    gold = "SELECT name FROM authors WHERE birth_year > 3000"
    assert verify(reward, gold, "SELECT name FROM authors WHERE 0").value == 1.0
    gamed = verify(reward, gold, "SELECT 1, 2 WHERE 0")
    assert gamed.value == 0.0 and "empty" in gamed.reason


def test_a_broken_gold_query_or_unknown_database_scores_zero_with_the_reason(reward):
    assert "gold query failed" in verify(reward, "SELECT nope FROM books", "SELECT 1").reason
    assert "task database unavailable" in verify(reward, "SELECT 1", "SELECT 1", db_id="../bookshop").reason


def test_score_batch_aligns_results_with_items_and_needs_sql_tasks(reward):
    task = SimpleNamespace(db_id="bookshop", gold_sql="SELECT count(*) FROM books")
    answers = ["SELECT 24", "SELECT 23", None, "DROP TABLE books"] * 8
    results = asyncio.run(reward.score_batch([RewardInput(task, a) for a in answers]))
    assert [r.value for r in results] == [1.0, 0.0, 0.0, 0.0] * 8
    with pytest.raises(TypeError, match="db_id"):
        asyncio.run(reward.score(RewardInput(SimpleNamespace(question="q"), "SELECT 1")))


def test_extract_sql_unwraps_a_code_fence():
    assert extract_sql("```sql\nSELECT 1\n```") == "SELECT 1"
    assert extract_sql("```\nSELECT 1```") == "SELECT 1"
    assert extract_sql("  SELECT 1 ") == "SELECT 1"
    assert extract_sql(None) == ""


@pytest.mark.parametrize("answer,query", [
    ("```SELECT count(*) FROM books```", "SELECT count(*) FROM books"),  # no info string: SELECT is the query
    ("```sql SELECT 1```", "SELECT 1"),
    ("```SQLite\nSELECT 1\n```", "SELECT 1"),
    ("SELECT 1;;", "SELECT 1"),
    ("```sql\nSELECT 1; ;\n```", "SELECT 1"),
    ("SELECT 1; SELECT 2;", "SELECT 1; SELECT 2"),  # a second statement stays, to be refused
    ("SELECT 1; -- done", "SELECT 1; -- done"),
])
def test_extract_sql_keeps_the_whole_query_and_drops_empty_trailing_statements(answer, query):
    assert extract_sql(answer) == query


@pytest.mark.parametrize("predicted", [
    "```SELECT count(*) FROM books```",
    "SELECT count(*) FROM books;;",
    "SELECT count(*) FROM books ; ;\n",
])
def test_correct_queries_in_odd_but_harmless_wrappings_score_one(reward, predicted):
    result = verify(reward, "SELECT count(*) FROM books", predicted)
    assert result.value == 1.0, result


@pytest.mark.alone
def test_extract_sql_is_linear_on_long_runs_of_spaces_and_semicolons():
    import time
    started = time.perf_counter()
    assert extract_sql("SELECT" + " " * 200_000 + "1" + "; " * 100_000) == "SELECT" + " " * 200_000 + "1"
    assert time.perf_counter() - started < 1.0


def test_settings_are_checked():
    with pytest.raises(ValueError, match="comparison"):
        SqlExecutionReward(SAMPLE_DB_DIR, comparison="exact")
    with pytest.raises(ValueError, match="distinct"):
        SqlExecutionReward(SAMPLE_DB_DIR, distinct="sometimes")


def test_empty_gold_results_are_unscored_by_default_and_match_on_request():
    gold = "SELECT name FROM authors WHERE birth_year > 3000"  # empty on the sample and on any variant of it
    default, matching = SqlExecutionReward(SAMPLE_DB_DIR), SqlExecutionReward(SAMPLE_DB_DIR, empty_gold="match")
    try:
        assert default.empty_gold == "unscored"
        for answer in (gold, "SELECT NULL WHERE 0"):
            verdict = verify(default, gold, answer)
            assert verdict.value == 0.0 and "unscored" in verdict.reason and verdict.parts["executed"] == 1.0
            assert verify(matching, gold, answer).value == 1.0  # the official evaluators' semantics
        assert verify(default, "SELECT count(*) FROM books", "SELECT count(*) FROM books").value == 1.0
    finally:
        default.close()
        matching.close()
    with pytest.raises(ValueError, match="empty_gold"):
        SqlExecutionReward(SAMPLE_DB_DIR, empty_gold="skip")
    with pytest.raises(ValueError, match="test_suite"):
        SqlExecutionReward(SAMPLE_DB_DIR, test_suite="sometimes")


def test_the_env_passes_empty_and_constant_gold_to_its_reward():
    import gymnasium as gym

    env = gym.make("rlf/NL2SQL-Spider-v0", empty_gold="unscored", constant_gold="match").unwrapped
    try:
        assert (env.reward_model.empty_gold, env.reward_model.constant_gold) == ("unscored", "match")
    finally:
        env.close()
