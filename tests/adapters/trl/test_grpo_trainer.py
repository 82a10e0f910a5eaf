"""``rlfactory_adapters.trl`` with the real TRL 1.16 ``GRPOTrainer`` on CPU: two GRPO steps of a tiny Qwen3 built from
a config (random weights, nothing downloaded; Qwen3's tokenizer from ../shared/data) on the embedded Search-NQ sample.
The model's logits get a large bias towards a scripted reply (search, then an answer that is right for one task and
wrong for the other), so the rollouts really call the env's tool and the rewards differ; the loss still trains the
random weights under it. Checked: the env's rewards reach the trainer, the completion's loss mask covers the model's
tokens and none of the env's, and the tools TRL shows the model read back as the env shows them."""

from __future__ import annotations

import json

import pytest

from tests.conftest import shared_file

trl = pytest.importorskip("trl", reason="the TRL adapter's tests need TRL (pip install .[trl])")
torch = pytest.importorskip("torch")
import transformers  # noqa: E402
from transformers.utils import get_json_schema  # noqa: E402

from rlfactory_adapters.trl import RlfEnvSpec  # noqa: E402
from rlfactory_adapters.trl.tool_methods import departures  # noqa: E402

TOOL_TURN = '<tool_call>\n{"name": "search", "arguments": {"query": "harbour town of pellory mountain"}}\n</tool_call>'
ANSWERS = ("<answer>Mount Arvel</answer>", "<answer>Battle of Corrow Pass</answer>")
"""The first answer is right for the sample's first task, both are wrong for its second; rows of even index answer
the first, odd ones the second, so one group's two rollouts earn different rewards (a GRPO advantage)."""


@pytest.fixture(scope="module")
def tokenizer():
    path = shared_file("tokenizers/qwen3/tokenizer.json").parent
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(path))
    tokenizer.padding_side = "left"
    # ../shared/data holds an earlier revision of Qwen3's chat template than the one TRL recognises (and knows a
    # training form of); they differ only in guards for non-string message content, so the current one is used.
    import importlib.resources

    tokenizer.chat_template = (importlib.resources.files("trl") / "chat_templates" / "qwen3.jinja").read_text()
    return tokenizer


def scripted_tiny_qwen3(tokenizer):
    """A 2-layer Qwen3 of random weights whose last logits are pushed towards the scripted reply of the turn."""
    config = transformers.Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
                                      max_position_embeddings=4096, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = transformers.Qwen3ForCausalLM(config)
    header = tokenizer.encode("<|im_start|>assistant\n")
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    tool_turn = tokenizer.encode(TOOL_TURN) + [end]
    answer_turns = [tokenizer.encode(answer) + [end] for answer in ANSWERS]

    def next_token(row: int, ids: list[int]) -> int:
        starts = [i for i in range(len(ids) - len(header) + 1) if ids[i:i + len(header)] == header]
        generated = ids[starts[-1] + len(header):] if starts else []
        script = answer_turns[row % 2] if "<tool_response>" in tokenizer.decode(ids[-2000:]) else tool_turn
        fits = len(generated) < len(script) and script[:len(generated)] == generated
        return script[len(generated)] if fits else end

    def push(module, args, kwargs, output):
        ids = kwargs.get("input_ids")
        if ids is not None and getattr(output, "logits", None) is not None:  # generating (the loss fuses its own)
            bias = torch.zeros_like(output.logits[:, -1, :])
            for row, row_ids in enumerate(ids.tolist()):
                bias[row, next_token(row, row_ids)] = 1e4
            output.logits[:, -1, :] = output.logits[:, -1, :] + bias
        return output

    model.register_forward_hook(push, with_kwargs=True)
    return model


def test_two_grpo_steps_on_cpu_reward_the_env_and_mask_the_env_tokens(tokenizer, tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    spec = RlfEnvSpec("rlf/Search-NQ-v0", n=2)
    args = trl.GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=2,
                          max_completion_length=384, max_steps=2, learning_rate=1e-4, logging_steps=1, report_to=[],
                          use_cpu=True, bf16=False, save_strategy="no", max_tool_calling_iterations=3, seed=0,
                          generation_kwargs={"use_cache": False}, shuffle_dataset=False)
    trainer = trl.GRPOTrainer(model=scripted_tiny_qwen3(tokenizer), args=args, processing_class=tokenizer,
                              train_dataset=spec.train_dataset, environment_factory=spec.environment_factory,
                              reward_funcs=spec.reward_funcs)
    batches = []
    generate = trainer._generate_and_score_completions

    def keep(inputs):
        batches.append(generate(inputs))
        return batches[-1]

    trainer._generate_and_score_completions = keep
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()
    assert trainer.state.global_step == 2
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.model.parameters()))  # it trained

    name = spec.reward_funcs[0].__name__
    logged = [entry for entry in trainer.state.log_history if f"rewards/{name}/mean" in entry]
    assert [entry[f"rewards/{name}/mean"] for entry in logged] == [0.25, 0.25]  # 1 of 4 rollouts right

    for batch in batches:
        masks = batch["completion_mask"] * batch["tool_mask"]
        for ids, model_mask, in_completion in zip(batch["completion_ids"], masks, batch["completion_mask"]):
            model_text = tokenizer.decode(ids[model_mask.bool()])
            env_text = tokenizer.decode(ids[(in_completion.bool()) & ~(model_mask.bool())])
            assert model_text in [TOOL_TURN + "<|im_end|>" + answer + "<|im_end|>" for answer in ANSWERS]
            assert env_text.startswith("\n<|im_start|>user\n<tool_response>\nDoc 1(Title:")
            assert env_text.endswith("</tool_response><|im_end|>\n<|im_start|>assistant\n")
    spec.close()


def test_the_tools_trl_shows_are_the_envs():
    for ref in ("rlf/Search-NQ-v0", "rlf/NL2SQL-Spider-v0", "rlf/Android-v0"):
        spec = RlfEnvSpec(ref, n=1)
        slot = spec.environment_factory()
        for tool in spec.prototype.tool_specs:
            shown, own = get_json_schema(getattr(slot, tool.name))["function"], tool.openai_schema()["function"]
            assert (shown["name"], shown["description"]) == (own["name"], own["description"])
            properties = own["parameters"].get("properties", {})
            assert shown["parameters"].get("required", []) == own["parameters"].get("required", [])
            assert set(shown["parameters"]["properties"]) == set(properties)
            for key, schema in properties.items():
                kinds = {option.get("type") for option in schema.get("anyOf", [schema])} - {"null"}
                assert shown["parameters"]["properties"][key].get("type") in kinds, (tool.name, key)
        assert all("default=" in d or "anyOf=" in d for tool in spec.prototype.tool_specs for d in departures(tool))
        spec.close()


def test_a_rollout_that_ends_without_an_answer_is_truncated_and_scored_low():
    import asyncio

    spec = RlfEnvSpec("rlf/Search-NQ-v0", n=1)
    row = spec.train_dataset[0]
    slot = spec.environment_factory()
    assert slot.reset(**row) is None
    question = json.loads(row["rlf_task"])["question"]
    text = asyncio.run(slot.search(query=question))
    same = spec.prototype.sibling()  # the same call stepped in the env directly
    same.reset(options={"task": json.loads(row["rlf_task"])})
    call = '<tool_call>{"name": "search", "arguments": {"query": %s}}</tool_call>' % json.dumps(question)
    assert text.startswith("Doc 1(Title:") and text == same.step(call)[4]["tool_results"][0]["text"]
    same.close()
    assert asyncio.run(spec.reward_funcs[0](completions=[[{"role": "assistant", "content": "no idea"}]],
                                            environments=[slot])) == [0.0]
    assert slot.info["truncation_reason"] == "final_response_unread"
    assert asyncio.run(slot.search(query="more")) == "The episode is over; this call was not run."
    spec.close()
