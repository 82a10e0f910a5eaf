"""Which tasks a rollout plays: every task once in order by default, a seeded subset without repeats, random draws
only when asked; K samples per task with pass@k and mean@k; and what each trajectory line carries."""

from __future__ import annotations

import asyncio
import io
import json
from types import SimpleNamespace

import pytest

from rlfactory_envs.kernel.families import tooling_of
from rlfactory_envs.registry import ENVIRONMENTS
from rlfactory_envs.rollout.model_free import ReferencePolicy, ReplayPolicy
from rlfactory_envs.rollout.runner import TRAJECTORY_FORMAT_VERSION, run_rollouts
from rlfactory_envs.rollout.task_plan import pass_at_k, plan_tasks, sampling_metrics

TASKS = [SimpleNamespace(task_id=f"t{i}") for i in range(10)]


def test_by_default_every_task_once_in_the_datasets_order():
    plan = plan_tasks(TASKS, "d")
    assert plan.task_ids == tuple(f"t{i}" for i in range(10)) and plan.seeds == tuple(range(10))
    assert plan_tasks(TASKS, "d", 3, seed=7).task_ids == ("t0", "t1", "t2")


def test_more_tasks_than_the_dataset_has_plays_each_once_and_says_so():
    with pytest.warns(UserWarning, match="16 tasks were asked for but dataset 'd' has 10: each is played once"):
        plan = plan_tasks(TASKS, "d", 16)
    assert sorted(plan.task_ids) == sorted(f"t{i}" for i in range(10))


def test_shuffled_is_a_seeded_subset_without_repeats():
    first, again, other = (plan_tasks(TASKS, "d", 6, order="shuffled", seed=s).task_ids for s in (1, 1, 2))
    assert first == again and first != other
    assert len(set(first)) == 6 and set(first) <= {t.task_id for t in TASKS}
    assert first != tuple(f"t{i}" for i in range(6))


def test_random_leaves_the_draw_to_the_env_and_repeat_groups_the_samples():
    random = plan_tasks(TASKS, "d", 25, order="random", seed=3)
    assert random.task_ids == (None,) * 25 and random.seeds == tuple(range(3, 28))
    grouped = plan_tasks(TASKS, "d", 2, repeat=3)
    assert grouped.task_ids == ("t0",) * 3 + ("t1",) * 3 and grouped.seeds == tuple(range(6))


def test_pass_at_k_is_the_unbiased_estimate():
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2)
    assert pass_at_k(4, 0, 4) == 0.0 and pass_at_k(4, 1, 4) == 1.0 and pass_at_k(2, 0, 4) == 0.0
    metrics = sampling_metrics({"a": [(1.0, True), (0.0, False), (0.0, False)], "b": [(0.5, False)] * 3}, 3)
    assert list(metrics) == ["pass@1", "pass@2", "pass@3", "mean@3"]
    assert metrics["pass@1"] == pytest.approx(1 / 6) and metrics["pass@3"] == pytest.approx(0.5)
    assert metrics["mean@3"] == pytest.approx((1 / 3 + 0.5) / 2)


def test_a_five_row_dataset_asked_for_sixteen_plays_each_row_once(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"id": f"r{i}", "question": f"{i}+1?", "ground_truth": str(i + 1)}) + "\n"
                            for i in range(5)))
    with pytest.warns(UserWarning, match="has 5: each is played once"):
        summary, records = asyncio.run(run_rollouts(
            "rlf/MCP-v0", lambda env: ReferencePolicy(), 16, progress=False,
            env_kwargs={"data_path": str(data), "tools": ["rlfactory_envs.generic.sample_tools:calculate"]}))
    assert [r.task_id for r in records] == [f"r{i}" for i in range(5)]
    assert summary.tasks == {"dataset": "rows", "dataset_size": 5, "order": "ordered", "repeat": 1, "distinct": 5,
                             "task_ids": [f"r{i}" for i in range(5)]}
    assert "5 of 5 in rows (in the dataset's order)" in summary.table()


def test_repeated_tasks_give_pass_at_k_and_mean_at_k(tmp_path):
    replay = tmp_path / "replay.jsonl"  # the first task is answered right, the second wrong
    replay.write_text(json.dumps({"task_id": "rlf-sample-000", "responses": ["<answer>Mount Arvel</answer>"]}) + "\n"
                      + json.dumps({"task_id": "rlf-sample-001", "responses": ["<answer>no idea</answer>"]}) + "\n")
    summary, records = asyncio.run(run_rollouts("rlf/Search-NQ-v0", lambda env: ReplayPolicy(replay), 2, repeat=4,
                                                batch_size=3, progress=False))
    assert [r.task_id for r in records] == ["rlf-sample-000"] * 4 + ["rlf-sample-001"] * 4
    assert [r.solved for r in records] == [True] * 4 + [False] * 4
    assert summary.sampling == {"pass@1": 0.5, "pass@2": 0.5, "pass@4": 0.5, "mean@4": 0.5}
    assert "pass@1 / pass@2 / pass@4 / mean@4" in summary.table()
    wrong = records[-1]
    assert wrong.reward_reason.startswith("no exact match: the answer normalises to 'no idea'")


class AnswerPolicy:
    name = "answer"

    async def act(self, env, observation):
        return "<answer>0</answer>"


@pytest.mark.parametrize("env_id", sorted(ENVIRONMENTS))
def test_every_trajectory_line_carries_the_rewards_reason_parts_and_info(env_id):
    out = io.StringIO()

    def policy(env):
        if env_id == "rlf/OpenEnv-v0":  # a remote server's tasks carry no reference: any final answer ends them
            return AnswerPolicy()
        return ReferencePolicy() if env_id in ("rlf/MCP-v0", "rlf/Travel-v0") else tooling_of(env).baseline_policy(env)

    asyncio.run(run_rollouts(env_id, policy, 2, out=out, progress=False))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(lines) == 2
    for line in lines:
        assert next(iter(line)) == "format_version" and line["format_version"] == TRAJECTORY_FORMAT_VERSION
        assert line["error"] is None and line["terminated"], line["error"]
        assert isinstance(line["task_id"], str) and isinstance(line["reward_parts"], dict)
        assert "reward_reason" in line and isinstance(line["solved"], bool) and line["format_errors"] == 0
        if not env_id.startswith(("rlf/MCP", "rlf/Android", "rlf/OpenEnv")):  # rewards that say how they compared
            assert line["reward_parts"] and line["reward_info"], line
