"""``rlf audit`` as a user runs it: a real subprocess; exit 0 when every hack is resisted, 1 when one is not, 2 for
a mistake in the command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def rlf_audit(*args: str) -> subprocess.CompletedProcess:
    """``python -m rlfactory_envs.cli audit ...`` from the repository root (the tests' reward modules import)."""
    return subprocess.run([sys.executable, "-m", "rlfactory_envs.cli", "audit", *args], capture_output=True,
                          text=True, timeout=120, cwd=REPO_ROOT, check=False)


def test_audit_of_a_sound_reward_exits_0_and_writes_json(tmp_path):
    out = tmp_path / "audit.json"
    result = rlf_audit("rlf/Search-NQ-v0", "--n", "6", "--set", "max_turns=2", "--json", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("rlf audit rlf/Search-NQ-v0: 6 tasks of rlf-search-sample")
    assert any(line.split()[:2] == ["control", "6"] and line.endswith("ok") for line in lines)
    assert lines[-1].startswith("PASS")
    report = json.loads(out.read_text())
    assert report["passed"] is True and report["tasks"] == 6 and report["hacks"][0]["name"] == "control"


def test_audit_of_a_farmable_env_spec_exits_1_naming_the_hacks(tmp_path):
    spec = tmp_path / "farmable.yaml"
    spec.write_text("reward: tests.audit.fixtures:substring_reward\nmax_turns: 2\n", encoding="utf-8")
    result = rlf_audit(str(spec), "-n", "5", "--only", "stuffed_candidates", "empty_answer")
    assert result.returncode == 1, result.stdout + result.stderr
    last = result.stdout.splitlines()[-1]
    assert last.startswith("FAIL:") and "stuffed_candidates" in last and "empty_answer" not in last


def test_audit_usage_errors_exit_2():
    result = rlf_audit("rlf/MCP-v0", "--only", "no_such_hack")
    assert result.returncode == 2 and "no hack named 'no_such_hack'" in result.stderr
    assert rlf_audit("rlf/MCP-v0", "--max-rate", "2").returncode == 2
