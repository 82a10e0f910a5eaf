"""Smoke test of ``rlf bench``: the quick env-overhead run writes a complete JSON report (no timing thresholds)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from benchmarks.env_bench import main
from benchmarks.floors import ChildrenCpu


def test_quick_env_overhead_writes_report(tmp_path, capsys):
    out = tmp_path / "b.json"
    assert main(["--quick", "--only", "env_overhead", "--out", str(out)]) == 0

    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["quick"] is True and report["repeats"] == 1
    rows = {r["name"]: r for r in report["results"]}
    assert set(rows) == {"env_overhead_batched", "env_overhead_single_sync", "env_overhead_single_async"}
    for r in rows.values():
        assert r["metric"] == "steps/s"
        assert len(r["seconds"]) == 1
        assert len(r["cpu_seconds"]) == 1 and len(r["gc_runs"]) == 1
        for key in ("median_s", "min_s", "value", "cpu_ms_per_step"):
            assert isinstance(r[key], float) and r[key] > 0, (r["name"], key)
    assert rows["env_overhead_batched"]["n"] > 1
    assert report["ratios"]["env_overhead_batched/single_async"] > 0
    assert "env_overhead_batched" in capsys.readouterr().out


def test_quick_android_bench_reports_steps_and_memory(tmp_path):
    out = tmp_path / "b.json"
    assert main(["--quick", "--only", "android", "--out", str(out)]) == 0
    rows = {r["name"]: r for r in json.loads(out.read_text(encoding="utf-8"))["results"]}
    assert set(rows) == {"android_steps", "android_steps_unmerged", "android_device_steps", "android_memory"}
    assert rows["android_steps"]["metric"] == "steps/s" and rows["android_steps"]["value"] > 0
    assert 0 < rows["android_memory"]["value"] < 200_000 
    assert abs(rows["android_memory"]["rss_bytes_per_env"]) < 2_000_000  # RSS growth is noisy: freed pages make it < 0


def test_every_measurement_of_its_own_module_is_named_and_found():
    """Every family's declared measurement and every sibling module's is in ``NAMES`` and loads as a
    ``function(context)``; so are the runner's own."""
    import inspect

    from benchmarks.env_bench import NAMES, OWN_BENCHES, SIBLING_BENCHES
    from rlfactory_envs.kernel.families import load_ref
    from rlfactory_envs.registry import FAMILIES

    declared = {name: entry for family in FAMILIES for name, entry in family.benches.items()}
    assert {"search", "search_scale", "sql", "sql_hostile", "travel", "android"} <= set(declared)
    found = {name: load_ref(entry.function) for name, entry in {**declared, **SIBLING_BENCHES}.items()}
    for name, run in {**found, **OWN_BENCHES}.items():
        assert name in NAMES
        assert list(inspect.signature(run).parameters) == ["context"], name


def test_without_only_the_default_measurements_run():
    from benchmarks.env_bench import DEFAULT_NAMES, NAMES, parse_args

    assert set(DEFAULT_NAMES) == {"sleep_stdio", "env_overhead", "search", "sql", "travel", "android", "rollout",
                                  "judge", "paths"}
    assert set(NAMES) - set(DEFAULT_NAMES) == {"search_scale", "soak", "replicas", "sql_hostile", "env_service"}
    assert parse_args([]).only == list(DEFAULT_NAMES)


def test_quick_sql_hostile_bench_reports_the_ratios_and_the_memory(tmp_path):
    """Measured, not judged here (a shared machine, and a test process that holds what earlier tests loaded): the
    rows are complete."""
    out = tmp_path / "b.json"
    assert main(["--quick", "--only", "sql_hostile", "--out", str(out)]) == 0
    rows = {r["name"]: r for r in json.loads(out.read_text(encoding="utf-8"))["results"]}
    assert set(rows) == {"sql_hostile_tools_same_loop", "sql_hostile_tools_own_loop", "sql_hostile_answers",
                         "sql_hostile_answer_bound", "sql_hostile_peak_rss"}
    assert all(rows[name]["value"] > 0 and rows[name]["hostile_calls"] > 0
               for name in ("sql_hostile_tools_same_loop", "sql_hostile_tools_own_loop"))
    assert rows["sql_hostile_answers"]["value"] > 0 and rows["sql_hostile_answers"]["hostile_episodes"] > 0
    assert rows["sql_hostile_answer_bound"]["n"] > 0 and rows["sql_hostile_peak_rss"]["value"] > 0
    # the bounds themselves: tests/sql/test_hostile_bounds.py, tests/sql/test_answer_bounds.py


def test_quick_paths_bench_puts_each_path_beside_its_goal_and_the_plain_sdk(tmp_path, capsys):
    """Measured, not judged (a shared machine): every path of issue 32's table has its value, its goal and verdict,
    and with --compare-sdk the SDK's value and how many times faster ours is; the machine is named."""
    out = tmp_path / "b.json"
    assert main(["--quick", "--only", "paths", "--compare-sdk", "--out", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    rows = {r["name"]: r for r in report["results"]}
    assert set(rows) == {"merged_stdio", "sync_function", "async_function", "no_tool_call", "single_env_stdio",
                         "third_party", "env_overhead", "android"}
    for name, r in rows.items():
        assert r["value"] > 0 and r["cpu_us_per_step"] > 0 and r["target"] != "-", name
        assert isinstance(r["pass"], bool), name
    compared = {name for name, r in rows.items() if r["sdk_value"] is not None}
    assert compared == {"merged_stdio", "sync_function", "async_function", "single_env_stdio", "third_party"}
    assert {key.split("/")[0] for key in report["ratios"] if "plain_sdk" in key} == compared
    # each latency-bound path beside its floor on this machine, measured in the same run
    floored = {name for name, r in rows.items() if r.get("floor_value")}
    assert floored == {"merged_stdio", "single_env_stdio", "third_party"}
    assert {key.split("/")[0] for key in report["ratios"] if "/floor@" in key} == floored
    assert rows["third_party"]["server_cpu_us_per_call"] > 0
    assert report["machine"]["cores"] >= 1 and report["machine"]["cpu"]
    printed = capsys.readouterr().out
    assert printed.startswith("machine: ") and "plain MCP SDK" in printed and "floor" in printed
    assert "third_party's servers spend" in printed and "single_env_stdio's floor" in printed


def test_children_cpu_counts_what_a_child_process_spends_between_readings():
    """The third-party floor reads its servers' CPU from /proc: a child that spins for 0.3 s of CPU is counted, and a
    reading right after counts nearly nothing more."""
    cpu = ChildrenCpu()
    child = subprocess.Popen([sys.executable, "-c", "import sys, time\nend = time.process_time() + 0.3\n"
                              "while time.process_time() < end: pass\nprint(flush=True)\nsys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        child.stdout.readline()  # it has spun and waits, alive, to be read
        spent = cpu.take()
        if spent is None:
            pytest.skip("this system's /proc does not list a process's children")
        assert spent >= 0.25
        time.sleep(0.05)
        assert cpu.take() < 0.05
    finally:
        child.communicate()
