"""The generic battery writes the responses it claims to, on the embedded sample of every family (the parser of each
env reads them as intended), and the env survives each one."""

from __future__ import annotations

import asyncio

import pytest

from rlfactory_envs import make_env
from rlfactory_envs.audit.battery import env_battery
from rlfactory_envs.audit.hacks import (DISTRACTORS, DONT_KNOW, OTHER_WRONG_ANSWER, WRONG_ANSWER, control_hack,
                                        generic_hacks, response_size_limit)
from rlfactory_envs.kernel.reward_hacks import HackNotApplicable
from rlfactory_envs.kernel.families import tooling_of

ENV_IDS = ["rlf/Search-NQ-v0", "rlf/Search-NQ-SearchR1-v0", "rlf/NL2SQL-Spider-v0", "rlf/Travel-v0", "rlf/MCP-v0"]


@pytest.fixture(scope="module", params=ENV_IDS)
def started(request):
    """An env reset on one task of its sample, and its first observation."""
    env = make_env(request.param)
    observation, _ = env.reset(seed=3)
    yield env, observation
    env.close()


def respond(name, env, observation) -> str:
    """The response of the hack ``name`` of ``env``'s battery (a family's own replaces a generic one)."""
    hacks = {hack.name: hack for hack in [control_hack(), *env_battery(env)]}
    return asyncio.run(hacks[name].act(env, observation))


def answer_of(env, response: str) -> str | None:
    return env.parser.parse(response).answer


def test_control_answers_the_reference(started):
    env, observation = started
    reference = tooling_of(env).reference_answer(env, env.task)
    assert reference
    assert answer_of(env, respond("control", env, observation)) == reference.strip()


@pytest.mark.parametrize(("name", "answer"), [("empty_answer", ""), ("whitespace_answer", ""),
                                              ("punctuation_dot", "."), ("punctuation_dashes", "---"),
                                              ("punctuation_paren", ")"), ("format_only", DONT_KNOW)])
def test_fixed_answers(started, name, answer):
    env, observation = started
    response = respond(name, env, observation)
    assert answer_of(env, response) == answer
    if name == "whitespace_answer":
        assert response == f"<{env.answer_tag}> \n\t </{env.answer_tag}>"
    if name == "format_only":
        assert response.startswith("<think>\n") and "</think>" in response


def test_answer_hidden_in_reasoning(started):
    env, observation = started
    response = respond("answer_in_reasoning", env, observation)
    reasoning, _, rest = response.partition("</think>")
    assert tooling_of(env).reference_answer(env, env.task) in reasoning and tooling_of(env).reference_answer(env, env.task) not in rest
    assert answer_of(env, response) == WRONG_ANSWER


def test_stuffed_candidates(started):
    env, observation = started
    reference = tooling_of(env).reference_answer(env, env.task)
    answer = answer_of(env, respond("stuffed_candidates", env, observation))
    if env.tasks.name == "rlf-travel-sample":  # the family's own: the reference plan between two wrong plans
        head, _, tail = answer.partition(reference)
        assert head.endswith(", ") and tail.startswith(" or ") and head.startswith("[{") and tail.endswith("}]")
        return
    assert reference in answer and answer.count(", ") >= len(DISTRACTORS) - 1 and " or " in answer
    assert all(candidate in answer for candidate in DISTRACTORS)
    assert not answer.startswith(reference) and not answer.endswith(reference)


def test_repeated_answer_tags(started):
    env, observation = started
    reference = tooling_of(env).reference_answer(env, env.task)
    response = respond("repeated_answer_tags", env, observation)
    blocks = response.split("\n")
    assert blocks == [f"<answer>{WRONG_ANSWER}</answer>", f"<answer>{reference}</answer>",
                      f"<answer>{OTHER_WRONG_ANSWER}</answer>"]
    assert answer_of(env, response) == WRONG_ANSWER  # the first block is the answer


def test_nested_answer_tags(started):
    env, observation = started
    reference = tooling_of(env).reference_answer(env, env.task)
    response = respond("nested_answer_tags", env, observation)
    if env.tasks.name == "rlf-travel-sample":
        assert response.count("<answer>") == 3 and reference in response
        return
    assert response == f"<answer>{WRONG_ANSWER} <answer>{reference}</answer></answer>"
    assert answer_of(env, response) == f"{WRONG_ANSWER} <answer>{reference}"


def test_longest_response_follows_a_limit_that_is_not_the_default():
    """The limit is the env's ``limits.max_action_chars``: the hack once read an attribute no env has and sent
    65,536 characters, past a 4,096 limit, so its wrong answer was never read and the row tested nothing."""
    env = make_env("rlf/Search-NQ-v0", max_action_chars=4096)
    try:
        env.reset(seed=0)
        response = respond("longest_response", env, "")
        assert len(response) == response_size_limit(env) == 4096
        assert answer_of(env, response) == WRONG_ANSWER
    finally:
        env.close()


def test_longest_response_fills_the_limit_and_earns_nothing(started):
    env, observation = started
    response = respond("longest_response", env, observation)
    assert len(response) == response_size_limit(env) == env.limits.max_action_chars
    assert response.endswith(f"<answer>{WRONG_ANSWER}</answer>")
    assert answer_of(env, response) == WRONG_ANSWER
    rewards = []
    while not env.done:  # travel refuses an unreadable plan until its last turn
        _, reward, terminated, _, info = env.step(response)
        rewards.append(reward)
    assert set(rewards) == {0.0} and terminated and info["answer"] == WRONG_ANSWER
    env.reset(seed=3)


def test_the_generic_battery_is_what_the_report_lists():
    names = [hack.name for hack in generic_hacks()]
    assert names == ["empty_answer", "whitespace_answer", "punctuation_dot", "punctuation_dashes", "punctuation_paren",
                     "answer_in_reasoning", "stuffed_candidates", "repeated_answer_tags", "nested_answer_tags",
                     "format_only", "longest_response", "think_left_open", "stray_think_close"]
    assert all(hack.description for hack in generic_hacks())


def test_hacks_that_need_the_reference_are_not_applicable_without_one():
    env = make_env("rlf/MCP-v0", data_path=None)
    try:
        env.reset(options={"task": {"question": "What is two plus two?"}})
        assert tooling_of(env).reference_answer(env, env.task) is None
        needing = ["control", "answer_in_reasoning", "stuffed_candidates", "repeated_answer_tags",
                   "nested_answer_tags"]
        for name in needing:
            with pytest.raises(HackNotApplicable):
                respond(name, env, "")
        assert answer_of(env, respond("empty_answer", env, "")) == ""
    finally:
        env.close()
