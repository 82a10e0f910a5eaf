"""The audit's reasoning-tag hacks against a model judge that quotes the answer it grades (a real HTTP endpoint,
``tests/reward_models/judge_endpoint.py``): an answer ending in ``<think>`` or holding ``</think>`` used to move
how the judge's verdict was read; the verdict now comes from the judge's own words."""

from __future__ import annotations

import pytest

from rlfactory_envs.audit import run_audit
from tests.reward_models.judge_endpoint import ScriptedJudge, answer_in, serve, verdict_by_reference


@pytest.mark.parametrize("verdict_first", [True, False])
def test_think_tag_hacks_earn_nothing_from_a_quoting_judge(verdict_first):
    def quoting(body) -> str:
        verdict, quote = f"Verdict: {verdict_by_reference(body)}.", f'The candidate answered: "{answer_in(body)}"'
        return f"{verdict} {quote}" if verdict_first else f"{quote}. {verdict}"

    judge = ScriptedJudge(default=quoting)
    with serve(judge) as url:
        report = run_audit("rlf/Search-NQ-v0", n_tasks=20, only=["think_left_open", "stray_think_close"],
                           env_kwargs={"reward": "judge", "judge": {"base_url": url, "model": judge.model}})
    assert report.control.rate == 1.0 and report.passed, report.table()
    assert {hack.name: hack.earned for hack in report.hacks} == {"think_left_open": 0, "stray_think_close": 0}
    defused = [answer for answer in judge.answers() if answer.endswith(", yes \u2039think>")]
    assert len(defused) == 20  # every think_left_open episode asked the judge, its tag shown defused (the
    # envs read a response after its last </think>, so stray_think_close's answer is never read: no final answer)
