"""Smoke test of the judge benchmark: the quick run (a 20 ms scripted judge in its own process) writes a complete
JSON report in env_bench's row layout, and the GRPO workload's coalescing shows (no timing thresholds)."""

from __future__ import annotations

import json

from benchmarks.judge_bench import grpo_items, main, shared_share


def test_quick_judge_bench_writes_report(tmp_path, capsys):
    out = tmp_path / "judge.json"
    assert main(["--quick", "--out", str(out)]) == 0

    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["quick"] is True and report["repeats"] == 1
    rows = {r["name"]: r for r in report["results"]}
    assert set(rows) == {"judge_c4", "judge_c64", "judge_grpo", "judge_grpo_rescored"}
    for r in rows.values():
        assert r["metric"] == "answers/s" and r["value"] > 0
        assert len(r["seconds"]) == 1 and len(r["cpu_seconds"]) == 1 and len(r["gc_runs"]) == 1
        for key in ("n", "seconds", "median_s", "min_s", "metric", "value", "target", "pass"):
            assert key in r, (r["name"], key)
    assert rows["judge_c64"]["concurrency"] == 64 and 0 < rows["judge_c64"]["x_ideal"]
    grpo = rows["judge_grpo"]
    # 16 prompts x 8 samples, one answer repeated by 3 or 4 samples of each prompt: every repeat is coalesced
    assert grpo["n"] == 128 and grpo["requests"] + grpo["coalesced"] + grpo["cache_hits"] == 128
    assert grpo["coalesced"] + grpo["cache_hits"] == sum((3, 3, 3, 4, 3)[p % 5] - 1 for p in range(16)) == 35
    assert rows["judge_grpo_rescored"]["hit_rate"] == 1.0
    printed = capsys.readouterr().out
    assert "judge_grpo" in printed and "hit rate" in printed


def test_the_grpo_workload_shares_40_percent_of_answers_within_a_prompt():
    items = grpo_items(128, 8, "t")
    assert len(items) == 1024
    assert abs(shared_share(items) - 0.40) < 0.01
    assert len({(it.task.task_id, it.answer) for it in items}) == 1024 - (409 - 128)
