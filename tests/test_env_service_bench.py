"""``rlf bench --only env_service`` at its quick size: both servers run and answer, ours holds every session, and
the churn leaves the server's threads, descriptors and sessions where they were. The speed ratio is printed, not
asserted: on a loaded 2-core machine it measures the neighbours (the full run's numbers are in docs/speed.md)."""

from __future__ import annotations

import pytest

pytest.importorskip("openenv.core", reason="the bench's other side is openenv-core's own server "
                                           "(pip install .[openenv])")

from benchmarks.env_service_bench import compare  # noqa: E402


def test_the_quick_bench_runs_both_servers_and_nothing_leaks():
    rows, notes = compare(quick=True)
    by = {row["name"]: row for row in rows}
    assert set(by) == {"env_service_held_rlf", "env_service_steps_rlf", "env_service_held_openenv",
                       "env_service_steps_openenv", "env_service_churn_rlf"}
    assert by["env_service_held_rlf"]["value"] == 128 and by["env_service_held_rlf"]["pass"]
    assert by["env_service_steps_rlf"]["steps"] > 0 and by["env_service_steps_openenv"]["steps"] > 0
    assert by["env_service_steps_rlf"]["sessions_stepping"] == 128
    churn = by["env_service_churn_rlf"]
    assert churn["pass"] and churn["after"]["opened"] - churn["before"]["opened"] == 400
    assert churn["after"]["sessions"] == 0 and churn["after"]["closed"] == churn["after"]["opened"]
    assert any("steps per server CPU second" in note for note in notes)
