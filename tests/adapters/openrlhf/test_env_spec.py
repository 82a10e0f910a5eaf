"""A user's env spec (examples/custom_env/env.yaml: an MCP server over stdio, a JSONL of questions, a reward
function of the user's) trained through OpenRLHF 0.11's real ``MultiTurnAgentExecutor``: ``prepare_data --trainer
openrlhf`` from the spec (with the Qwen3 tokenizer), then each row's label played through
``adapters/rlfactory_adapters/openrlhf/agent_func.py`` with a scripted engine returning real Qwen3 token ids of tool calls to
``multiply``/``add`` and an answer. The rows are written from a copy of the spec's folder whose spec file is then
deleted: they play from what they carry. The oracle is the same episode played by text on a fresh env built from
the example's own spec file."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("openrlhf.utils.agent", reason="the OpenRLHF adapter tests run in .venv-openrlhf (.ci/openrlhf.sh)")

from rlfactory_adapters.openrlhf.agent_func import EXTRA_LOG_KEYS  # noqa: E402
from rlfactory_adapters.prepare_data import main as prepare_data  # noqa: E402
from rlfactory_envs.generic.env import DEFAULT_SYSTEM_PROMPT  # noqa: E402
from tests.adapters.openrlhf.scripted_rollout import LEASED, replay, run_samples  # noqa: E402
from tests.adapters.openrlhf.test_agent_func import expected_sequence  # noqa: E402
from tests.adapters.env_spec_example import SPEC, expected_env_kwargs  # noqa: E402

GENERIC_ID = "rlf/MCP-v0"
QUESTIONS = [json.loads(line) for line in (SPEC.parent / "questions.jsonl").read_text().splitlines() if line.strip()]
SYSTEM_PROMPT = DEFAULT_SYSTEM_PROMPT.format(tag="answer")
CALLS = {"q1": ("multiply", 12, 17), "q2": ("multiply", 23.5, 8), "q3": ("add", 1250, 380)}
RESULTS = {"q1": 12.0 * 17, "q2": 23.5 * 8, "q3": 1250.0 + 380}
"""The tool call that answers each question, and the tool's own result (the MCP server prints the float)."""


def calc_call(name: str, a: float, b: float) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": {"a": a, "b": b}}) + "\n</tool_call>"


def tool_then_answer(task: dict, answer: str) -> list[str]:
    name, a, b = CALLS[task["id"]]
    return [f"<think>\nI should use the {name} tool.\n</think>\n\n{calc_call(name, a, b)}<|im_end|>",
            f"<think>\nThe tool gave the result.\n</think>\n\n<answer> {answer} </answer><|im_end|>"]


def tool_response(value: str) -> str:
    """The env's feedback after a tool call: the tool's text in Qwen3's tool-response turn."""
    return f"\n<|im_start|>user\n<tool_response>\n{value}\n</tool_response><|im_end|>\n<|im_start|>assistant\n"


def spec_label(task: dict) -> str:
    """A label naming the example's spec file itself: the oracle's env is built from the spec, not the row."""
    return json.dumps({"env_id": str(SPEC), "env_kwargs": {}, "task": task})


@pytest.fixture(scope="module")
def spec_data(tmp_path_factory, qwen3_tokenizer):
    """The example's folder copied to tmp, its rows written by prepare_data from the copy's spec (run from another
    folder) with the Qwen3 tokenizer, then the copy's spec file deleted: (rows, the copy's folder)."""
    folder = tmp_path_factory.mktemp("user") / "custom_env"
    shutil.copytree(SPEC.parent, folder, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("data") / "train.jsonl"
    with contextlib.chdir(tmp_path_factory.mktemp("elsewhere")):
        assert prepare_data(["--trainer", "openrlhf", "--env", str(folder / SPEC.name), "--out", str(out),
                             "--tokenizer", qwen3_tokenizer.name_or_path]) == 0
    (folder / SPEC.name).unlink()
    return [json.loads(line) for line in out.read_text().splitlines()], folder


@pytest.fixture(scope="module")
def rows(spec_data):
    return spec_data[0]


def used_env(row: dict):
    """The env the row's last single sample ran on."""
    label = json.loads(row["label"])
    env = LEASED[-1]
    assert type(env).__name__ == "McpEnv" and label["env_id"] == "rlf/MCP-v0"
    return env


def test_prepare_data_writes_labels_of_the_generic_env_and_the_rendered_prompt(spec_data):
    rows, folder = spec_data
    assert len(rows) == len(QUESTIONS) == 3
    for row, question in zip(rows, QUESTIONS):
        assert set(row) == {"prompt", "label", "datasource"} and row["datasource"] == "questions"
        label = json.loads(row["label"])
        assert label["env_id"] == GENERIC_ID and label["task"] == question
        assert label["env_kwargs"] == expected_env_kwargs(folder)  # the spec's settings, its paths made absolute
        assert Path(label["env_kwargs"]["data_path"]).is_file()
        prompt = row["prompt"]  # rendered with the Qwen3 chat template and the calc server's tool schemas
        assert prompt.startswith(f"<|im_start|>system\n{SYSTEM_PROMPT}\n\n# Tools\n")
        assert '"name": "multiply", "description": "Multiply two numbers."' in prompt
        assert '"name": "add", "description": "Add two numbers."' in prompt
        assert prompt.endswith(f"<|im_start|>user\n{question['question']}<|im_end|>\n<|im_start|>assistant\n")
    assert not (folder / SPEC.name).exists()  # what follows plays without the spec file


def test_spec_episodes_through_the_executor_match_a_replay_on_the_spec(qwen3_tokenizer, rows):
    tok = qwen3_tokenizer
    for row in rows:
        task = json.loads(row["label"])["task"]
        right = task["ground_truth"]
        scripts = [tool_then_answer(task, right), tool_then_answer(task, str(float(right) + 1)),
                   [f"<think>\nI know this.\n</think>\n\n<answer> {right} </answer><|im_end|>"]]
        outs, engines = run_samples(tok, row["label"], scripts, max_length=8192, prompt=row["prompt"])

        for out, engine, script, reward in zip(outs, engines, scripts, (1.0, 0.0, 1.0)):
            generated = [tok.encode(text, add_special_tokens=False) for text in script]
            oracle = replay(tok, spec_label(task), [tok.decode(g, skip_special_tokens=False) for g in generated])
            ids, ranges, logprobs = expected_sequence(tok, oracle, generated)

            assert out["observation_tokens"] == ids
            assert out["action_ranges"] == ranges
            assert out["rollout_log_probs"] == logprobs
            assert tok.decode(ids, skip_special_tokens=False) == oracle.transcript
            # the prompt the model saw is the row's: system prompt, the calc server's tools, the question
            assert tok.decode(ids[: ranges[0][0]], skip_special_tokens=False) == row["prompt"] == oracle.prompt
            assert [len(r) for r in engine.requests] == [start for start, _ in ranges]
            # the model's tokens are exactly its generations; the env's feedback sits between them
            assert [ids[start:end] for start, end in ranges] == generated
            feedback = [tok.decode(ids[end:start], skip_special_tokens=False)
                        for (_, end), (start, _) in zip(ranges, ranges[1:])]
            assert feedback == [step[1] for step in oracle.steps[:-1]]

            assert out["reward"] == reward == oracle.steps[-1][2] and float(out["scores"]) == reward
            assert out["truncated"] is False and out["prompt"] == row["prompt"]
            tool_calls = float(len(script) - 1)
            assert out["extra_logs"] == {"num_turns": float(len(script)), "tool_calls": tool_calls,
                                         "answered": 1.0, "truncated": 0.0, "length_cut": 0.0, "env_error": 0.0}
            assert set(out["extra_logs"]) == set(EXTRA_LOG_KEYS)
        # the calc server's answer reached the model as the env's feedback
        assert [step[1] for step in replay(tok, row["label"], [scripts[0][0]]).steps] == \
            [tool_response(repr(RESULTS[task["id"]]))]


def test_a_tool_error_is_fed_back_and_a_non_number_scores_zero(qwen3_tokenizer, rows):
    tok, row = qwen3_tokenizer, rows[1]
    task = json.loads(row["label"])["task"]
    script = [f"{calc_call('divide', 188, 1)}<|im_end|>", f"{calc_call('multiply', 23.5, 8)}<|im_end|>",
              "<answer> one hundred eighty-eight </answer><|im_end|>"]
    (out,), _ = run_samples(tok, row["label"], [script], max_length=8192)
    ranges = out["action_ranges"]
    feedback = [tok.decode(out["observation_tokens"][end:start], skip_special_tokens=False)
                for (_, end), (start, _) in zip(ranges, ranges[1:])]
    assert feedback == [tool_response("Error: unknown tool 'divide'. Available tools: add, multiply."),
                        tool_response("188.0")]
    assert out["reward"] == 0.0 and out["extra_logs"]["answered"] == 1.0 and out["extra_logs"]["tool_calls"] == 2.0
    oracle = replay(tok, spec_label(task), script)
    assert tok.decode(out["observation_tokens"], skip_special_tokens=False) == oracle.transcript
    assert used_env(row).done


def test_a_spec_answer_cut_by_max_length_is_recorded_not_scored(qwen3_tokenizer, rows):
    tok, row = qwen3_tokenizer, rows[0]
    task = json.loads(row["label"])["task"]
    script = tool_then_answer(task, task["ground_truth"])
    generated = [tok.encode(text, add_special_tokens=False) for text in script]
    full = replay(tok, row["label"], [tok.decode(g, skip_special_tokens=False) for g in generated])
    ids, ranges, _ = expected_sequence(tok, full, generated)
    max_length = ranges[1][1] - 1  # the answer loses its closing <|im_end|>: cut, though its answer tag is whole

    (out,), (engine,) = run_samples(tok, row["label"], [script], max_length=max_length)

    assert out["observation_tokens"] == ids[:max_length] and len(engine.requests) == 2
    assert out["action_ranges"] == [ranges[0], (ranges[1][0], max_length)]
    assert out["truncated"] is True and out["reward"] == 0.0
    assert out["extra_logs"]["length_cut"] == 1.0 and out["extra_logs"]["answered"] == 0.0
    env = used_env(row)
    assert env.done and env.messages[-1] == {"role": "assistant",
                                             "content": tok.decode(generated[1][:-1], skip_special_tokens=False)}
