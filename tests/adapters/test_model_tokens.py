"""The trainers' token path (``run_episode``: verl's agent loop, and OpenRLHF's executor over the same env deltas)
on the Qwen3 and Gemma 3 tokenizers, with the env's chat template taken from the trainer's tokenizer
(``with_model_template``): ids decode back to the transcript, the mask covers only the model's tokens, and every
marker is the model's own."""

from __future__ import annotations

import asyncio

import pytest

from rlfactory_adapters.chat_prompt import with_model_template
from rlfactory_adapters.env_lease import lease_env
from rlfactory_adapters.episode_driver import Generation, run_episode
from tests.adapters.token_properties import check_token_record
from tests.conftest import third_party_tokenizer

transformers = pytest.importorskip("transformers", reason="the adapter tests need transformers (pip install .[test])")


@pytest.fixture(scope="module")
def gemma3_tokenizer():
    return transformers.AutoTokenizer.from_pretrained(str(third_party_tokenizer("gemma3")))


def replay(tokenizer, texts: list[str], end: str):
    """A generate function answering with ``texts`` in turn, each followed by the model's end-of-turn token."""
    queue = list(texts)
    written: list[str] = []

    async def generate(ids: list[int], max_new_tokens: int) -> Generation:
        tokens = tokenizer.encode(queue.pop(0) + end, add_special_tokens=False)
        written.append(tokenizer.decode(tokens, skip_special_tokens=False))
        return Generation(tokens, [-0.5] * len(tokens))

    return generate, written


CASES = {  # tokenizer, end-of-turn token, markers, a call in its dialect
    "qwen3": ("<|im_end|>", "chatml", '<tool_call>\n{"name": "search", "arguments": {"query": "ysolde harn"}}\n'
                                      "</tool_call>"),
    "gemma3": ("<end_of_turn>", "gemma", '[search(query="ysolde harn")]'),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_tool_episode_keeps_its_token_properties_on_the_models_own_markers(name, request):
    tokenizer = request.getfixturevalue(f"{name}_tokenizer")
    end, own, call = CASES[name]
    texts = [f"<think>\nlook\n</think>\n\n{call}", "no idea yet", "<answer>Battle of Corrow Pass</answer>"]
    generate, written = replay(tokenizer, texts, end)

    async def play():
        with lease_env("rlf/Search-NQ-v0", with_model_template({}, tokenizer)) as env:
            task = env.task_to_dict(env.tasks.by_id(env.tasks[0].task_id))
            return await run_episode(env, tokenizer, generate, task=task, max_response_tokens=4096), env

    result, env = asyncio.run(play())
    assert result.terminated and result.metrics["tool_calls"] == 1.0 and result.num_turns == 3
    check_token_record(result, tokenizer, written, own)
    assert env.chat_format.name == "template" and env.chat_format.dialect.name in ("hermes", "pythonic")
