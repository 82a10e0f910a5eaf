"""OpenRLHF 0.11's real ``MultiTurnAgentExecutor`` driving rlf/Search-NQ-v0 through ``adapters/rlfactory_adapters/openrlhf/agent_func.py``
with a scripted engine and the real Qwen3 tokenizer: ids, action ranges, logprobs, rewards and turns against the
env's own transcript, and OpenRLHF's ``max_length`` budget."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("openrlhf.utils.agent", reason="the OpenRLHF adapter tests run in .venv-openrlhf (.ci/openrlhf.sh)")

from openrlhf.utils.agent import AgentExecutorBase, MultiTurnAgentExecutor  # noqa: E402

from rlfactory_adapters.openrlhf.agent_func import EXTRA_LOG_KEYS  # noqa: E402
from rlfactory_adapters.task_rows import openrlhf_record  # noqa: E402
from rlfactory_envs.kernel.env import ToolEnv  # noqa: E402
from tests.adapters.openrlhf.scripted_rollout import (  # noqa: E402
    LEASED,
    logprob_of,
    replay,
    run_samples,
    tool_call,
)

AGENT_FUNC = Path(__file__).resolve().parents[3] / "adapters" / "rlfactory_adapters" / "openrlhf" / "agent_func.py"


def search_then_answer(row, answer: str | None = None) -> list[str]:
    answer = row.task["golden_answers"][0] if answer is None else answer
    return [f"<think>\nI should search.\n</think>\n\n{tool_call(row.task['question'])}<|im_end|>",
            f"<think>\nOnce more.\n</think>\n\n{tool_call('Pellory history')}\n{tool_call('Velmora')}<|im_end|>",
            f"<think>\nFound it.\n</think>\n\n<answer> {answer} </answer><|im_end|>"]


def expected_sequence(tok, oracle, generated: list[list[int]]):
    """The ids, action ranges and logprobs OpenRLHF should hold: prompt, then each response's ids as generated and
    the env's observation tokenised on its own."""
    ids = tok.encode(oracle.prompt, add_special_tokens=False)
    logprobs = [0.0] * len(ids)
    ranges = []
    for gen, (_, obs, *_rest) in zip(generated, oracle.steps):
        ranges.append((len(ids), len(ids) + len(gen)))
        ids += gen
        logprobs += [logprob_of(k, t) for k, t in enumerate(gen)]
        feedback = tok.encode(obs, add_special_tokens=False)
        ids += feedback
        logprobs += [0.0] * len(feedback)
    return ids, ranges, logprobs


def used_env():
    """The env the last single sample ran on."""
    return LEASED[-1]


def test_openrlhf_loads_the_agent_file_as_it_does_for_agent_func_path():
    spec = importlib.util.spec_from_file_location("agent_module", AGENT_FUNC)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert issubclass(module.AgentExecutor, AgentExecutorBase)
    assert isinstance(module.AgentExecutor(), AgentExecutorBase)  # OpenRLHF builds it with no arguments
    with pytest.raises(TypeError, match="agent_func_path"):
        MultiTurnAgentExecutor(module.AgentInstance).agent_instance_cls()


def test_a_search_episode_matches_the_env_transcript(qwen3_tokenizer, search_rows):
    tok, row = qwen3_tokenizer, search_rows[0]
    script = search_then_answer(row)
    (out,), (engine,) = run_samples(tok, row.label(), [script], max_length=8192)

    generated = [tok.encode(text, add_special_tokens=False) for text in script]
    oracle = replay(tok, row.label(), [tok.decode(g, skip_special_tokens=False) for g in generated])
    ids, ranges, logprobs = expected_sequence(tok, oracle, generated)

    assert out["observation_tokens"] == ids
    assert out["action_ranges"] == ranges
    assert out["rollout_log_probs"] == logprobs
    assert tok.decode(out["observation_tokens"], skip_special_tokens=False) == oracle.transcript
    assert "<|im_end|><|im_end|>" not in oracle.transcript and "<|im_end|>\n<|im_end|>" not in oracle.transcript
    # vLLM's text lacks the stop token; the env was given the exact text of the ids instead
    assert not engine.texts[0].endswith("<|im_end|>") and oracle.steps[0][0].endswith("<|im_end|>")
    # each generation saw exactly the ids so far
    assert [len(r) for r in engine.requests] == [start for start, _ in ranges]
    assert engine.requests[2] == ids[: ranges[2][0]]

    assert out["reward"] == 1.0 and float(out["scores"]) == 1.0
    assert out["truncated"] is False and out["prompt"] == "the row's prompt"
    assert out["extra_logs"] == {"num_turns": 3.0, "tool_calls": 3.0, "answered": 1.0, "truncated": 0.0,
                                 "length_cut": 0.0, "env_error": 0.0}
    env = used_env()  # the env the sample ran on: given back, episode over, same transcript
    assert env.done and oracle.prompt + env.transcript[len(env.messages[0]["content"]):] == oracle.transcript


def test_the_prompt_is_the_env_prompt_with_tool_schemas_and_matches_prepare_data(qwen3_tokenizer, search_rows):
    tok, row = qwen3_tokenizer, search_rows[1]
    (out,), _ = run_samples(tok, row.label(), [search_then_answer(row)], max_length=8192)
    start = out["action_ranges"][0][0]
    prompt = tok.decode(out["observation_tokens"][:start], skip_special_tokens=False)
    assert prompt == openrlhf_record(row, tok)["prompt"]  # the row prepare_data writes shows what the model sees
    assert '"name": "search"' in prompt and "<tools>" in prompt and row.task["question"] in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_a_wrong_answer_scores_zero_and_the_label_may_be_an_object(qwen3_tokenizer, search_rows):
    tok, row = qwen3_tokenizer, search_rows[0]
    script = search_then_answer(row, answer="Lake Idony")
    (out,), _ = run_samples(tok, json.loads(row.label()), [script], max_length=8192)
    assert out["reward"] == 0.0 and out["extra_logs"]["answered"] == 1.0 and len(out["action_ranges"]) == 3


def test_a_response_cut_by_max_length_is_recorded_but_not_run(qwen3_tokenizer, search_rows):
    tok, row = qwen3_tokenizer, search_rows[0]
    script = search_then_answer(row)
    generated = [tok.encode(text, add_special_tokens=False) for text in script]
    full = replay(tok, row.label(), [tok.decode(g, skip_special_tokens=False) for g in generated])
    ids, ranges, _ = expected_sequence(tok, full, generated)
    max_length = ranges[1][1] - 1  # the second response loses its closing <|im_end|>: its tool calls are complete

    (out,), (engine,) = run_samples(tok, row.label(), [script], max_length=max_length)

    assert out["observation_tokens"] == ids[:max_length]
    assert out["action_ranges"] == [ranges[0], (ranges[1][0], max_length)]
    assert len(out["rollout_log_probs"]) == max_length and out["truncated"] is True
    assert len(engine.requests) == 2 and out["reward"] == 0.0
    assert out["extra_logs"]["length_cut"] == 1.0 and out["extra_logs"]["tool_calls"] == 1.0
    env = used_env()
    assert env.done
    assert env.messages[-1] == {"role": "assistant", "content": tok.decode(generated[1][:-1],
                                                                             skip_special_tokens=False)}
    assert env.messages[-2]["role"] == "tool"  # the first call's result; the cut response's calls never ran
    assert tok.decode(out["observation_tokens"], skip_special_tokens=False) == \
        full.prompt + env.transcript[len(env.messages[0]["content"]):]


def test_an_observation_that_does_not_fit_ends_the_episode_there(qwen3_tokenizer, search_rows):
    tok, row = qwen3_tokenizer, search_rows[0]
    script = search_then_answer(row)
    generated = [tok.encode(text, add_special_tokens=False) for text in script]
    full = replay(tok, row.label(), [tok.decode(g, skip_special_tokens=False) for g in generated])
    ids, ranges, _ = expected_sequence(tok, full, generated)
    max_length = ranges[0][1] + 5  # room for 5 tokens of the first observation

    (out,), (engine,) = run_samples(tok, row.label(), [script], max_length=max_length)

    # OpenRLHF appends the whole observation; its experience maker cuts sequences and masks at max_len
    assert out["observation_tokens"] == ids[: ranges[1][0]]
    assert out["action_ranges"] == [ranges[0]] and len(engine.requests) == 1
    assert out["reward"] == 0.0 and out["extra_logs"]["length_cut"] == 1.0 and out["extra_logs"]["truncated"] == 1.0
    assert out["truncated"] is False  # the response itself was complete
    env = used_env()
    assert env.done and env.turn == 1


def test_concurrent_samples_of_one_prompt_are_independent(qwen3_tokenizer, search_rows):
    """OpenRLHF runs n_samples_per_prompt executes at once on one shared sampling_params object."""
    tok, row = qwen3_tokenizer, search_rows[2]
    gold = row.task["golden_answers"][0]
    scripts = [search_then_answer(row), search_then_answer(row, "no idea"), search_then_answer(row)[::2],
               [f"<answer>{gold}</answer><|im_end|>"], ["I am not sure.<|im_end|>"] * 4,
               search_then_answer(row)[1:], [tool_call("a") + "<|im_end|>"] * 4, search_then_answer(row)]
    outs, engines = run_samples(tok, row.label(), scripts, max_length=8192, logprobs=None)

    leased = LEASED[-len(scripts):]
    for out, engine, script in zip(outs, engines, scripts):
        generated = [tok.encode(t, add_special_tokens=False) for t in script[: len(engine.requests)]]
        oracle = replay(tok, row.label(), [tok.decode(g, skip_special_tokens=False) for g in generated])
        ids, ranges, _ = expected_sequence(tok, oracle, generated)
        assert out["observation_tokens"] == ids and out["action_ranges"] == ranges
        assert out["rollout_log_probs"] is None
        assert out["reward"] == oracle.steps[-1][2]
        assert out["extra_logs"]["num_turns"] == len(oracle.steps)
        assert set(out["extra_logs"]) == set(EXTRA_LOG_KEYS)
    assert [out["reward"] for out in outs] == [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    assert [out["extra_logs"]["truncated"] for out in outs] == [0, 0, 0, 0, 1, 0, 1, 0]  # max_turns=4
    assert len({id(env) for env in leased}) == len(scripts) and all(env.done for env in leased)  # each given back


def test_a_failing_env_ends_only_its_own_sample(qwen3_tokenizer, search_rows, monkeypatch):
    tok, row = qwen3_tokenizer, search_rows[0]

    async def broken_step(self, action):
        raise ConnectionError("tool server went away")

    monkeypatch.setattr(ToolEnv, "astep", broken_step)
    (out,), _ = run_samples(tok, row.label(), [search_then_answer(row)], max_length=8192)
    assert out["reward"] == 0.0 and out["extra_logs"]["env_error"] == 1.0 and len(out["action_ranges"]) == 1
    assert used_env().done


@pytest.mark.parametrize("label, message", [
    ("not json", "not JSON"), ("[1, 2]", "JSON object"), ('{"task": {}}', "env_id"),
    ('{"env_id": "rlf/Search-NQ-v0"}', "task"),
])
def test_a_bad_label_says_what_is_wrong(qwen3_tokenizer, label, message):
    with pytest.raises(ValueError, match=message):
        run_samples(qwen3_tokenizer, label, [["<answer>x</answer><|im_end|>"]], max_length=4096)


SEARCH_R1_STOPS = ["</search>", "</answer>"]


def search_r1_script(row, answer: str | None = None) -> list[str]:
    """Search-R1 responses that run on past their action as a model does without stop strings."""
    answer = row.task["golden_answers"][0] if answer is None else answer
    return [f"<think>I should search.</think>\n<search> {row.task['question']} </search>\n\n<information>Doc 1"
            "(Title: \"Invented\") the model's own passage</information>\n\n<answer> Invented </answer>",
            "<think>Once more.</think>\n<search> Pellory history </search>",
            f"<think>Found it.</think>\n<answer> {answer} </answer> I am confident.<|im_end|>"]


def test_a_search_r1_episode_asks_vllm_to_stop_after_each_query_and_answer(qwen3_tokenizer, search_r1_rows):
    from tests.adapters.openrlhf.scripted_rollout import sampling_params
    from tests.adapters.stop_strings import stop_after

    tok, row = qwen3_tokenizer, search_r1_rows[0]
    scripts = [search_r1_script(row), search_r1_script(row, answer="Lake Idony")]
    shared = sampling_params()
    outs, engines = run_samples(tok, row.label(), scripts, max_length=8192, params=shared)

    for out, engine, script, reward in zip(outs, engines, scripts, (1.0, 0.0)):
        generated = [stop_after(tok, tok.encode(text, add_special_tokens=False), SEARCH_R1_STOPS) for text in script]
        oracle = replay(tok, row.label(), [tok.decode(g, skip_special_tokens=False) for g in generated])
        ids, ranges, logprobs = expected_sequence(tok, oracle, generated)
        assert out["observation_tokens"] == ids and out["action_ranges"] == ranges
        assert out["rollout_log_probs"] == logprobs
        assert tok.decode(ids, skip_special_tokens=False) == oracle.transcript
        assert "Invented" not in oracle.transcript and "I am confident" not in oracle.transcript
        assert oracle.transcript[len(oracle.prompt):].count("<information>") == 2
        # vLLM's text ends at the stop string; the env got the exact text of the ids (">\n\n" is one token)
        assert engine.texts[0].endswith(" </search>") and oracle.steps[0][0].endswith(" </search>\n\n")
        assert out["reward"] == reward and out["extra_logs"]["tool_calls"] == 2.0
        assert out["extra_logs"]["answered"] == 1.0 and out["extra_logs"]["length_cut"] == 0.0
        assert len(engine.params) == 3
        for params in engine.params:
            assert params.stop == SEARCH_R1_STOPS and params.include_stop_str_in_output is True
            assert params is not shared and params.logprobs == 1 and params.temperature == 1.0
    # the object OpenRLHF shares across the batch never carries one sample's stop strings
    assert shared.stop == [] and shared.include_stop_str_in_output is False


def test_configured_stop_strings_are_kept_and_qwen3_gets_none(qwen3_tokenizer, search_r1_rows, search_rows):
    from tests.adapters.openrlhf.scripted_rollout import sampling_params

    tok = qwen3_tokenizer
    shared = sampling_params()
    shared.stop = ["\n\nQuestion:", "</answer>"]
    (out,), (engine,) = run_samples(tok, search_r1_rows[0].label(), [search_r1_script(search_r1_rows[0])],
                                    max_length=8192, params=shared)
    assert out["reward"] == 1.0
    assert [p.stop for p in engine.params] == [["\n\nQuestion:", "</answer>", "</search>"]] * 3
    assert shared.stop == ["\n\nQuestion:", "</answer>"] and shared.include_stop_str_in_output is False

    (out,), (engine,) = run_samples(tok, search_rows[0].label(), [search_then_answer(search_rows[0])],
                                    max_length=8192)
    assert out["reward"] == 1.0 and len(engine.params) == 3
    assert all(p.stop == [] and p.include_stop_str_in_output is False for p in engine.params)


def test_a_search_r1_query_that_exactly_fills_max_length_is_run(qwen3_tokenizer, search_r1_rows):
    from tests.adapters.stop_strings import stop_after

    tok, row = qwen3_tokenizer, search_r1_rows[0]
    script = search_r1_script(row)
    first = stop_after(tok, tok.encode(script[0], add_special_tokens=False), SEARCH_R1_STOPS)
    oracle = replay(tok, row.label(), [tok.decode(first, skip_special_tokens=False)])
    prompt_length = len(tok.encode(oracle.prompt, add_special_tokens=False))
    (out,), (engine,) = run_samples(tok, row.label(), [script], max_length=prompt_length + len(first))
    assert out["action_ranges"] == [(prompt_length, prompt_length + len(first))] and len(engine.requests) == 1
    assert out["truncated"] is False  # vLLM's finish reason: "stop", the query is whole
    assert out["extra_logs"]["tool_calls"] == 1.0 and out["extra_logs"]["length_cut"] == 1.0
    assert out["reward"] == 0.0 and used_env_of(row).done


def used_env_of(row):
    """The env the row's last single sample ran on."""
    return LEASED[-1]


def test_the_engine_wrapper_copies_the_params_it_is_given_and_never_changes_them(qwen3_tokenizer):
    import asyncio

    from rlfactory_adapters.openrlhf.exact_text_engine import ExactTextEngine
    from tests.adapters.openrlhf.scripted_rollout import ScriptedEngine, sampling_params

    given = sampling_params()
    given.max_tokens = 64
    inner = ScriptedEngine(qwen3_tokenizer, ["<search> q </search> and on<|im_end|>"] * 2)
    engine = ExactTextEngine(inner, qwen3_tokenizer)
    asyncio.run(engine.generate([1, 2], given))
    assert inner.params[0] is given  # no stop sequences: passed through as it came
    engine.stop_sequences = ("</search>", "</answer>")
    output = asyncio.run(engine.generate([1, 2], given))
    sent = inner.params[1]
    assert sent is not given and (sent.stop, sent.include_stop_str_in_output, sent.max_tokens) == \
        (["</search>", "</answer>"], True, 64)
    assert (given.stop, given.include_stop_str_in_output) == ([], False)
    assert output.outputs[0].text == "<search> q </search>" and engine.last.finish_reason == "stop"
