"""Questions with few possible answers: no fixed answer is right on more than 2% of a question template's seeds, and
an answer given without a look at the question's app is not taken (``TaskTemplate.looked_at_the_phone``), so the
audit's fixed-answer hack per template (``rlfactory_envs.android.hacks.FixedAnswerHack``) earns nothing."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import rlfactory_envs  # noqa: F401 - registers the ids
from rlfactory_envs.android.hacks import FixedAnswerHack, android_hacks, modal_answer
from rlfactory_tool_servers.android.phone.tasks import all_templates
from rlfactory_tool_servers.android.phone.tasks.base import LOOKED, initial_state, instance_params

QUESTIONS = [template.name for template in all_templates() if template.kind == "answer"]


def call(name: str, **arguments) -> str:
    return f'<tool_call>{json.dumps({"name": name, "arguments": arguments})}</tool_call>'


@pytest.mark.parametrize("template", QUESTIONS)
def test_no_fixed_answer_is_right_on_more_than_2_percent_of_the_seeds(template):
    answer, share = modal_answer(template, 1000)
    assert share <= 0.02, (answer, share)  # before: 8.7% "Central Station" (location), 4.4% (next event)


def test_the_audit_has_one_fixed_answer_hack_per_question_template():
    hacks = [hack for hack in android_hacks() if isinstance(hack, FixedAnswerHack)]
    assert [hack.template for hack in hacks] == QUESTIONS and len(QUESTIONS) == 8
    assert hacks[0].name == f"fixed_answer_{QUESTIONS[0]}"


@pytest.fixture(scope="module")
def env():
    env = gym.make("rlf/Android-v0")
    yield env
    env.close()


@pytest.mark.parametrize("template", QUESTIONS)
def test_the_right_answer_counts_only_after_a_look_at_the_app(env, template):
    definition = next(t for t in all_templates() if t.name == template)
    params = instance_params(definition, 7)
    right = definition.expected_answer(initial_state(definition, 7, params), params)
    env.reset(options={"task": {"template": template, "seed": 7}})
    _, reward, terminated, _, info = env.step(call("answer", text=right))
    verdict = info["android_eval"]
    assert terminated and reward == 0.0 and verdict["progress"] == 0.0
    assert verdict["subgoals"][LOOKED] is False and verdict["subgoals"]["right answer"] is False
    env.reset(options={"task": {"template": template, "seed": 7}})
    env.step(call("open_app", app_name=definition.app))
    _, reward, terminated, _, info = env.step(call("answer", text=right))
    assert terminated and reward == 1.0 and info["android_eval"]["subgoals"][LOOKED] is True
