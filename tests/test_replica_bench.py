"""Smoke test of ``rlf bench --only replicas`` at its quick size: 1 and 4 real HTTP replicas of the SQL server
answer every call of a batch of scripted trajectories, and the report has both rows and their ratio (no timing
thresholds)."""

from __future__ import annotations

import json

import pytest

from benchmarks.env_bench import main
from tests.conftest import REPO_ROOT

HAS_REPLICAS = (REPO_ROOT / "rlfactory_envs" / "kernel" / "mcp" / "replicas.py").is_file()


@pytest.mark.integration
@pytest.mark.timeout(180)
@pytest.mark.skipif(not HAS_REPLICAS, reason="rlfactory_envs/kernel/mcp/replicas.py (an mcpServers entry with "
                    "'urls') is not there yet")
def test_quick_replica_bench_reports_one_and_four_replicas(tmp_path, capsys):
    out = tmp_path / "b.json"
    assert main(["--quick", "--only", "replicas", "--out", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    rows = {r["name"]: r for r in report["results"]}
    assert set(rows) == {"replicas_1", "replicas_4"}
    for r in rows.values():
        assert r["metric"] == "episodes/s" and r["value"] > 0 and r["n"] == 128
        assert r["tool_calls"] > 0 and r["tool_errors"] == 0 and r["failed"] == 0, r
        assert 0 < r["step_tool_ms_p50"] <= r["step_tool_ms_p99"]
    assert report["ratios"]["replicas_4/replicas_1@128"] > 0
    assert "replicas_4" in capsys.readouterr().out
