"""A user's env spec (examples/custom_env/env.yaml: an MCP server over stdio, a JSONL of questions, a reward
function of the user's) trained through verl 0.9's real machinery: ``prepare_data --trainer verl`` from the spec,
RLHFDataset reading the rows, AgentLoopWorker playing them with RlfAgentLoop (the rollout server scripted: real
Qwen3 token ids of tool calls to ``multiply``/``add`` and an answer), and verl's reward-manager path through
``compute_score``. The rows are written from a copy of the spec's folder whose spec file is then deleted: they
play from what they carry. The oracle is the same episode played by text on a fresh env built from the example's
own spec file."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("verl", reason="the verl adapter tests run in .venv-verl (bash .ci/verl.sh): verl is not "
                                   "installed here")

import pyarrow.parquet as pq  # noqa: E402
from verl.trainer.ppo.reward import load_reward_manager  # noqa: E402

from rlfactory_adapters.verl import compute_score  # noqa: E402
from rlfactory_envs.generic.env import DEFAULT_SYSTEM_PROMPT  # noqa: E402
from tests.adapters.verl.harness import (  # noqa: E402
    ScriptedServer,
    agent_loop_worker,
    dataset_batch,
    mask_runs,
    prepared_rows,
    qwen3_model_dir,
    replay,
    scripted_logprob,
    valid_ids,
)
from tests.adapters.env_spec_example import SPEC, expected_env_kwargs  # noqa: E402

GENERIC_ID = "rlf/MCP-v0"
REPEAT = 2
QUESTIONS = [json.loads(line) for line in (SPEC.parent / "questions.jsonl").read_text().splitlines() if line.strip()]
SYSTEM_PROMPT = DEFAULT_SYSTEM_PROMPT.format(tag="answer")
CALLS = {"q1": ("multiply", 12, 17), "q2": ("multiply", 23.5, 8), "q3": ("add", 1250, 380)}
"""The tool call that answers each question, and (below) the tool's own result as the MCP server prints it."""
RESULTS = {"q1": 12.0 * 17, "q2": 23.5 * 8, "q3": 1250.0 + 380}
ANSWERS = {"q1": ("204", 1.0), "q2": ("178", 0.0), "q3": ("1,630", 1.0)}
"""The model's answer and the spec's reward for it (``numeric_match``: the number, commas allowed)."""


def calc_call(name: str, a: float, b: float) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": {"a": a, "b": b}}) + "\n</tool_call>"


def episode_script(task: dict) -> list[str]:
    """One call of the calc server's tool, then the answer, in Qwen3's format with its EOS."""
    name, a, b = CALLS[task["id"]]
    return [f"<think>\nI should use the {name} tool.\n</think>\n\n{calc_call(name, a, b)}<|im_end|>",
            f"<think>\nThe tool gave the result.\n</think>\n\n<answer> {ANSWERS[task['id']][0]} </answer><|im_end|>"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return qwen3_model_dir(tmp_path_factory.mktemp("qwen3-model"))


def spec_rows(tmp_path_factory, agent_name: str) -> tuple[Path, list[dict], Path]:
    """The example's folder copied to tmp, its rows written from the copy's spec (run from another folder), then
    the copy's spec file deleted: (parquet, tasks, the copy's folder)."""
    folder = tmp_path_factory.mktemp("user") / "custom_env"
    shutil.copytree(SPEC.parent, folder, ignore=shutil.ignore_patterns("__pycache__"))
    with contextlib.chdir(tmp_path_factory.mktemp("elsewhere")):
        parquet, tasks = prepared_rows(tmp_path_factory.mktemp("data"), folder / SPEC.name, None, agent_name)
    (folder / SPEC.name).unlink()
    return parquet, tasks, folder


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    return spec_rows(tmp_path_factory, "rlf_agent")


@pytest.fixture(scope="module")
def parquet(prepared):
    return prepared[0]


@pytest.fixture(scope="module")
def tasks(prepared):
    return prepared[1]


@pytest.fixture(scope="module")
def user_folder(prepared):
    return prepared[2]


def test_prepare_data_writes_rows_of_the_generic_env_with_the_spec_resolved(parquet, tasks, user_folder):
    rows = pq.read_table(parquet).to_pylist()
    assert len(rows) == len(QUESTIONS) == 3
    assert tasks == QUESTIONS  # each row carries its task in full
    for index, (row, question) in enumerate(zip(rows, QUESTIONS)):
        assert row["agent_name"] == "rlf_agent" and row["data_source"] == "questions" and row["ability"] == "mcp"
        assert row["reward_model"] == {"style": "rule", "ground_truth": question["ground_truth"]}
        assert row["prompt"] == [{"role": "system", "content": SYSTEM_PROMPT},
                                 {"role": "user", "content": question["question"]}]
        extra = row["extra_info"]
        assert extra["env_id"] == GENERIC_ID and extra["index"] == index and extra["split"] == "train"
        env_kwargs = json.loads(extra["env_kwargs"])
        assert env_kwargs == expected_env_kwargs(user_folder)  # the spec's settings, its paths made absolute
        assert Path(env_kwargs["data_path"]).is_absolute() and Path(env_kwargs["data_path"]).is_file()
        assert (Path(env_kwargs["tool_servers"]["mcpServers"]["calc"]["cwd"]) / "calc_server.py").is_file()
    assert not (user_folder / SPEC.name).exists()  # what follows plays without the spec file


def test_rlhf_dataset_reads_the_spec_rows(model_dir, parquet, tasks, user_folder):
    worker = agent_loop_worker(model_dir, server=None)
    batch = dataset_batch(parquet, worker)
    assert len(batch) == len(tasks)
    for i, task in enumerate(tasks):
        assert batch.non_tensor_batch["agent_name"][i] == "rlf_agent"
        extra = batch.non_tensor_batch["extra_info"][i]
        assert extra["env_id"] == GENERIC_ID and json.loads(extra["task"]) == task
        assert json.loads(extra["env_kwargs"]) == expected_env_kwargs(user_folder)
        raw_prompt = batch.non_tensor_batch["raw_prompt"][i]
        assert raw_prompt[0] == {"role": "system", "content": SYSTEM_PROMPT}
        assert raw_prompt[-1]["content"] == task["question"]
        assert batch.non_tensor_batch["reward_model"][i]["ground_truth"] == task["ground_truth"]


def test_spec_episodes_through_the_worker_match_a_replay_on_the_spec(model_dir, parquet, tasks):
    worker = agent_loop_worker(model_dir, server=None)
    server = ScriptedServer(worker.tokenizer, {task["question"]: episode_script(task) for task in tasks})
    worker.llm_client = server
    output = asyncio.run(worker.generate_sequences(dataset_batch(parquet, worker, repeat=REPEAT)))
    tokenizer = worker.tokenizer

    assert len(output) == len(tasks) * REPEAT
    for i in range(len(output)):
        task = tasks[i // REPEAT]
        script = episode_script(task)
        expected = ANSWERS[task["id"]][1]
        prompt_ids, response_ids, mask, logprobs = valid_ids(output, i)
        # the oracle: a fresh env built from the example's own spec file, played by text
        prompt, transcript, reward, observations = replay(tokenizer, str(SPEC), task, script)

        # the rendered prompt: the spec's system prompt, the calc server's tool schemas, the question
        assert tokenizer.decode(prompt_ids, skip_special_tokens=False) == prompt
        assert prompt.startswith(f"<|im_start|>system\n{SYSTEM_PROMPT}\n\n# Tools\n")
        for name, description in (("multiply", "Multiply two numbers."), ("add", "Add two numbers.")):
            assert f'"name": "{name}", "description": "{description}"' in prompt
        assert prompt.endswith(f"<|im_start|>user\n{task['question']}<|im_end|>\n<|im_start|>assistant\n")

        assert tokenizer.decode(response_ids, skip_special_tokens=False) == transcript
        assert mask_runs(response_ids, mask, 1) == [tokenizer.encode(r, add_special_tokens=False) for r in script]
        env_turns = [tokenizer.decode(run, skip_special_tokens=False) for run in mask_runs(response_ids, mask, 0)]
        assert env_turns == observations[:-1]
        # the calc server's answer reached the model as env tokens (mask 0)
        assert env_turns == [f"\n<|im_start|>user\n<tool_response>\n{RESULTS[task['id']]!r}\n</tool_response>"
                             "<|im_end|>\n<|im_start|>assistant\n"]
        assert logprobs == pytest.approx([scripted_logprob(t) if m else 0.0 for t, m in zip(response_ids, mask)])

        assert reward == expected  # the spec's own reward function (a built-in exact match would miss "1,630")
        assert output.batch["rm_scores"][i].sum().item() == pytest.approx(expected)
        assert output.batch["rm_scores"][i][len(response_ids) - 1].item() == pytest.approx(expected)
        assert output.non_tensor_batch["__num_turns__"][i] == 1 + 2 + 1  # prompt, 2 responses, 1 tool turn
        assert output.non_tensor_batch["rlf_env_id"][i] == GENERIC_ID
        assert output.non_tensor_batch["rlf_stop_reason"][i] == "answer"
        assert output.non_tensor_batch["rlf_answer"][i] == ANSWERS[task["id"]][0]
        assert output.non_tensor_batch["rlf_reward_parts"][i] == {"used_tool": 1.0}  # the spec reward's part
        assert output.non_tensor_batch["rlf_metrics"][i]["tool_calls"] == 1.0
        assert output.non_tensor_batch["score"][i] == expected and output.non_tensor_batch["answered"][i] == 1.0
    # rlf_agent logs no reward parts as reward_extra_info; a user's own loop entry names them (next test)
    assert set(output.meta_info["reward_extra_keys"]) == {"score", "answered"}

    # token-in/token-out: each call got the previous call's ids and its generated ids unchanged
    assert len(server.calls) == 2 * len(output)
    by_request: dict[str, list] = {}
    for request_id, call_ids, _, returned in server.calls:
        by_request.setdefault(request_id, []).append((call_ids, returned))
    for (first_ids, first_returned), (second_ids, _) in by_request.values():
        assert second_ids[: len(first_ids) + len(first_returned)] == first_ids + first_returned


USER_AGENT_LOOPS = """\
# a user's own agent loop entry: the spec's reward part logged per sample as reward_extra_info
- name: calc_agent
  _target_: rlfactory_adapters.verl.agent_loop.RlfAgentLoop
  env_id: null
  env_kwargs: {}
  reward_parts: [used_tool]
"""
UNTOOLED = {  # q1 answered without a tool, q2 after an unknown tool (an error), q3 after add with a wrong number
    "q1": (["<think>\nEasy.\n</think>\n\n<answer> 204 </answer><|im_end|>"], 1.0, 0.0, 1 + 1),
    "q2": ([f"{calc_call('divide', 23.5, 8)}<|im_end|>", "<answer> 188 </answer><|im_end|>"], 1.0, 0.0, 1 + 2 + 1),
    "q3": ([f"{calc_call('add', 1250, 380)}<|im_end|>", "<answer> 1620 </answer><|im_end|>"], 0.0, 1.0, 1 + 2 + 1),
}


def test_a_user_agent_loop_entry_logs_the_spec_reward_parts_as_reward_extra_info(model_dir, tmp_path_factory):
    parquet, tasks, _ = spec_rows(tmp_path_factory, "calc_agent")
    loops = tmp_path_factory.mktemp("loops") / "agent_loop.yaml"
    loops.write_text(USER_AGENT_LOOPS)
    worker = agent_loop_worker(model_dir, server=None, agent_loop_config=loops)
    worker.llm_client = ScriptedServer(worker.tokenizer, {t["question"]: UNTOOLED[t["id"]][0] for t in tasks})
    output = asyncio.run(worker.generate_sequences(dataset_batch(parquet, worker)))

    assert set(output.meta_info["reward_extra_keys"]) == {"score", "answered", "used_tool"}
    for i, task in enumerate(tasks):
        script, score, used_tool, num_turns = UNTOOLED[task["id"]]
        _, response_ids, _, _ = valid_ids(output, i)
        _, transcript, reward, _ = replay(worker.tokenizer, str(SPEC), task, script)
        assert worker.tokenizer.decode(response_ids, skip_special_tokens=False) == transcript
        assert reward == score == output.batch["rm_scores"][i].sum().item()
        assert output.non_tensor_batch["used_tool"][i] == used_tool  # reward_extra_info, one key per part
        assert output.non_tensor_batch["rlf_reward_parts"][i] == {"used_tool": used_tool}
        assert output.non_tensor_batch["__num_turns__"][i] == num_turns
    assert "Error: unknown tool 'divide'. Available tools: add, multiply." in \
        worker.tokenizer.decode(valid_ids(output, 1)[1], skip_special_tokens=False)


def _reward_file() -> str:
    import rlfactory_adapters.verl.reward as reward_module

    return reward_module.__file__


def test_verl_reward_manager_scores_the_decoded_spec_responses_like_the_rollout(model_dir, parquet, tasks):
    worker = agent_loop_worker(model_dir, server=None, extra=[
        "reward.custom_reward_function.path=" + _reward_file(),
        "reward.custom_reward_function.name=compute_score",
    ])
    worker.llm_client = ScriptedServer(worker.tokenizer, {task["question"]: episode_script(task) for task in tasks})
    output = asyncio.run(worker.generate_sequences(dataset_batch(parquet, worker)))

    async def score_each() -> list[dict]:
        manager = load_reward_manager(worker.config, worker.tokenizer)  # binds to the running loop, as in verl
        return [await manager.run_single(output[i:i + 1]) for i in range(len(output))]

    results = asyncio.run(score_each())
    assert [result["reward_score"] for result in results] == [ANSWERS[task["id"]][1] for task in tasks]
    for i, result in enumerate(results):
        assert result["reward_score"] == pytest.approx(output.batch["rm_scores"][i].sum().item())


def test_compute_score_on_a_decoded_response_for_a_spec_row(parquet, tasks, qwen3_tokenizer):
    rows = pq.read_table(parquet).to_pylist()
    row, task = rows[2], tasks[2]  # q3: 1250 + 380
    assert task["id"] == "q3"

    def response(answer: str) -> str:
        return (f"<think>\nadd them\n</think>\n\n{calc_call('add', 1250, 380)}<|im_end|>\n<|im_start|>user\n"
                "<tool_response>\n1630.0\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\nok\n</think>"
                f"\n\n<answer> {answer} </answer><|im_end|>")

    def score(solution: str, **kwargs):
        return compute_score(row["data_source"], solution, row["reward_model"]["ground_truth"], row["extra_info"],
                             **kwargs)

    assert score(response("1630")) == 1.0 and score(response("1,630")) == 1.0
    assert score(response("1620")) == 0.0
    assert score(response("one thousand six hundred thirty")) == 0.0  # not a number: the user's reward says 0
    assert score("<answer> 1630") == 0.0  # no answer
    # as verl's NaiveRewardManager decodes it: without special tokens
    decoded = qwen3_tokenizer.decode(qwen3_tokenizer.encode(response("1630"), add_special_tokens=False),
                                     skip_special_tokens=True)
    assert "<|im_start|>" not in decoded and score(decoded) == 1.0
    assert score(decoded.replace("<answer> 1630", "<answer> 1631")) == 0.0
    parts = score(response("1630"), reward_parts=["used_tool", "no_such_part"])
    assert set(parts) == {"score", "used_tool", "no_such_part"} and parts["score"] == 1.0
    assert parts["no_such_part"] == 0.0
