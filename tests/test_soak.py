"""The soak (``benchmarks/soak.py``) at CI size: 600 episodes across every lane at concurrency 64, real stdio server
subprocesses included, then every env closed and 28 envs made and closed one at a time. Descriptors other than files,
threads outside worker pools and child processes are exactly flat after warm-up (pool workers within the pools'
ceiling, as pools start them lazily); RSS, file descriptors (bounded SQLite pools) and CPU per
episode within loose bounds; once every env is closed, and after every round of make/close cycles, no file and no
child process more than before the first env. Wall-clock throughput is reported but not asserted: on a loaded
2-core machine it measures the neighbours."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.soak import LANES, checks, lane_sizes, main, quarter_medians, slope_per_1k, sparkline

REPO_ROOT = Path(__file__).resolve().parents[1]

EPISODES, CONCURRENCY, WARMUP, CYCLES = 600, 64, 2, 28


@pytest.fixture(scope="module")
def soak_report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("soak")
    out, plot = folder / "soak.json", folder / "soak.png"
    # a process of its own: what this one holds from earlier tests (and opens lazily) is not the soak's
    args = ["--episodes", str(EPISODES), "--concurrency", str(CONCURRENCY), "--warmup", str(WARMUP),
            "--cycles", str(CYCLES), "--out", str(out), "--plot", str(plot)]
    status = subprocess.run([sys.executable, "-m", "benchmarks.soak", *args], cwd=REPO_ROOT, check=False,
                            timeout=1200).returncode
    report = json.loads(out.read_text(encoding="utf-8"))
    return status, report, folder


def test_every_lane_runs_its_episodes_without_failure(soak_report):
    _, report, _ = soak_report
    assert report["episodes"] >= EPISODES and report["concurrency"] == CONCURRENCY
    assert {lane["name"] for lane in report["lanes"]} == {spec.name for spec in LANES}
    assert sum(lane["envs"] for lane in report["lanes"]) == CONCURRENCY
    assert all(s["episodes"] == CONCURRENCY for s in report["samples"])
    assert sum(s["failed"] for s in report["samples"]) == 0
    assert all(0.3 < s["mean_reward"] <= 1.0 for s in report["samples"])  # the scripted policies do solve tasks


def test_descriptors_threads_and_children_stay_flat(soak_report):
    _, report, _ = soak_report
    steady = report["samples"][WARMUP:]
    assert len(steady) >= 4
    for name in ("other_fds", "threads", "os_threads", "thread_pools", "children"):
        assert len({s[name] for s in steady}) == 1, (name, [s[name] for s in steady])
    assert all(s["children"] == 2 for s in steady)  # the travel and android stdio servers, nothing else
    first, last = quarter_medians([s["file_fds"] for s in steady])
    assert last <= first + 16
    assert all(s["pool_threads"] <= s["pool_ceiling"] for s in steady)


def test_memory_and_cost_per_episode_do_not_grow(soak_report):
    _, report, _ = soak_report
    steady = report["samples"][WARMUP:]
    for name in ("rss_bytes", "children_rss_bytes"):
        first, last = quarter_medians([s[name] for s in steady])
        assert last <= 1.25 * first, (name, first, last)
    first, last = quarter_medians([s["cpu_ms_per_episode"] for s in steady])
    assert last <= 2 * first


def test_report_lists_every_check_and_writes_the_curves(soak_report):
    status, report, folder = soak_report
    by_name = {r["name"]: r for r in report["checks"]}
    assert set(by_name) == {"rss_bytes", "children_rss_bytes", "file_fds", "other_fds", "threads", "os_threads",
                            "thread_pools", "pool_threads", "children", "episodes_per_s", "cpu_ms_per_episode", "failed", "file_fds_after_close",
                            "children_after_close", "cycle_file_fds", "cycle_children", "cycle_rss_bytes"}
    assert status == (0 if report["pass"] else 1) and report["pass"] == all(r["pass"] for r in report["checks"])
    assert by_name["failed"]["ratio"] == 1.0 and by_name["children"]["slope_per_1k_episodes"] == 0.0
    curves = [path for path in folder.iterdir() if path.suffix in (".png", ".csv")]
    assert len(curves) == 1 and curves[0].stat().st_size > 0
    if curves[0].suffix == ".csv":
        lines = curves[0].read_text(encoding="utf-8").splitlines()
        assert lines[0].startswith("window,total_episodes") and len(lines) == len(report["samples"]) + 1


def test_closing_every_env_gives_back_its_files_and_cycles_leave_nothing(soak_report):
    """The SQL reward's idle pools held 42-47 files open after every env had closed; now a runtime's idle parts give
    theirs back."""
    _, report, _ = soak_report
    before, closed = report["before_envs"], report["after_close"]
    assert closed["file_fds"] <= before["file_fds"] and closed["children"] == before["children"] == 0
    assert [s["cycle"] for s in report["cycle_samples"]] == [7, 14, 21, 28]
    assert all(s["file_fds"] <= before["file_fds"] and s["children"] == 0 for s in report["cycle_samples"])
    first, last = quarter_medians([s["rss_bytes"] for s in report["cycle_samples"]])
    assert last <= 1.15 * first


def test_checks_fail_a_leak_and_a_slowdown():
    samples = [{"window": i, "total_episodes": 100 * (i + 1), "rss_bytes": 100 + 10 * i, "children_rss_bytes": 50,
                "file_fds": 10 + 3 * i, "other_fds": 20 + (i > 5), "threads": 8, "os_threads": 9, "children": 2,
                "thread_pools": 3, "pool_threads": 4 + (i > 3) + 2 * (i > 8), "pool_ceiling": 12,
                "episodes_per_s": 100 / (i + 1), "cpu_ms_per_episode": 1.0 + i, "failed": 0} for i in range(12)]
    verdicts = {r["name"]: r["pass"] for r in checks(samples, 2, 0.15, 0.7, 16)}
    assert verdicts == {"rss_bytes": False, "children_rss_bytes": True, "file_fds": False, "other_fds": False,
                        "thread_pools": True, "pool_threads": True,
                        "threads": True, "os_threads": True, "children": True, "episodes_per_s": False,
                        "cpu_ms_per_episode": False, "failed": True}
    leaks = [{**s, "thread_pools": 3 + s["window"], "pool_threads": 9 + s["window"]} for s in samples]
    verdicts = {r["name"]: r["pass"] for r in checks(leaks, 2, 0.15, 0.7, 16)}
    assert not verdicts["thread_pools"] and not verdicts["pool_threads"]


def test_helpers():
    assert lane_sizes(64, 7) == [10, 9, 9, 9, 9, 9, 9]
    assert slope_per_1k([0, 1000, 2000], [5, 7, 9]) == pytest.approx(2.0)
    assert slope_per_1k([1, 1], [3, 4]) == 0.0
    assert sparkline([1, 1, 1]) == "▁▁▁" and sparkline([0, 7]) == "▁█"


def test_too_few_windows_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--episodes", "100", "--concurrency", "64"])
    assert "fewer than warmup + 4" in capsys.readouterr().err
