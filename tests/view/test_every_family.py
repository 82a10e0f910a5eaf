"""``rlf rollout ... --out x.jsonl && rlf view x.jsonl`` on every family: each run's table loads, its first
episode's page shows the conversation turn by turn and the reward with the family's own verdict."""

from __future__ import annotations

import pytest

from tests.view.conftest import records
from tests.view.viewer import chromium, open_page, screenshot, viewer

pytestmark = pytest.mark.integration

VERDICTS = {"travel": ["is_valid_restaurants", "valid_cost"], "android": ["subgoals"], "sql": [], "search": [],
            "generic": []}
"""What each family's verdict section shows (TravelPlanner's constraints, Android's sub-goals)."""


def test_every_family_views(family_runs):
    names = list(family_runs)
    with viewer(*family_runs.values()) as view, chromium() as browser:
        page = open_page(browser, view.url)
        for number, family in enumerate(names):
            played = records(family_runs[family])
            first = played[0]
            page.goto(f"{view.url}#/run/{number}")
            page.wait_for_selector(f"[data-testid=run-title]:has-text('{family}.jsonl')")
            page.wait_for_selector("[data-testid=episode-row]")
            assert page.locator("[data-testid=episode-row]").count() == len(played)
            assert page.locator("[data-testid=episode-row] td").nth(1).inner_text() == family
            page.goto(f"{view.url}#/run/{number}/episode/0")
            page.wait_for_selector("[data-testid=episode]")
            assert page.locator("[data-testid=turn]").count() == first["turns"], family
            assert page.locator("[data-testid=tool-call]").count() == first["tool_calls"], family
            verdicts = page.inner_text("[data-testid=reward]")
            assert all(name in verdicts for name in [*first["reward_parts"], *VERDICTS[family]]), family
            if family in ("travel", "android"):
                screenshot(page, f"episode-{family}")
        assert not page.errors
