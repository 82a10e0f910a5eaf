"""OpenRLHF 0.11's own remote reward-model client against ``rlf serve reward``: the real ``SingleTurnAgentExecutor``
with ``--reward.remote_url`` pointing at the server (a subprocess on a free port), a scripted engine and the real
tokenizers. OpenRLHF tokenises the row's prompt, decodes prompt and response as the query, posts it with the row's
label, and reads the server's answer into the sample; the samples' metrics then merge as its experience maker
merges them."""

from __future__ import annotations

import asyncio
import sys

import pytest

pytest.importorskip("openrlhf.utils.agent", reason="the OpenRLHF adapter tests run in .venv-openrlhf (.ci/openrlhf.sh)")

import torch  # noqa: E402
from openrlhf.trainer.ppo_utils.experience import Experience, split_experience_batch  # noqa: E402
from openrlhf.utils.agent import SingleTurnAgentExecutor  # noqa: E402

from rlfactory_adapters.task_rows import openrlhf_record  # noqa: E402
from tests.adapters.openrlhf.scripted_rollout import ScriptedEngine, sampling_params  # noqa: E402
from tests.server_process import REWARD_URL_RE, server_process  # noqa: E402

ENV_ID = "rlf/Search-NQ-v0"
QA_KEYS = ["exact_match", "f1", "substring_match", "format", "answered"]


@pytest.fixture(scope="module")
def reward_url():
    command = [sys.executable, "-m", "rlfactory_envs.cli", "serve", "reward", "--env", ENV_ID, "--port", "0"]
    with server_process(command) as server:
        yield server.wait_for(REWARD_URL_RE).group(1)


def run_single_turn(executor, tokenizer, rows, responses, max_length: int = 4096):
    """One sample per row through OpenRLHF's executor, concurrently, each answered by its scripted response."""
    async def go():
        return await asyncio.gather(*(
            executor.execute(openrlhf_record(row, tokenizer)["prompt"], row.label(), sampling_params(None),
                             max_length, tokenizer, ScriptedEngine(tokenizer, [response]))
            for row, response in zip(rows, responses)))
    return asyncio.run(go())


def answer(text: str) -> str:
    return f"<think>\nfound it\n</think>\n\n<answer> {text} </answer><|im_end|>"


def test_openrlhfs_client_reads_the_env_reward(reward_url, tokenizer, search_rows):
    """A right answer scores 1, a wrong one 0, one without an answer 0; rewards, scores and extra_logs as OpenRLHF
    keeps them (lists of one: it sends one query per request)."""
    executor = SingleTurnAgentExecutor(f"{reward_url}/get_reward")
    rows = search_rows[:3]
    gold = rows[0].task["golden_answers"][0]
    outputs = run_single_turn(executor, tokenizer, rows, [answer(gold), answer("Lisbon"), "I don't know<|im_end|>"])
    assert [o["reward"] for o in outputs] == [[1.0], [0.0], [0.0]]
    assert [o["scores"] for o in outputs] == [[1.0], [0.0], [0.0]]
    assert all(list(o["extra_logs"]) == QA_KEYS for o in outputs)
    assert [o["extra_logs"]["answered"] for o in outputs] == [[1.0], [1.0], [0.0]]
    assert outputs[0]["extra_logs"]["exact_match"] == [1.0] and outputs[1]["extra_logs"]["format"] == [1.0]


def test_the_samples_merge_into_one_experience_batch(reward_url, small_tokenizer, search_rows):
    """Each sample's reward and metrics become tensors as OpenRLHF's SamplesGenerator makes them, then merge and
    split as its experience maker does: only possible when every sample has the same metric keys."""
    executor = SingleTurnAgentExecutor(f"{reward_url}/get_reward,{reward_url}/".split(","))  # the CLI splits on ","
    rows = search_rows[:4]
    outputs = run_single_turn(executor, small_tokenizer, rows,
                              [answer(rows[0].task["golden_answers"][0]), "nothing", answer("x"), "<answer>"])
    experiences = []
    for output in outputs:  # as SamplesGenerator._process_response_into_experience
        info = {"reward": torch.tensor([output["reward"]]), "score": torch.tensor([output["scores"]])}
        info.update({key: torch.tensor([value]) for key, value in output["extra_logs"].items()})
        experiences.append(Experience(sequences=torch.tensor([output["observation_tokens"]]),
                                      rewards=torch.tensor([output["reward"]]), info=info))
    batch = Experience.concat_experiences(experiences, small_tokenizer.pad_token_id)
    assert batch.rewards.flatten().tolist() == [1.0, 0.0, 0.0, 0.0]
    assert batch.info["answered"].flatten().tolist() == [1.0, 0.0, 1.0, 0.0]
    assert [sample.info["exact_match"].item() for sample in split_experience_batch(batch)] == [1.0, 0.0, 0.0, 0.0]


def test_a_label_of_another_env_is_refused_and_openrlhf_gives_up_on_it(reward_url, small_tokenizer, search_rows):
    """OpenRLHF retries any failure, a 400 included, 5 times a second apart, then keeps no reward for the sample."""
    executor = SingleTurnAgentExecutor(f"{reward_url}/get_reward")
    row = search_rows[0]
    prompt = openrlhf_record(row, small_tokenizer)["prompt"]
    label = row.label().replace(ENV_ID, "rlf/NL2SQL-Spider-v0")

    async def go():
        return await executor.execute(prompt, label, sampling_params(None), 4096, small_tokenizer,
                                      ScriptedEngine(small_tokenizer, [answer("x")]))
    output = asyncio.run(go())
    assert output["reward"] is None and output["scores"] is None and output["extra_logs"] == {}
