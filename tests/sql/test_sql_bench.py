"""Smoke test of ``rlf bench --only sql``: the quick run writes its rows into the JSON report (no thresholds). It
runs on the embedded sample (25 questions over its databases): on the reference data's Spider dev it builds the test
suites of 19 databases, minutes for rows of the same shape."""

from __future__ import annotations

import json

from benchmarks import env_bench
from benchmarks.env_bench import main


def test_quick_sql_bench_writes_report(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(env_bench, "REFERENCE_DATA", tmp_path / "no-reference-data")
    out = tmp_path / "b.json"
    assert main(["--quick", "--only", "sql", "--out", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    rows = {r["name"]: r for r in report["results"]}
    assert set(rows) == {"sql_queries", "sql_queries_unmerged", "sql_reward", "sql_reward_warm", "sql_reward_fresh",
                         "sql_reward_single_db", "sql_reward_warm_single_db", "sql_reward_fresh_single_db",
                         "sql_suite_build"}
    assert rows["sql_queries"]["metric"] == "queries/s" and rows["sql_queries"]["n"] == 32
    assert rows["sql_reward"]["metric"] == "pairs/s" and rows["sql_reward"]["n"] >= 25
    assert rows["sql_reward_fresh"]["ms_per_answer"] > 0 and rows["sql_reward_warm"]["cpu_ms_per_answer"] > 0
    assert all(r["value"] > 0 for r in rows.values())
    assert report["ratios"]["sql_queries/sql_queries_unmerged@32"] > 0
    assert "sql_reward" in capsys.readouterr().out
