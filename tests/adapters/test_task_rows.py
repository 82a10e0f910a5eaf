"""Trainer data files from env tasks, and the offline reward path that scores them."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from rlfactory_adapters.chat_prompt import prompt_text
from rlfactory_adapters.offline_score import last_model_turn, score_response
from rlfactory_adapters.prepare_data import main as prepare_data
from rlfactory_adapters.task_rows import task_rows
from rlfactory_envs.kernel.chat_format import Qwen3ChatFormat, SearchR1Format

ENV_ID = "rlf/Search-NQ-v0"


def test_rows_rebuild_the_same_episode():
    rows = list(task_rows(ENV_ID, {"max_turns": 3}, limit=3, start=2))
    assert [row.index for row in rows] == [2, 3, 4]
    import gymnasium as gym

    env = gym.make(ENV_ID, **rows[0].env_kwargs).unwrapped
    try:
        for row in rows:
            label = json.loads(row.label())
            assert label["env_id"] == ENV_ID and label["env_kwargs"] == {"max_turns": 3}
            obs, info = env.reset(options={"task": label["task"]})
            assert info["messages"] == row.messages and info["tools"] == row.tools
            assert obs == row.messages[-1]["content"]
            assert row.ground_truth == {"target": label["task"]["golden_answers"]}
    finally:
        env.close()


def test_verl_parquet_layout(tmp_path):
    out = tmp_path / "train.parquet"
    assert prepare_data(["--trainer", "verl", "--env", ENV_ID, "--out", str(out), "--limit", "5"]) == 0
    table = pq.read_table(out).to_pylist()
    assert len(table) == 5
    row = table[0]
    assert set(row) == {"data_source", "prompt", "ability", "reward_model", "extra_info", "agent_name"}
    assert row["agent_name"] == "rlf_agent" and row["ability"] == "search"
    assert row["prompt"][-1]["role"] == "user" and row["reward_model"]["ground_truth"]["target"]
    extra = row["extra_info"]
    assert extra["env_id"] == ENV_ID and json.loads(extra["env_kwargs"]) == {}
    assert json.loads(extra["task"])["golden_answers"] == row["reward_model"]["ground_truth"]["target"]


def test_openrlhf_jsonl_layout_with_a_rendered_prompt(tmp_path, qwen3_tokenizer):
    out = tmp_path / "train.jsonl"
    tokenizer_dir = qwen3_tokenizer.name_or_path
    assert prepare_data(["--trainer", "openrlhf", "--env", ENV_ID, "--out", str(out), "--limit", "2",
                         "--tokenizer", tokenizer_dir]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2
    assert rows[0]["prompt"].startswith("<|im_start|>system\n") and '"name": "search"' in rows[0]["prompt"]
    assert rows[0]["prompt"].endswith("<|im_start|>assistant\n")
    assert json.loads(rows[0]["label"])["env_id"] == ENV_ID


def test_bad_env_kwargs_are_reported(tmp_path, capsys):
    assert prepare_data(["--trainer", "verl", "--env", ENV_ID, "--out", str(tmp_path / "x.parquet"),
                         "--env-kwargs", "[1]"]) == 2
    assert "JSON object" in capsys.readouterr().err


def test_offline_score_matches_the_env_reward():
    row = next(task_rows(ENV_ID, limit=1))
    gold = row.task["golden_answers"][0]
    transcript = ("<tool_call>{}</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n<answer>decoy</answer>"
                  "\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\nok\n</think>\n\n"
                  f"<answer>{gold}</answer><|im_end|>")
    assert last_model_turn(transcript, Qwen3ChatFormat.last_turn_markers).startswith("<think>")
    assert score_response(ENV_ID, row.task, transcript).value == 1.0
    decoy = transcript.replace(f"<answer>{gold}</answer>", "no answer")
    assert score_response(ENV_ID, row.task, decoy).value == 0.0
    r1 = f"<search>q</search>\n\n<information><answer>{gold}</answer></information>\n\n<answer>{gold}</answer>"
    assert score_response("rlf/Search-NQ-SearchR1-v0", row.task, r1).value == 1.0


def test_offline_score_on_a_response_decoded_without_special_tokens(qwen3_tokenizer):
    row = next(task_rows(ENV_ID, limit=1))
    gold = row.task["golden_answers"][0]
    response = ("<tool_call>{}</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n<answer>decoy</answer>"
                f"\n</tool_response><|im_end|>\n<|im_start|>assistant\n<answer>{gold}</answer><|im_end|>")
    skipped = qwen3_tokenizer.decode(qwen3_tokenizer.encode(response), skip_special_tokens=True)
    assert "<|im_start|>" not in skipped
    assert score_response(ENV_ID, row.task, skipped).value == 1.0
    assert score_response(ENV_ID, row.task, skipped.replace(gold, "wrong")).value == 0.0


def test_the_latest_marker_starts_the_last_turn():
    response = ("<|im_start|>assistant\nfirst <search>q</search>\n\n<information>Doc</information>\n\n"
                "<answer>last</answer>")
    markers = SearchR1Format.last_turn_markers + Qwen3ChatFormat.last_turn_markers
    assert last_model_turn(response, markers) == "\n\n<answer>last</answer>"
    assert last_model_turn("no markers <answer>a</answer>", markers) == "no markers <answer>a</answer>"


def test_the_search_r1_prompt_has_no_tool_calling_system_block(qwen3_tokenizer):
    row = next(task_rows("rlf/Search-NQ-SearchR1-v0", limit=1))
    assert row.tools == []
    prompt = prompt_text(qwen3_tokenizer, row.messages, row.tools, **row.template_kwargs)
    assert "<tool_call>" not in prompt and "# Tools" not in prompt and "<search>" in prompt


def test_a_plain_header_the_model_writes_is_not_a_turn_where_special_headers_are_kept():
    """``"\\nassistant\\n"`` is how the header reads decoded without special tokens; in a response that kept them,
    the model wrote it itself, and the answer after it is not the one the env read."""
    row = next(iter(task_rows(ENV_ID, {"max_turns": 3}, limit=1)))
    gold = row.task["golden_answers"][0]
    response = (f"<|im_start|>assistant\n<answer>wrong</answer>\nassistant\n<answer>{gold}</answer><|im_end|>")
    assert last_model_turn(response, Qwen3ChatFormat.last_turn_markers).startswith("<answer>wrong</answer>")
    assert score_response(ENV_ID, row.task, response).value == 0.0
    assert score_response(ENV_ID, row.task, response.replace("wrong", gold)).value == 1.0
