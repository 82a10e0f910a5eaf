"""``rlf view`` in a real headless Chromium: the runs table loads, filters, sorts, pages and searches; an episode
opens with its turns, tool calls and reward; runs switch; two runs compare; unreadable lines are listed, not
fatal; an audit report shows its hacks; the export works from a file with nothing loaded from anywhere."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.view.conftest import records, rollout
from tests.view.viewer import chromium, open_page, screenshot, viewer

pytestmark = pytest.mark.integration
FLIPPED = 5


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """60 search episodes (run A) and a copy (run B) where the first ``FLIPPED`` tasks that paid now pay nothing,
    ending with a line cut short and a line that is not JSON."""
    folder = tmp_path_factory.mktemp("two")
    a, b = folder / "baseline.jsonl", folder / "candidate.jsonl"
    rollout("rlf/Search-NQ-v0", a, "-n", "60")
    lines, flipped = [], set()
    for record in records(a):
        task = record["task"]["task_id"]
        if record["reward"] > 0 and (len(flipped) < FLIPPED or task in flipped):
            flipped.add(task)
            record["reward"], record["reward_parts"]["exact_match"] = 0.0, 0.0
        lines.append(json.dumps(record))
    b.write_text("\n".join(lines) + "\nthis line is not JSON\n" + lines[0][:200] + "\n", encoding="utf-8")
    return a, b


def shown_count(page) -> int:
    return int(page.inner_text("[data-testid=count]").split()[0].replace(",", ""))


def test_table_filters_sorts_pages_and_searches(two_runs):
    a, _ = two_runs
    episodes = records(a)
    with viewer(a) as view, chromium() as browser:
        page = open_page(browser, view.url)
        page.wait_for_selector("[data-testid=episode-row]")
        assert shown_count(page) == 60
        assert page.locator("[data-testid=episode-row]").count() == 50
        page.click("[data-testid=next]")
        page.wait_for_selector("[data-testid=page-info]:text-is('51–60 of 60')")
        assert page.locator("[data-testid=episode-row]").count() == 10

        page.fill("[data-testid=filter-max]", "0")
        page.dispatch_event("[data-testid=filter-max]", "change")
        page.wait_for_function("(n) => document.querySelector('[data-testid=count]')?.innerText.startsWith(n + ' ')",
                               arg=sum(e["reward"] <= 0 for e in episodes))
        page.fill("[data-testid=filter-max]", "")
        page.dispatch_event("[data-testid=filter-max]", "change")

        page.click("[data-testid=sort-reward]")
        page.wait_for_selector("[data-testid=sort-reward]:has-text('▼')")
        assert page.locator("[data-testid=episode-row] td.num").first.inner_text() in ("1", "1.00")

        word = episodes[0]["task"]["question"].split()[-1]
        expected = sum(word.lower() in json.dumps(e).lower() for e in episodes)
        page.fill("[data-testid=search]", word.upper())
        page.press("[data-testid=search]", "Enter")
        page.wait_for_selector("[data-testid=search-note]:has-text('episodes hold')")
        assert shown_count(page) == expected
        assert page.locator("svg[data-testid=plot-reward] rect.bar").count() > 0
        screenshot(page, "runs-table")
        assert not page.errors


def test_episode_page_shows_turns_calls_and_reward(two_runs):
    a, _ = two_runs
    first = records(a)[0]
    with viewer(a) as view, chromium() as browser:
        page = open_page(browser, view.url)
        page.click("[data-testid=episode-link] >> nth=0")
        page.wait_for_selector("[data-testid=episode]")
        assert first["task"]["task_id"] in page.inner_text("[data-testid=episode-title]")
        assert page.locator("[data-testid=turn]").count() == first["turns"]
        call = page.locator("[data-testid=tool-call]").first.inner_text()
        assert call.startswith("search(") and " ms" in call and first["task"]["question"][:20] in call
        parts = page.inner_text("[data-testid=reward-parts]")
        assert all(name in parts for name in first["reward_parts"])
        page.click("[data-testid=back]")
        page.wait_for_selector("[data-testid=episode-row]")
        assert not page.errors


def test_runs_switch_compare_and_bad_lines(two_runs):
    a, b = two_runs
    with viewer(a, b) as view, chromium() as browser:
        page = open_page(browser, view.url)
        page.wait_for_selector("[data-testid=episode-row]")
        page.click("[data-testid=run-tab] >> nth=1")
        page.wait_for_selector("[data-testid=run-title]:has-text('candidate.jsonl')")
        assert shown_count(page) == 60
        problems = page.inner_text("[data-testid=problems]")
        assert "2 lines could not be read" in problems and "line 61" in problems and "line 62" in problems
        screenshot(page, "bad-lines")

        page.click("[data-testid=compare-tab]")
        page.wait_for_selector("[data-testid=flipped]")
        assert page.inner_text("[data-testid=flipped]") == str(FLIPPED)
        assert page.inner_text("[data-testid=regressed]") == str(FLIPPED)
        page.click("[data-testid=compare-row] a >> nth=0")
        page.wait_for_selector("[data-testid=side-by-side]")
        assert page.locator("[data-testid=side-by-side] [data-testid=episode-title]").count() == 2
        screenshot(page, "compare")
        assert page.locator("svg[data-testid=plot-runs]").count() == 0  # plots live on a run's page
        page.click("[data-testid=run-tab] >> nth=0")
        page.wait_for_selector("svg[data-testid=plot-runs]")
        assert not page.errors


def test_audit_reports_show_hacks_and_flags_across_runs(tmp_path):
    from rlfactory_envs.audit import run_audit

    paths = []
    for step in (100, 200):
        report = run_audit("rlf/Search-NQ-v0", n_tasks=4)
        paths.append(tmp_path / f"audit_step{step}.json")
        paths[-1].write_text(json.dumps(report.to_dict()), encoding="utf-8")
    with viewer(*paths) as view, chromium() as browser:
        page = open_page(browser, view.url)
        page.wait_for_selector("[data-testid=audit-summary]")
        assert page.locator("[data-testid=audit-hack]").count() == len(report.hacks) + 1
        assert page.inner_text("[data-testid=audit-summary]") == report.summary()
        page.wait_for_selector("svg[data-testid=plot-hack-flags]")
        page.click("[data-testid=episode-link] >> nth=0")
        page.wait_for_selector("[data-testid=episode-title]")
        assert " on task " in page.inner_text("[data-testid=episode-title]")
        assert not page.errors


def test_export_is_one_file_that_works_offline(two_runs, tmp_path):
    a, b = two_runs
    out = tmp_path / "report.html"
    from tests.view.viewer import rlf_command
    import subprocess

    done = subprocess.run([*rlf_command(), "view", str(a), str(b), "--export", str(out), "--export-episodes", "10"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    html = out.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    with chromium() as browser:
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        requests = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto(out.as_uri())
        page.wait_for_selector("[data-testid=episode-row]")
        assert shown_count(page) == 60
        page.click("[data-testid=episode-link] >> nth=0")
        page.wait_for_selector("[data-testid=turn]")
        page.click("[data-testid=compare-tab]")
        page.wait_for_selector("[data-testid=compare-row]")
        page.click("[data-testid=compare-row] a >> nth=0")
        page.wait_for_selector("[data-testid=side-by-side] [data-testid=turn]")
        assert not errors
        assert all(url.startswith(("file:", "blob:", "data:")) for url in requests), requests
