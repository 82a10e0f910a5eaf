"""Every task template, on many seeds: the reference plan, played from the screen text alone, succeeds; ending at
once fails and shows no progress; a random agent almost never succeeds; instances are deterministic."""

from __future__ import annotations

import random

import pytest

from rlfactory_tool_servers.android.phone.actions import perform
from rlfactory_tool_servers.android.phone.device import DeviceError
from rlfactory_tool_servers.android.phone.plans import run_plan
from rlfactory_tool_servers.android.phone.tasks import all_templates
from rlfactory_tool_servers.android.phone.tasks.base import build_device, optimal_steps

TEMPLATES = all_templates()
IDS = [t.name for t in TEMPLATES]
ENDINGS = [None, {"action_type": "status", "goal_status": "complete"},
           {"action_type": "status", "goal_status": "infeasible"}, {"action_type": "answer", "text": ""},
           {"action_type": "answer", "text": "yes"}, {"action_type": "answer", "text": "0"}]


def test_there_are_thirty_templates_over_eight_apps():
    assert len(TEMPLATES) >= 30
    assert len({t.app for t in TEMPLATES}) >= 8
    assert {t.kind for t in TEMPLATES} == {"action", "answer", "infeasible"}


def test_rlf_list_and_the_pages_give_the_same_template_counts():
    from rlfactory_envs.registry import ENVIRONMENTS
    from tests.conftest import REPO_ROOT

    count, apps = len(TEMPLATES), len({t.app for t in TEMPLATES})
    kinds = {kind: sum(t.kind == kind for t in TEMPLATES) for kind in ("action", "answer", "infeasible")}
    assert ENVIRONMENTS["rlf/Android-v0"].description.endswith(f"{count} task templates")  # what `rlf list` says
    assert f"({count} templates over {apps} apps)" in (REPO_ROOT / "README.md").read_text()
    page = " ".join((REPO_ROOT / "rlfactory_envs" / "android" / "README.md").read_text().split())
    assert f"({count} task templates over {apps} apps)" in page and f"{count} templates x 1,000 seeds" in page
    assert (f"{count} templates ({kinds['action']} change the phone, {kinds['answer']} are questions, "
            f"{kinds['infeasible']} are infeasible)") in page


@pytest.mark.parametrize("template", TEMPLATES, ids=IDS)
def test_the_reference_plan_succeeds_from_the_screen_text(template):
    for seed in range(8):
        device, initial, params = build_device(template, seed)
        taken = run_plan(device, template.plan(params))
        verdict = template.verdict(device, initial, params, device.ending)
        assert verdict.success, (seed, params, verdict, taken)
        assert verdict.progress == 1.0
        for wrong in (None, {"action_type": "status", "goal_status": "infeasible" if template.kind != "infeasible"
                                                              else "complete"}):
            unfinished = template.verdict(device, initial, params, wrong)
            assert not unfinished.success and unfinished.progress < 1.0, (seed, wrong, unfinished)
        assert len(taken) == optimal_steps(template, seed)


@pytest.mark.parametrize("template", TEMPLATES, ids=IDS)
def test_ending_at_once_fails(template):
    for seed in range(8):
        device, initial, params = build_device(template, seed)
        for ending in ENDINGS:
            verdict = template.verdict(device, initial, params, ending)
            assert not verdict.success and verdict.progress == 0.0, (seed, ending, verdict)


@pytest.mark.parametrize("template", TEMPLATES, ids=IDS)
def test_instances_are_deterministic_and_goals_name_their_parameters(template):
    first, _, params = build_device(template, 3)
    second, _, again = build_device(template, 3)
    assert params == again and first.state == second.state
    assert template.goal_text(params).strip()
    assert "{" not in template.goal_text(params)


def random_action(rng: random.Random, device) -> tuple[str, dict]:
    n = len(device.elements())
    kind = rng.choice(["click", "click", "click", "long_press", "double_tap", "input_text", "keyboard_enter",
                       "scroll", "swipe", "navigate_back", "navigate_home", "open_app", "wait", "status", "answer"])
    if kind in ("click", "long_press", "double_tap"):
        return kind, {"index": rng.randrange(n + 2)}
    if kind == "input_text":
        return kind, {"index": rng.randrange(n + 2), "text": rng.choice(["hello", "12", "Alice", "test note", ""])}
    if kind in ("scroll", "swipe"):
        return kind, {"direction": rng.choice(["up", "down", "left", "right"])}
    if kind == "open_app":
        return kind, {"app_name": rng.choice([name for name in device.apps if name != "Launcher"] + ["Chrome"])}
    if kind == "status":
        return kind, {"goal_status": rng.choice(["complete", "infeasible"])}
    if kind == "answer":
        return kind, {"text": rng.choice(["yes", "no", "1", "3", "none"])}
    return kind, {}


def test_random_agents_almost_never_succeed():
    rng = random.Random(0)
    wins, episodes = {}, 0
    for template in TEMPLATES:
        for seed in range(12):
            device, initial, params = build_device(template, seed)
            for _ in range(20):
                kind, arguments = random_action(rng, device)
                try:
                    perform(device, kind, arguments)
                except DeviceError:
                    pass
                if device.ending is not None:
                    break
            episodes += 1
            if template.verdict(device, initial, params, device.ending).success:
                wins[template.name] = wins.get(template.name, 0) + 1
    assert sum(wins.values()) <= episodes * 0.01, wins
    assert all(count <= 1 for count in wins.values()), wins
