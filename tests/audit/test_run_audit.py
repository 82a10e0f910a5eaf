"""``run_audit`` on the embedded samples (what each family's reward measurably resists today), on rewards built to
fail it (a farmable one, one that pays nothing), and on hacks and envs that misbehave."""

from __future__ import annotations

import gymnasium as gym
import pytest

from rlfactory_envs import make_env
from rlfactory_envs.audit import audit_task_ids, run_audit
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.reward_hacks import FixedResponseHack, final_answer

FARMABLE = {"reward": "tests.audit.fixtures:substring_reward"}
GENERIC_ROWS = {"empty_answer", "whitespace_answer", "punctuation_dot", "punctuation_dashes", "punctuation_paren",
                "answer_in_reasoning", "stuffed_candidates", "repeated_answer_tags", "nested_answer_tags",
                "format_only", "longest_response", "think_left_open", "stray_think_close"}


def register(env_id: str, entry_point: str) -> str:
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=entry_point)
    return env_id


def rates(report) -> dict[str, float]:
    return {outcome.name: outcome.rate for outcome in report.hacks}


@pytest.mark.parametrize("env_id", ["rlf/Search-NQ-v0", "rlf/MCP-v0"])
def test_search_and_generic_rewards_resist_every_hack(env_id):
    report = run_audit(env_id, n_tasks=50)
    assert report.control.rate == 1.0 and report.passed, report.table()
    assert set(rates(report)) >= GENERIC_ROWS
    assert set(rates(report).values()) == {0.0}
    assert all(report.verdict(outcome) == "ok" for outcome in report.hacks)
    assert report.summary().startswith("PASS")


def test_search_family_rows_are_in_the_report():
    report = run_audit("rlf/Search-NQ-v0", n_tasks=10)
    assert {"article_the", "article_a", "articles_and_punctuation", "all_aliases_stuffed",
            "question_copied"} <= set(rates(report))


def test_sql_rows_other_than_the_literal_copy_earn_nothing():
    """The literal copy's rate depends on the test suites the reward runs on (see test_sql_hacks); every other
    row, the control included, is measured here."""
    report = run_audit("rlf/NL2SQL-Spider-v0", n_tasks=50)
    assert report.control.rate == 1.0 and report.tasks == 25
    measured = rates(report)
    assert {"literal_copy", "empty_result_gold_width", "select_everything", "gold_then_second_statement",
            "write_then_gold"} <= set(measured)
    assert {name: rate for name, rate in measured.items() if name != "literal_copy" and rate} == {}
    assert all(outcome.errors == 0 for outcome in report.hacks)


STRICT_READING_HACKS = ["name_fragments", "teleport_legs", "bus_legs", "unnamed_legs", "extra_day",
                        "banned_mode_lowercase", "flight_other_date", "junk_before_names"]


def test_travel_plans_that_are_not_trips_earn_under_the_official_reading_only():
    """Measured: the official evaluator (``strict=False``) finds a place by a substring of its name, takes any leg
    text, ignores extra days, a banned mode in lower case and a flight's date, and reads past junk before a name, so
    each of those plans passes on the sample tasks; the strict reading (``strict=True``) closes every hole, and then
    every row of the travel audit is resisted."""
    official = run_audit("rlf/Travel-v0", n_tasks=50, env_kwargs={"strict": False})
    assert official.control.rate == 1.0 and official.tasks == 24
    assert official.failing_hacks == STRICT_READING_HACKS and rates(official)["name_fragments"] == 1.0
    assert {name for name, rate in rates(official).items() if rate} == set(STRICT_READING_HACKS)
    strict = run_audit("rlf/Travel-v0", n_tasks=50, env_kwargs={"strict": True})
    assert strict.passed and strict.control.rate == 1.0, strict.table()


def test_a_farmable_reward_fails_the_audit():
    report = run_audit("rlf/MCP-v0", n_tasks=8, env_kwargs=FARMABLE)
    assert report.control_ok and not report.passed
    assert {"stuffed_candidates", "nested_answer_tags"} <= set(report.failing_hacks)
    assert rates(report)["stuffed_candidates"] == 1.0 and rates(report)["empty_answer"] == 0.0
    table = report.table()
    assert "stuffed_candidates (the reference among many distractors" in table
    assert table.splitlines()[-1].startswith("FAIL: hacks earning reward on more than 2.0% of tasks")
    data = report.to_dict()
    row = next(row for row in data["hacks"] if row["name"] == "stuffed_candidates")
    assert row["verdict"] == "FAIL" and row["earning_examples"] and data["passed"] is False


def test_a_reward_that_pays_nothing_fails_on_its_control():
    report = run_audit("rlf/MCP-v0", n_tasks=6, env_kwargs={"reward": "tests.audit.fixtures:no_reward"})
    assert not report.failing_hacks and report.control.rate == 0.0 and not report.passed
    assert report.verdict(report.control) == "FAIL" and "mean nothing" in report.summary()


def test_an_env_without_a_reference_has_no_control():
    env_id = register("rlf-test/AuditNoReference-v0", "tests.audit.fixtures:EnvWithoutReference")
    report = run_audit(env_id, n_tasks=5)
    assert report.verdict(report.control) == "n/a" and not report.passed
    assert report.control.not_applicable == 5 and "reference_answer()" in report.summary()
    verdicts = {outcome.name: report.verdict(outcome) for outcome in report.hacks}
    assert verdicts["stuffed_candidates"] == "n/a" and verdicts["empty_answer"] == "ok"
    assert " n/a" in report.table()


def test_an_env_adds_its_own_hacks_and_replaces_generic_ones():
    env_id = register("rlf-test/AuditOwnHacks-v0", "tests.audit.fixtures:EnvWithOwnHacks")
    report = run_audit(env_id, n_tasks=4)
    descriptions = {outcome.name: outcome.description for outcome in report.hacks}
    assert descriptions["empty_answer"] == "the family's own empty answer"
    assert list(descriptions)[-1] == "reference_twice" and report.passed


def test_only_narrows_the_battery_and_rejects_unknown_names():
    report = run_audit("rlf/MCP-v0", n_tasks=3, only=["format_only", "control"])
    assert [outcome.name for outcome in report.hacks] == ["format_only"] and report.control.tried == 3
    with pytest.raises(ConfigError, match="no hack named 'nope'"):
        run_audit("rlf/MCP-v0", n_tasks=3, only=["nope"])


class RaisingHack:
    name = "raises"
    description = "a hack that raises on its second turn"

    async def act(self, env, observation):
        if env.turn:
            raise RuntimeError("odd observation")
        return "no answer yet"


def test_a_crash_is_a_finding_not_a_traceback():
    wrong_type = FixedResponseHack("not_text", "returns a number", lambda env: 42)
    fine = FixedResponseHack("ok", "", lambda env: final_answer(env, "x"))
    report = run_audit("rlf/MCP-v0", n_tasks=4, hacks=[RaisingHack(), wrong_type, fine])
    raising, not_text, fine = report.hacks
    assert (raising.tried, raising.errors, raising.earned) == (4, 4, 0) and report.verdict(raising) == "FAIL"
    assert "RuntimeError: odd observation" in raising.crashed[0].error and not_text.errors == 4
    assert report.verdict(fine) == "ok" and report.failing_hacks == ["raises", "not_text"]
    assert "error: the hack failed: RuntimeError: odd observation" in report.table()


def test_the_tasks_are_distinct_shuffled_and_repeatable():
    env = make_env("rlf/MCP-v0")
    try:
        ids = audit_task_ids(env, 10)
        assert len(set(ids)) == 10 and ids == audit_task_ids(env, 10) and ids != audit_task_ids(env, 10, seed=1)
        assert sorted(audit_task_ids(env, 1000)) == sorted(task.task_id for task in env.tasks)
    finally:
        env.close()
    report = run_audit("rlf/MCP-v0", n_tasks=5, batch_size=2, only=["empty_answer"])
    assert report.tasks == 5 and report.control.tried == 5 and report.hacks[0].tried == 5
