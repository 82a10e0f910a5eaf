"""rlf/Search-NQ-SearchR1-v0 (Search-R1's plain-text tags, no end-of-turn token) through verl 0.9's real
AgentLoopWorker: every generation asks the rollout server to stop after ``</search>`` and ``</answer>``, the
scripted server stops there as vLLM does, and the model's hallucinated ``<information>`` never reaches the ids."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("verl", reason="the verl adapter tests run in .venv-verl (bash .ci/verl.sh): verl is not "
                                   "installed here")

import hydra  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from verl.experimental.agent_loop.agent_loop import DictConfigWrap, _agent_loop_registry  # noqa: E402

from tests.adapters.stop_strings import stop_after  # noqa: E402
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

ENV_ID = "rlf/Search-NQ-SearchR1-v0"
STOPS = ["</search>", "</answer>"]
ROWS = 2


def episode_script(task: dict, correct: bool) -> list[str]:
    """Search-R1 responses that run on past their action as a model does without stop strings: the first invents
    its own ``<information>`` and answer, the second ends on ``</search>``, the third chats after its answer."""
    answer = task["golden_answers"][0] if correct else "Atlantis"
    return [
        f"<think>I should search for this.</think>\n<search> {task['question']} </search>\n\n<information>Doc 1"
        "(Title: \"Invented\") the model's own passage</information>\n\n<answer> Invented </answer>",
        f"<think>Let me check once more.</think>\n<search> {answer} history </search>",
        f"<think>The passages agree.</think>\n<answer> {answer} </answer> I am confident.<|im_end|>",
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


def test_a_search_r1_episode_stops_after_each_query_and_answer(model_dir, parquet, tasks):
    worker = agent_loop_worker(model_dir, server=None)
    scripts = {task["question"]: episode_script(task, correct=i == 0) for i, task in enumerate(tasks)}
    server = ScriptedServer(worker.tokenizer, scripts)
    worker.llm_client = server
    output = asyncio.run(worker.generate_sequences(dataset_batch(parquet, worker)))
    tok = worker.tokenizer

    for i, task in enumerate(tasks):
        generated = [stop_after(tok, tok.encode(r, add_special_tokens=False), STOPS)
                     for r in episode_script(task, correct=i == 0)]
        texts = [tok.decode(g, skip_special_tokens=False) for g in generated]
        # Qwen's ">\n\n" is one token: the first query runs two newlines past its stop string, as on vLLM
        assert texts[0].endswith(" </search>\n\n") and texts[1].endswith(" history </search>")
        assert texts[2].endswith(" </answer>")
        prompt, transcript, reward, observations = replay(tok, ENV_ID, task, texts)
        prompt_ids, response_ids, mask, logprobs = valid_ids(output, i)

        assert tok.decode(prompt_ids, skip_special_tokens=False) == prompt
        assert tok.decode(response_ids, skip_special_tokens=False) == transcript
        assert "Invented" not in transcript and "I am confident" not in transcript
        assert transcript.count("<information>") == 2 and "<|im_end|>" not in transcript
        assert mask_runs(response_ids, mask, 1) == generated
        assert [tok.decode(run, skip_special_tokens=False) for run in mask_runs(response_ids, mask, 0)] == \
            observations[:-1]
        assert logprobs == pytest.approx([scripted_logprob(t) if m else 0.0 for t, m in zip(response_ids, mask)])

        assert reward == (1.0 if i == 0 else 0.0) == output.batch["rm_scores"][i].sum().item()
        assert output.non_tensor_batch["rlf_stop_reason"][i] == "answer"
        assert output.non_tensor_batch["rlf_metrics"][i]["tool_calls"] == 2.0
        assert output.non_tensor_batch["__num_turns__"][i] == 1 + 3 + 2

    assert len(server.calls) == 3 * ROWS
    for _, _, params, _ in server.calls:
        assert params["stop"] == STOPS and params["include_stop_str_in_output"] is True
        assert params["logprobs"] is True and "no_stop_trim" not in params


def test_a_query_ending_on_the_budget_is_run_not_cut(model_dir, parquet, tasks):
    """verl reports "completed" for both stop and length: a response that ends on ``</search>`` exactly at
    ``rollout.response_length`` is a finished query, and the env runs it."""
    tok_worker = agent_loop_worker(model_dir, server=None)
    tok = tok_worker.tokenizer
    first = [stop_after(tok, tok.encode(episode_script(t, True)[0], add_special_tokens=False), STOPS) for t in tasks]
    budget = min(len(ids) for ids in first)
    short = next(i for i, ids in enumerate(first) if len(ids) == budget)
    worker = agent_loop_worker(model_dir, server=None, response_length=budget)
    worker.llm_client = ScriptedServer(tok, {t["question"]: episode_script(t, True) for t in tasks})
    output = asyncio.run(worker.generate_sequences(dataset_batch(parquet, worker)))
    _, response_ids, mask, _ = valid_ids(output, short)
    assert response_ids == first[short] and mask == [1] * budget
    assert output.non_tensor_batch["rlf_stop_reason"][short] == "response_length"
    assert output.non_tensor_batch["rlf_metrics"][short]["tool_calls"] == 1.0  # run, though nothing more fits


def test_configured_stop_strings_are_kept_and_sglang_gets_its_own_key(model_dir, parquet, tasks):
    worker = agent_loop_worker(model_dir, server=None)
    server = ScriptedServer(worker.tokenizer, {t["question"]: episode_script(t, True) for t in tasks})
    loop = hydra.utils.instantiate(
        config=_agent_loop_registry["rlf_search_agent"], trainer_config=DictConfigWrap(config=worker.config),
        server_manager=server, tokenizer=worker.tokenizer, processor=worker.processor,
        hf_model_type=worker.hf_model_type, dataset_cls=worker.dataset_cls,
        data_config=DictConfigWrap(worker.config.data))
    extra_info = dataset_batch(parquet, worker).non_tensor_batch["extra_info"][0]
    configured = {"temperature": 1.0, "logprobs": True, "stop": ["\n\nQuestion:", "</answer>"]}
    output = asyncio.run(loop.run(dict(configured), extra_info=extra_info))
    assert output.extra_fields["rlf_stop_reason"] == "answer" and output.reward_score == 1.0
    assert [params["stop"] for _, _, params, _ in server.calls] == [["\n\nQuestion:", "</answer>", "</search>"]] * 3
    assert configured["stop"] == ["\n\nQuestion:", "</answer>"]  # the trainer's dict is left as it was

    loop.rollout_config = OmegaConf.create({"name": "sglang"})
    assert loop._stop_params({}, tuple(STOPS)) == {"stop": STOPS, "no_stop_trim": True}
    assert loop._stop_params({"stop": "x"}, ()) == {}
