"""rlf/Android-v0 through the real MCP server: prompts, actions (tool calls and AndroidWorld JSON), invalid actions,
endings, rewards from the server's verdict, phones made and released per episode, the scripted policy on every
template, a stdio server process, and the env-semantics properties."""

from __future__ import annotations

import asyncio
import json

import gymnasium as gym
import pytest

import rlfactory_envs  # noqa: F401
from rlfactory_envs import EnvBatch
from rlfactory_envs.kernel.tool_call import ToolCall
from rlfactory_tool_servers.android.phone.tasks import all_templates
from rlfactory_tool_servers.android.phone.ui import parse_t3a
from tests.test_cli import rlf
from rlfactory_envs.kernel.families import tooling_of


def call(name: str, **arguments) -> str:
    return f'<tool_call>{json.dumps({"name": name, "arguments": arguments})}</tool_call>'


def pinned(template: str, seed: int = 0) -> dict:
    return {"task": {"template": template, "seed": seed}}


@pytest.fixture
def env():
    made = gym.make("rlf/Android-v0", max_turns=8).unwrapped
    yield made
    made.close()


def screen_of(env) -> list[dict]:
    result = env.toolbox.call_many([ToolCall("get_screen", {}, episode=env.episode_id)])[0]
    assert not result.is_error, result.text
    return parse_t3a(result.text)


def test_reset_shows_the_goal_and_the_screen_and_describes_the_task(env):
    obs, info = env.reset(options=pinned("ContactsAddContact", 4))
    task = info["task"]
    assert set(task) >= {"template", "params", "optimal_steps", "goal", "kind", "app"}
    assert task["goal"] in obs and "UI element 0: UIElement(text='Home'" in obs
    assert task["optimal_steps"] >= 5
    assert info["messages"][0]["role"] == "system" and "AndroidWorld" in info["messages"][0]["content"]
    shown = {tool["function"]["name"] for tool in info["tools"]}
    assert {"click", "input_text", "open_app", "status", "answer", "get_screen"} <= shown
    assert not shown & {"device_open", "device_verify", "device_close"}
    assert all("session" not in tool["function"]["parameters"]["properties"] for tool in info["tools"])


def test_seeds_spread_over_every_template(env):
    seen = {env.reset(seed=seed)[1]["task"]["template"] for seed in range(len(all_templates()) * 12)}
    assert len(seen) >= 0.9 * len(all_templates())


def test_the_same_seed_gives_the_same_task_and_screen(env):
    first = env.reset(seed=11)
    again = env.reset(seed=11)
    assert first[0] == again[0] and first[1]["task"] == again[1]["task"]


def test_an_action_shows_the_new_screen(env):
    env.reset(options=pinned("ContactsAddContact"))
    obs, reward, terminated, truncated, info = env.step(call("open_app", app_name="contacts"))
    assert "Opened Contacts." in obs and "Search contacts" in obs
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert not info["tool_results"][0]["is_error"]


@pytest.mark.parametrize("action, message", [
    (call("click", index=999), "there is no UI element 999"),
    (call("input_text", index=2, text="hello"), "is not a text field"),
    (call("open_app", app_name="Photoshop"), "no app named 'Photoshop'"),
    (call("scroll", direction="sideways"), "direction must be one of"),
    (call("click", index="two"), "index"),
])
def test_an_invalid_action_is_reported_and_changes_nothing(env, action, message):
    env.reset(options=pinned("ContactsAddContact"))
    before = screen_of(env)
    obs, reward, terminated, truncated, info = env.step(action)
    assert message in obs and info["tool_results"][0]["is_error"]
    assert not terminated and not truncated
    assert screen_of(env) == before


def test_androidworld_action_json_in_the_text_is_an_action(env):
    env.reset(options=pinned("ContactsAddContact"))
    obs, *_ = env.step('Reason: the contacts app holds contacts.\nAction: {"action_type": "open_app", '
                       '"app_name": "Contacts"}')
    assert "Opened Contacts." in obs


def test_a_solved_task_pays_one_and_reports_the_verdict(env):
    obs, info = env.reset(options=pinned("ContactsPhoneNumber", 2))
    name = info["task"]["params"]["name"]
    obs, *_ = env.step(call("open_app", app_name="Contacts"))
    obs, *_ = env.step(call("input_text", index=1, text=name))
    row = next(e for e in parse_t3a(obs) if e.get("text") == name and e["resource_name"].endswith(":id/contact_name"))
    obs, *_ = env.step(call("click", index=row["index"]))
    number = next(e["text"] for e in parse_t3a(obs) if e.get("resource_name", "").endswith("contact_number"))
    obs, reward, terminated, truncated, info = env.step(call("answer", text=number))
    assert (obs, reward, terminated, truncated) == ("", 1.0, True, False)
    verdict = info["android_eval"]
    assert verdict["success"] and verdict["progress"] == 1.0 and verdict["actions"] == 3
    assert info["reward_parts"]["success"] == 1.0


def test_ending_at_once_earns_nothing_and_progress_counts_no_kept_constraint(env):
    env.reset(options=pinned("ContactsEditNumber"))
    *_, reward, terminated, _, info = env.step(call("status", goal_status="complete"))
    assert terminated and reward == 0.0
    assert info["android_eval"]["progress"] == 0.0 and "new number saved" in info["reward_reason"]


def test_a_bad_status_is_refused_and_an_ending_beside_another_action_is_not_run():
    env = gym.make("rlf/Android-v0", max_tool_calls=2).unwrapped
    try:
        env.reset(options=pinned("ContactsEditNumber"))
        obs, _, terminated, _, _ = env.step(call("status", goal_status="done"))
        assert not terminated and "goal_status must be complete or infeasible" in obs
        obs, _, terminated, _, info = env.step(call("open_app", app_name="Contacts")
                                               + call("status", goal_status="complete"))
        assert not terminated and "must be the only action" in obs and "Opened Contacts." in obs
    finally:
        env.close()


def test_several_actions_of_one_response_run_in_order():
    env = gym.make("rlf/Android-v0", max_tool_calls=3).unwrapped
    try:
        env.reset(options=pinned("ContactsAddContact"))
        obs, *_ = env.step(call("open_app", app_name="Contacts") + call("click", index=1)
                           + call("input_text", index=1, text="Zed"))
        assert [e.get("text") for e in screen_of(env)][1] == "Zed"
    finally:
        env.close()


def test_max_turns_truncates_and_reward_is_that_of_no_ending():
    env = gym.make("rlf/Android-v0", max_turns=2).unwrapped
    try:
        env.reset(options=pinned("ContactsAddContact"))
        env.step(call("wait"))
        obs, reward, terminated, truncated, info = env.step(call("wait"))
        assert truncated and not terminated and reward == 0.0
        assert info["android_eval"]["subgoals"]["said complete"] is False
    finally:
        env.close()


def test_phones_are_released_when_episodes_end_reset_or_close():
    env = gym.make("rlf/Android-v0").unwrapped
    env.reset(options=pinned("ContactsAddContact"))
    first = env.episode_id
    env.step(call("status", goal_status="complete"))
    env.reset(options=pinned("ContactsAddContact"))
    second = env.episode_id
    env.reset(options=pinned("ContactsAddContact"))
    third = env.episode_id
    toolbox = env.toolbox
    gone = toolbox.call_many([ToolCall("get_screen", {}, episode=s) for s in (first, second, third)])
    assert [r.is_error for r in gone] == [True, True, False]
    assert "there is no phone for episode" in gone[0].text
    keep = gym.make("rlf/Android-v0").unwrapped  # holds the shared toolbox open after env closes
    try:
        env.close()
        assert toolbox.call_many([ToolCall("get_screen", {}, episode=third)])[0].is_error
    finally:
        keep.close()


def test_a_batch_of_a_thousand_phones_steps_together_and_releases_them_all():
    batch = EnvBatch.make("rlf/Android-v0", 1000, templates=["ContactsAddContact"], instances_per_template=4)
    try:
        resets = asyncio.run(batch.areset(seeds=list(range(1000))))
        assert all("UI element" in obs for obs, _ in resets)
        steps = asyncio.run(batch.astep([call("open_app", app_name="Contacts")] * 1000))
        assert all("Opened Contacts." in s.observation for s in steps)
        ends = asyncio.run(batch.astep([call("status", goal_status="complete")] * 1000))
        assert all(s.terminated and s.reward == 0.0 for s in ends)
        sessions = [env.episode_id for env in batch.envs]
        gone = batch.envs[0].toolbox.call_many([ToolCall("get_screen", {}, episode=s) for s in sessions[:50]])
        assert all(r.is_error for r in gone)
    finally:
        for env in batch.envs:
            env.close()


def test_the_scripted_policy_solves_every_template_from_the_observations():
    env = gym.make("rlf/Android-v0", max_turns=60).unwrapped
    policy = tooling_of(env).baseline_policy(env)
    try:
        for template in all_templates():
            for seed in (0, 5):
                obs, info = env.reset(options=pinned(template.name, seed))
                reward, done, turns = 0.0, False, 0
                while not done:
                    obs, reward, terminated, truncated, info = env.step(asyncio.run(policy.act(env, obs)))
                    done, turns = terminated or truncated, turns + 1
                assert reward == 1.0, (template.name, seed, info.get("android_eval"))
                assert turns == info["android_eval"]["actions"] + 1 == env.task.to_dict()["optimal_steps"]
    finally:
        env.close()


def test_rlf_rollout_with_the_scripted_policy_succeeds(tmp_path):
    summary = tmp_path / "summary.json"
    result = rlf("rollout", "rlf/Android-v0", "--policy", "scripted", "-n", "64", "--no-progress",
                 "--summary-json", str(summary))
    assert result.returncode == 0, result.stderr
    assert json.loads(summary.read_text())["mean_reward"] == 1.0


def test_the_server_runs_as_a_subprocess_over_stdio():
    env = gym.make("rlf/Android-v0", transport="stdio").unwrapped
    try:
        env.reset(options=pinned("ContactsDeleteMissingContact", 1))
        obs, *_ = env.step(call("open_app", app_name="Contacts"))
        assert "Opened Contacts." in obs
        *_, reward, terminated, _, info = env.step(call("status", goal_status="infeasible"))
        assert terminated and reward == 0.0  # infeasible without looking through the whole list
        assert info["android_eval"]["subgoals"]["looked for the contact"] is False
    finally:
        env.close()


def test_xml_observation_shows_nodes():
    env = gym.make("rlf/Android-v0", observation="xml").unwrapped
    try:
        obs, _ = env.reset(options=pinned("ContactsAddContact"))
        assert "<hierarchy>" in obs and '<node index="0" text="Home"' in obs
    finally:
        env.close()


def test_bad_settings_are_one_line_errors():
    with pytest.raises(Exception, match="observation='png' is not one of 't3a', 'xml'"):  # every path checks settings
        gym.make("rlf/Android-v0", observation="png")
    with pytest.raises(Exception, match="no task template 'Nope'"):
        gym.make("rlf/Android-v0", templates=["Nope"])


def test_the_audit_passes_with_the_reference_plan_as_its_control():
    from rlfactory_envs.audit import run_audit

    report = run_audit("rlf/Android-v0", n_tasks=150)
    assert report.control_ok and report.control.rate == 1.0
    assert report.failing_hacks == []
    outcomes = {outcome.name: outcome for outcome in report.hacks}
    assert {"complete_at_once", "infeasible_at_once", "random_then_complete", "random_then_infeasible",
            "browse_then_infeasible", "answer_screen_dump", "answer_with_goal_words"} <= set(outcomes)
    assert outcomes["answer_screen_dump"].tried > 0


def test_an_unknown_tool_is_answered_without_naming_the_hidden_ones(env):
    env.reset(options=pinned("ContactsAddContact"))
    for name in ("click_batch", "device_verify", "teleport"):
        obs, *_ = env.step(call(name, index=1))
        assert f"unknown tool '{name}'" in obs and "device_open" not in obs and "open_app" in obs


def test_a_step_that_fails_inside_a_batch_releases_its_phone():
    batch = EnvBatch.make("rlf/Android-v0", 2, templates=["ContactsAddContact"], instances_per_template=2)
    broken, healthy = batch.envs

    async def fail(calls):
        raise RuntimeError("a bug in the family")

    broken.run_tool_calls = fail
    try:
        asyncio.run(batch.areset(seeds=[0, 1]))
        session = broken.episode_id
        results = asyncio.run(batch.astep([call("wait")] * 2))
        assert results[0].truncated and "a bug in the family" in results[0].info["error"]
        assert "Waited" in results[1].observation
        gone = healthy.toolbox.call_many([ToolCall("get_screen", {}, episode=session)])[0]
        assert gone.is_error and "there is no phone" in gone.text
    finally:
        for env in batch.envs:
            env.close()


def test_a_renamed_answer_tag_is_the_one_the_parser_reads():
    env = gym.make("rlf/Android-v0", answer_tag="final").unwrapped
    try:
        env.reset(options=pinned("ContactsPhoneNumber", 2))
        *_, terminated, _, info = env.step("<final>555</final>")
        assert terminated and info["android_eval"]["actions"] == 0
    finally:
        env.close()
