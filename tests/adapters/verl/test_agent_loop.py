"""RlfAgentLoop inside verl 0.9's real machinery: the trainer config composed by hydra, AgentLoopWorker reading
agent_loop.yaml and instantiating the loop per sample, RLHFDataset reading the prepared parquet, the worker's
padding into a DataProto, and verl's NaiveRewardManager calling compute_score. Only the rollout server is
scripted (it returns real Qwen3 token ids for scripted responses with search tool calls and an answer)."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("verl", reason="the verl adapter tests run in .venv-verl (bash .ci/verl.sh): verl is not "
                                   "installed here")

import hydra  # noqa: E402
from verl.experimental.agent_loop.agent_loop import DictConfigWrap, _agent_loop_registry  # noqa: E402
from verl.trainer.ppo.reward import load_reward_manager  # noqa: E402

from rlfactory_adapters.prepare_data import main as prepare_data  # noqa: E402
from rlfactory_adapters.verl import RlfAgentLoop, compute_score  # noqa: E402
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

ENV_ID = "rlf/Search-NQ-v0"
ROWS = 4
REPEAT = 2


def search_call(query: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "search", "arguments": {"query": query}}) + "\n</tool_call>"


def episode_script(task: dict, correct: bool) -> list[str]:
    """Two searches, then the answer (the golden one when ``correct``), in Qwen3's format with its EOS."""
    answer = task["golden_answers"][0] if correct else "Atlantis"
    return [
        f"<think>\nI should search for this.\n</think>\n\n{search_call(task['question'])}<|im_end|>",
        f"<think>\nLet me check once more.\n</think>\n\n{search_call(answer + ' history')}<|im_end|>",
        f"<think>\nThe passages agree.\n</think>\n\n<answer> {answer} </answer><|im_end|>",
    ]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return qwen3_model_dir(tmp_path_factory.mktemp("qwen3-model"))


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    return prepared_rows(tmp_path_factory.mktemp("data"), ENV_ID, ROWS)


@pytest.fixture(scope="module")
def parquet(prepared):
    return prepared[0]


@pytest.fixture(scope="module")
def tasks(prepared):
    return prepared[1]


def scripts_for(tasks: list[dict]) -> dict[str, list[str]]:
    return {task["question"]: episode_script(task, correct=index % 2 == 0) for index, task in enumerate(tasks)}


def test_the_worker_registers_and_instantiates_the_loops_of_agent_loop_yaml(model_dir):
    worker = agent_loop_worker(model_dir, server=None)
    for name in ("rlf_agent", "rlf_search_agent"):
        loop = hydra.utils.instantiate(
            config=_agent_loop_registry[name], trainer_config=DictConfigWrap(config=worker.config),
            server_manager=None, tokenizer=worker.tokenizer, processor=worker.processor,
            hf_model_type=worker.hf_model_type, dataset_cls=worker.dataset_cls,
            data_config=DictConfigWrap(worker.config.data))
        assert isinstance(loop, RlfAgentLoop)
        assert loop.response_length == 1024 and loop.prompt_length == 1024
    assert loop.default_env_id == ENV_ID
    assert loop.reward_parts == ["exact_match", "f1", "substring_match", "format"]


def test_rlhf_dataset_reads_the_prepared_rows(model_dir, parquet, tasks):
    worker = agent_loop_worker(model_dir, server=None)
    batch = dataset_batch(parquet, worker)
    assert len(batch) == ROWS
    for i, task in enumerate(tasks):
        assert batch.non_tensor_batch["agent_name"][i] == "rlf_search_agent"
        extra = batch.non_tensor_batch["extra_info"][i]
        assert extra["env_id"] == ENV_ID and json.loads(extra["task"]) == task
        assert batch.non_tensor_batch["index"][i] == i
        assert batch.non_tensor_batch["raw_prompt"][i][-1]["content"].endswith(task["question"])
        assert batch.non_tensor_batch["reward_model"][i]["ground_truth"]["target"] == task["golden_answers"]


def test_search_episodes_through_the_worker_match_the_env_transcript(model_dir, parquet, tasks):
    server = None
    worker = agent_loop_worker(model_dir, server=None)
    server = ScriptedServer(worker.tokenizer, scripts_for(tasks))
    worker.llm_client = server
    batch = dataset_batch(parquet, worker, repeat=REPEAT)
    output = asyncio.run(worker.generate_sequences(batch))
    tokenizer = worker.tokenizer

    assert len(output) == ROWS * REPEAT
    assert output.batch["responses"].shape[1] == 1024 and output.batch["prompts"].shape[1] == 1024
    for i in range(len(output)):
        task = tasks[i // REPEAT]
        script = episode_script(task, correct=(i // REPEAT) % 2 == 0)
        prompt_ids, response_ids, mask, logprobs = valid_ids(output, i)
        prompt, transcript, reward, observations = replay(tokenizer, ENV_ID, task, script)

        assert tokenizer.decode(prompt_ids, skip_special_tokens=False) == prompt
        assert tokenizer.decode(response_ids, skip_special_tokens=False) == transcript
        # mask 1 exactly on the model's tokens, which are the scripted responses' ids as generated
        model_runs = mask_runs(response_ids, mask, 1)
        assert model_runs == [tokenizer.encode(r, add_special_tokens=False) for r in script]
        assert [tokenizer.decode(run, skip_special_tokens=False) for run in mask_runs(response_ids, mask, 0)] == \
            observations[:-1]
        assert logprobs == pytest.approx([scripted_logprob(t) if m else 0.0 for t, m in zip(response_ids, mask)])

        assert reward == (1.0 if (i // REPEAT) % 2 == 0 else 0.0)
        assert output.batch["rm_scores"][i].sum().item() == pytest.approx(reward)
        assert output.batch["rm_scores"][i][len(response_ids) - 1].item() == pytest.approx(reward)
        assert output.non_tensor_batch["__num_turns__"][i] == 1 + 3 + 2  # prompt, 3 responses, 2 tool turns
        assert output.non_tensor_batch["rlf_stop_reason"][i] == "answer"
        parts = output.non_tensor_batch["rlf_reward_parts"][i]
        assert parts["exact_match"] == reward and parts["format"] == 1.0
        assert output.non_tensor_batch["exact_match"][i] == reward  # reward_extra_info, one key per part
        assert output.non_tensor_batch["answered"][i] == 1.0
        assert output.non_tensor_batch["max_global_steps"][i] == 7

    assert set(output.meta_info["reward_extra_keys"]) == {"score", "answered", "exact_match", "f1",
                                                          "substring_match", "format"}
    # token-in/token-out: each call of a sample got the previous call's ids, its generated ids unchanged, then the
    # observation; the budget asked for is what is left of response_length; the last call plus its tokens is the
    # sample's whole sequence.
    assert len(server.calls) == 3 * ROWS * REPEAT
    by_request: dict[str, list] = {}
    for request_id, call_ids, params, returned in server.calls:
        by_request.setdefault(request_id, []).append((call_ids, params, returned))
    assert len(by_request) == ROWS * REPEAT
    sequences = []
    for calls in by_request.values():
        prompt_length = len(calls[0][0])
        for (ids, _, returned), (next_ids, _, _) in zip(calls, calls[1:]):
            assert next_ids[: len(ids) + len(returned)] == ids + returned
        for ids, params, _ in calls:
            assert params["logprobs"] is True and params["max_tokens"] == 1024 - (len(ids) - prompt_length)
            assert "stop" not in params and "include_stop_str_in_output" not in params  # Qwen3 stops at its EOS
        sequences.append(calls[-1][0] + calls[-1][2])
    assert sorted(sequences) == sorted(p + r for p, r, _, _ in (valid_ids(output, i) for i in range(len(output))))


def test_a_response_cut_at_rollout_response_length_keeps_ids_mask_and_logprobs_aligned(model_dir, parquet, tasks):
    worker = agent_loop_worker(model_dir, server=None, response_length=150)
    worker.llm_client = ScriptedServer(worker.tokenizer, scripts_for(tasks))
    output = asyncio.run(worker.generate_sequences(dataset_batch(parquet, worker)))
    tokenizer = worker.tokenizer

    assert output.batch["responses"].shape[1] == 150
    for i in range(len(output)):
        _, response_ids, mask, logprobs = valid_ids(output, i)
        assert len(response_ids) == 150 == len(mask) == len(logprobs)
        assert logprobs == pytest.approx([scripted_logprob(t) if m else 0.0 for t, m in zip(response_ids, mask)])
        script = episode_script(tasks[i], correct=i % 2 == 0)
        first = tokenizer.encode(script[0], add_special_tokens=False)
        assert response_ids[: len(first)] == first and mask[: len(first)] == [1] * len(first)
        assert output.non_tensor_batch["rlf_stop_reason"][i] == "response_length"
        assert output.batch["rm_scores"][i].sum().item() == 0.0
        assert output.non_tensor_batch["answered"][i] == 0.0


def test_verl_reward_manager_scores_the_decoded_response_like_the_rollout(model_dir, parquet, tasks):
    worker = agent_loop_worker(model_dir, server=None, extra=[
        "reward.custom_reward_function.path=" + str(_reward_file()),
        "reward.custom_reward_function.name=compute_score",
    ])
    worker.llm_client = ScriptedServer(worker.tokenizer, scripts_for(tasks))
    output = asyncio.run(worker.generate_sequences(dataset_batch(parquet, worker)))

    async def score_each() -> list[dict]:
        manager = load_reward_manager(worker.config, worker.tokenizer)  # binds to the running loop, as in verl
        return [await manager.run_single(output[i:i + 1]) for i in range(len(output))]

    for i, result in enumerate(asyncio.run(score_each())):
        assert result["reward_score"] == pytest.approx(output.batch["rm_scores"][i].sum().item())
        assert result["reward_score"] == (1.0 if i % 2 == 0 else 0.0)


def test_compute_score_on_a_solution_string(tasks):
    task = tasks[0]
    extra_info = {"env_id": ENV_ID, "env_kwargs": "{}", "task": json.dumps(task)}
    ground_truth = {"target": task["golden_answers"]}
    right = (f"<think>\nfound it\n</think>\n\n{search_call('x')}<|im_end|>\n<|im_start|>user\n<tool_response>\n"
             f"Doc 1 ...\n</tool_response><|im_end|>\n<|im_start|>assistant\n<answer> {task['golden_answers'][0]} "
             "</answer><|im_end|>")
    assert compute_score("rlf-search-sample", right, ground_truth, extra_info) == 1.0
    assert compute_score("rlf-search-sample", right.replace(task["golden_answers"][0], "Atlantis"), ground_truth,
                         extra_info) == 0.0
    parts = compute_score("rlf-search-sample", right, ground_truth, extra_info,
                          reward_parts=["exact_match", "f1", "no_such_part"])
    assert parts == {"score": 1.0, "exact_match": 1.0, "f1": 1.0, "no_such_part": 0.0}
    assert compute_score("rlf-search-sample", "no answer at all", ground_truth, extra_info) == 0.0


def _reward_file():
    import rlfactory_adapters.verl.reward as reward_module

    return reward_module.__file__


def test_a_prompt_over_rollout_prompt_length_is_left_truncated_as_verl_does(model_dir, parquet, tasks, caplog):
    worker = agent_loop_worker(model_dir, server=None, prompt_length=200)
    worker.llm_client = ScriptedServer(worker.tokenizer, scripts_for(tasks))
    with caplog.at_level("WARNING", logger="rlfactory_adapters.verl.agent_loop"):
        output = asyncio.run(worker.generate_sequences(dataset_batch(parquet, worker)))
    assert "exceeded rollout.prompt_length=200" in caplog.text
    for i in range(len(output)):
        prompt_ids, response_ids, _, _ = valid_ids(output, i)
        full_prompt, _, _, _ = replay(worker.tokenizer, ENV_ID, tasks[i], episode_script(tasks[i], correct=True))
        assert prompt_ids == worker.tokenizer.encode(full_prompt, add_special_tokens=False)[-200:]
        assert output.non_tensor_batch["rlf_metrics"][i]["prompt_truncated"] == 1.0
        assert output.non_tensor_batch["rlf_stop_reason"][i] == "answer"


def test_thinking_off_in_the_env_renders_the_prompt_without_thinking_whatever_the_data_config_says(
        model_dir, tmp_path, caplog):
    parquet = tmp_path / "no_thinking.parquet"
    assert prepare_data(["--trainer", "verl", "--env", ENV_ID, "--out", str(parquet), "--limit", "2",
                         "--env-kwargs", '{"enable_thinking": false}']) == 0
    worker = agent_loop_worker(model_dir, server=None, extra=["+data.apply_chat_template_kwargs.enable_thinking=true"])
    batch = dataset_batch(parquet, worker)
    tasks = [json.loads(extra["task"]) for extra in batch.non_tensor_batch["extra_info"]]
    scripts = {t["question"]: [search_call(t["question"]) + "<|im_end|>",
                               f"<answer> {t['golden_answers'][0]} </answer><|im_end|>"] for t in tasks}
    worker.llm_client = ScriptedServer(worker.tokenizer, scripts)
    with caplog.at_level("WARNING", logger="rlfactory_adapters.verl.agent_loop"):
        output = asyncio.run(worker.generate_sequences(batch))
    assert "['enable_thinking'] disagree with the env's chat format" in caplog.text
    for i, task in enumerate(tasks):
        prompt_ids, response_ids, _, _ = valid_ids(output, i)
        prompt, transcript, reward, _ = replay(worker.tokenizer, ENV_ID, task, scripts[task["question"]],
                                               enable_thinking=False)
        assert prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
        assert worker.tokenizer.decode(prompt_ids, skip_special_tokens=False) == prompt
        assert worker.tokenizer.decode(response_ids, skip_special_tokens=False) == transcript
        assert reward == 1.0 == output.batch["rm_scores"][i].sum().item()


class ClampingServer(ScriptedServer):
    """A server that stops every generation after 12 tokens and says "length" (as verl's resuming client does when
    ``max_model_len`` clamps ``max_tokens`` below what the loop asked for)."""

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        output = await super().generate(request_id, prompt_ids=prompt_ids,
                                        sampling_params={**sampling_params, "max_tokens": 12}, **kwargs)
        output.stop_reason = "length"
        return output


def test_a_generation_the_server_stopped_for_length_is_recorded_not_run(model_dir, parquet, tasks):
    worker = agent_loop_worker(model_dir, server=None, response_length=1024)
    worker.llm_client = ClampingServer(worker.tokenizer, scripts_for(tasks))
    output = asyncio.run(worker.generate_sequences(dataset_batch(parquet, worker)))
    for i in range(len(output)):
        _, response_ids, mask, _ = valid_ids(output, i)
        assert len(response_ids) == 12 and mask == [1] * 12
        assert output.non_tensor_batch["rlf_stop_reason"][i] == "response_length"
        assert output.non_tensor_batch["rlf_metrics"][i]["tool_calls"] == 0.0
