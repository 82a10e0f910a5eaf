"""Generated test-suite databases (``rlfactory_reward_models.sql.test_suite``): variants keep the schema, the keys
and the value distributions; suites are deterministic, cached outside the data folder under a key of what made
them, and distilled to tell gold queries from their neighbours; the reward built on them stops paying the
constant-answer and empty-answer hacks while every gold query still scores against itself."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlfactory_envs.sql.hack_rates import constant_query, measure
from rlfactory_reward_models.base import RewardInput
from rlfactory_envs.sql.tasks import SAMPLE_DB_DIR, gold_queries, load_sql_tasks, sample_tasks
from rlfactory_reward_models.sql.execution import SqlExecutionReward
from rlfactory_reward_models.sql.test_suite import GeneratedSuites, SuiteSettings
from rlfactory_reward_models.sql.test_suite.fuzz import write_variant
from rlfactory_reward_models.sql.test_suite.neighbours import compared_literals, neighbour_queries
from rlfactory_reward_models.sql.test_suite.profile import profile_table
from rlfactory_reward_models.sql.test_suite.schema import fill_order, quote, read_schema
from tests.conftest import shared_file

BOOKSHOP = SAMPLE_DB_DIR / "bookshop" / "bookshop.sqlite"


def sample_queries() -> dict[str, list[str]]:
    return gold_queries(sample_tasks())


def variant_of(source: Path, target: Path, seed: int, max_rows: int = 1000) -> dict[str, int]:
    conn = sqlite3.connect(f"{source.as_uri()}?mode=ro", uri=True)
    try:
        schema = read_schema(conn)
        profiled = {t.name: profile_table(conn, t, {}) for t in schema.tables}
    finally:
        conn.close()
    return write_variant(schema, {n: p for n, (_, p) in profiled.items()}, {n: s for n, (s, _) in profiled.items()},
                         target, seed, max_rows)


def dump(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        rows = []
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            rows += [(name, *row) for row in conn.execute(f"SELECT * FROM {quote(name)} ORDER BY rowid")]
        return rows
    finally:
        conn.close()


def check_integrity(path: Path) -> None:
    """Same tables as declared, every key unique, every foreign key pointing at a row of its parent."""
    conn = sqlite3.connect(path)
    try:
        schema = read_schema(conn)
        for table in schema.tables:
            for key in table.unique:
                columns = ", ".join(map(quote, key))
                duplicates = conn.execute(f"SELECT {columns}, count(*) FROM {quote(table.name)} GROUP BY {columns} "
                                          f"HAVING count(*) > 1 AND {' AND '.join(f'{quote(c)} IS NOT NULL' for c in key)}"
                                          ).fetchall()
                assert not duplicates, (table.name, key, duplicates[:3])
            for key in table.foreign_keys:  # (SQLite's foreign_key_check refuses keys to non-unique columns)
                matched = " AND ".join(f"p.{quote(a)} = c.{quote(b)}" for a, b in zip(key.parent_columns, key.columns))
                filled = " AND ".join(f"c.{quote(b)} IS NOT NULL" for b in key.columns)
                orphans = conn.execute(f"SELECT count(*) FROM {quote(table.name)} AS c WHERE {filled} AND NOT EXISTS "
                                       f"(SELECT 1 FROM {quote(key.parent)} AS p WHERE {matched})").fetchone()[0]
                assert orphans == 0, (table.name, key)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**40), database=st.sampled_from(["bookshop", "school", "tramways"]))
def test_variants_keep_the_schema_and_every_key(tmp_path_factory, seed, database):
    source = SAMPLE_DB_DIR / database / f"{database}.sqlite"
    target = tmp_path_factory.mktemp("variant") / "v.sqlite"
    counts = variant_of(source, target, seed)
    check_integrity(target)
    original, variant = sqlite3.connect(source), sqlite3.connect(target)
    try:
        ddl = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
        assert original.execute(ddl).fetchall() == variant.execute(ddl).fetchall()
        for table, count in counts.items():
            assert variant.execute(f"SELECT count(*) FROM {quote(table)}").fetchone()[0] == count
            info = original.execute(f"PRAGMA table_info({quote(table)})").fetchall()
            for column in (row[1] for row in info if row[3]):  # NOT NULL columns stay filled
                assert variant.execute(f"SELECT count(*) FROM {quote(table)} WHERE {quote(column)} IS NULL"
                                       ).fetchone()[0] == 0
    finally:
        original.close()
        variant.close()


def test_a_variant_is_a_function_of_its_seed(tmp_path):
    first, again, other = (variant_of(BOOKSHOP, tmp_path / f"{name}.sqlite", seed)
                           for name, seed in (("a", 7), ("b", 7), ("c", 8)))
    assert first == again
    assert dump(tmp_path / "a.sqlite") == dump(tmp_path / "b.sqlite") != dump(tmp_path / "c.sqlite")


def test_values_come_from_the_column_and_its_neighbourhood(tmp_path):
    sizes = [variant_of(BOOKSHOP, tmp_path / f"{seed}.sqlite", seed)["books"] for seed in range(12)]
    assert len(set(sizes)) > 3 and min(sizes) >= 1  # row counts vary, so a counted constant cannot follow
    original = {row[0] for row in sqlite3.connect(BOOKSHOP).execute("SELECT genre FROM books")}
    drawn = set()
    for seed in range(12):
        drawn |= {row[0] for row in sqlite3.connect(tmp_path / f"{seed}.sqlite").execute("SELECT genre FROM books")}
    assert drawn & original and len(drawn & original) >= len(original) - 1  # the column's own values...
    assert drawn - original  # ...and near copies of them


def test_self_references_composite_keys_and_cycles_are_honoured(tmp_path):
    source = tmp_path / "tricky.sqlite"
    conn = sqlite3.connect(source)
    conn.executescript("""
        CREATE TABLE staff (id INTEGER PRIMARY KEY, name TEXT UNIQUE, boss INTEGER REFERENCES staff(id));
        CREATE TABLE project (code TEXT PRIMARY KEY, lead INTEGER NOT NULL REFERENCES staff(id));
        CREATE TABLE member (staff_id INTEGER REFERENCES staff(id), code TEXT REFERENCES project(code),
                             hours REAL CHECK (hours >= 0), PRIMARY KEY (staff_id, code));
        CREATE TABLE ghost (x INTEGER REFERENCES nowhere(y));
        CREATE INDEX member_hours ON member(hours);
    """)
    conn.executemany("INSERT INTO staff VALUES (?, ?, ?)", [(1, "Ann", None), (2, "Bo", 1), (3, "Cy", 1)])
    conn.executemany("INSERT INTO project VALUES (?, ?)", [("P1", 1), ("P2", 2)])
    conn.executemany("INSERT INTO member VALUES (?, ?, ?)", [(1, "P1", 3.5), (2, "P1", 1.0), (3, "P2", 0.0)])
    conn.commit()
    conn.close()
    order = [t.name for t in fill_order(read_schema(sqlite3.connect(source)))]
    assert order.index("staff") < order.index("project") < order.index("member") and "ghost" in order
    for seed in range(25):
        target = tmp_path / f"v{seed}.sqlite"
        variant_of(source, target, seed)
        check_integrity(target)
        assert sqlite3.connect(target).execute("SELECT count(*) FROM member WHERE hours < 0").fetchone() == (0,)


def test_neighbours_change_one_thing_and_literals_are_found():
    gold = "SELECT name FROM authors WHERE birth_year > 1950 AND country = 'Norway' ORDER BY name LIMIT 2"
    found = neighbour_queries(gold, ["name", "country"])
    assert "SELECT name FROM authors WHERE birth_year >= 1950 AND country = 'Norway' ORDER BY name LIMIT 2" in found
    assert "SELECT name FROM authors WHERE country = 'Norway' ORDER BY name LIMIT 2" in found
    assert "SELECT name FROM authors WHERE birth_year > 1950 AND country = 'Norway' ORDER BY name LIMIT 3" in found
    assert any(q.startswith('SELECT "country" FROM') for q in found)
    assert gold not in found and len(found) == len(set(found))
    assert neighbour_queries("SELEC nonsense (") == []
    assert compared_literals(gold) == {"birth_year": [1950], "country": ["Norway"]}
    assert compared_literals("SELECT 1 FROM t WHERE name LIKE '%ann%' OR x IN (1, 2)") == {"name": ["ann"],
                                                                                          "x": [1, 2]}


def test_suites_are_cached_under_a_key_of_what_made_them_and_never_in_the_data_folder(tmp_path):
    before = sorted(p.name for p in SAMPLE_DB_DIR.rglob("*"))
    queries = sample_queries()
    first = GeneratedSuites(SuiteSettings(size=4, cache_dir=str(tmp_path)), "spider", queries)
    variants = first.databases("bookshop", BOOKSHOP)
    index = first.index("bookshop")
    assert len(variants) == 4 and all(v.path.parent.parent.parent == tmp_path for v in variants)
    assert index["queries"] == len(set(queries["bookshop"])) and index["literal_pairs_told_apart"] > 0
    assert index["source_sha256"] and index["generator_version"] >= 1 and len(index["variants"]) == 4
    folder = variants[0].path.parent
    stamp = (folder / "index.json").stat().st_mtime_ns
    again = GeneratedSuites(SuiteSettings(size=4, cache_dir=str(tmp_path)), "spider", queries)
    assert [v.path for v in again.databases("bookshop", BOOKSHOP)] == [v.path for v in variants]
    assert (folder / "index.json").stat().st_mtime_ns == stamp  # read, not rebuilt
    other = GeneratedSuites(SuiteSettings(size=4, seed=1, cache_dir=str(tmp_path)), "spider", queries)
    assert other.databases("bookshop", BOOKSHOP)[0].path.parent != folder  # another seed, another suite
    assert dump(variants[0].path) != dump(other.databases("bookshop", BOOKSHOP)[0].path)
    assert sorted(p.name for p in SAMPLE_DB_DIR.rglob("*")) == before
    assert not list(tmp_path.rglob(".building-*"))
    for suites in (first, again, other):
        suites.close()
    with pytest.raises(ValueError, match="size"):
        SuiteSettings(size=5, candidates=4)


def test_a_damaged_cache_entry_is_rebuilt(tmp_path):
    suites = GeneratedSuites(SuiteSettings(size=2, cache_dir=str(tmp_path)), "spider", sample_queries())
    folder = suites.databases("school", SAMPLE_DB_DIR / "school" / "school.sqlite")[0].path.parent
    suites.close()
    (folder / "variant_01.sqlite").unlink()
    rebuilt = GeneratedSuites(SuiteSettings(size=2, cache_dir=str(tmp_path)), "spider", sample_queries())
    assert len(rebuilt.databases("school", SAMPLE_DB_DIR / "school" / "school.sqlite")) == 2
    assert (folder / "variant_01.sqlite").is_file() and json.loads((folder / "index.json").read_text())["variants"]
    rebuilt.close()


def test_the_reward_on_generated_suites_stops_paying_the_hacks_of_one_database(tmp_path):
    report = measure(None, str(tmp_path))  # the embedded sample: 3 databases
    single, generated = report["settings"]["single"], report["settings"]["generated"]
    assert single["literal_paid"] == report["literal_tasks"] > 20  # every constant pays on one database
    assert generated["literal_paid"] <= 0.02 * report["literal_tasks"]
    assert generated["empty_paid"] == 0 and generated["gold_other"] == 0
    assert generated["gold_paid"] + generated["gold_unscored"] == report["tasks"]
    assert report["neighbours_different"] > 0
    assert generated["different_caught"] >= 0.8 * report["neighbours_different"] > single["different_caught"]


def test_spider_dev_constants_and_empty_answers_stop_paying():
    dev = shared_file("spider/dev.json")
    tasks = list(load_sql_tasks(dev))
    queries = gold_queries(tasks)
    reward = SqlExecutionReward(dev.parent / "database", suite_queries=queries)
    try:
        literal, empty = [], []
        for task in tasks:
            gold = reward.catalog.get(task.db_id).execute(task.gold_sql, truncate=False)
            if len(gold.rows) <= 50:
                literal.append(RewardInput(task, constant_query(len(gold.columns), gold.rows)))
            empty.append(RewardInput(task, constant_query(len(gold.columns), [])))
        golds = asyncio.run(reward.score_batch([RewardInput(task, task.gold_sql) for task in tasks]))
        wrong = [(task.task_id, r.reason) for task, r in zip(tasks, golds)
                 if r.value != 1.0 and "unscored" not in r.reason]
        assert not wrong, wrong[:3]
        paid = sum(r.value for r in asyncio.run(reward.score_batch(literal)))
        assert len(literal) > 900 and paid == 0, paid  # 100% on one database; 12 by the suites alone
        assert sum(r.value for r in asyncio.run(reward.score_batch(empty))) == 0  # 49 on one database
        for db_id in queries:  # 190 variants of 19 real schemas (Spider declares keys SQLite itself cannot check)
            databases, generated = reward.databases(db_id)
            assert generated and len(databases) == 11
            for variant in databases[1:]:
                check_integrity(variant.path)
    finally:
        reward.close()
