"""The verl example scripts, run for real up to the trainer: their data step writes parquet files that verl's
RLHFDataset reads, and every hydra override they pass to ``verl.trainer.main_ppo`` composes against verl's own
``ppo_trainer`` config (an unknown or misspelt key fails). ``PYTHON`` is a recorder that runs the data step with
this interpreter and only records the trainer's command line (training needs GPUs and a 4B model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verl", reason="the verl adapter tests run in .venv-verl (bash .ci/verl.sh): verl is not "
                                   "installed here")

import pyarrow.parquet as pq  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset  # noqa: E402

from rlfactory_envs.search.tasks import SAMPLE_CORPUS_PATH, sample_tasks  # noqa: E402
from tests.adapters.verl.harness import verl_config  # noqa: E402
from tests.conftest import REPO_ROOT, shared_file  # noqa: E402
from tests.server_process import http_tool_server  # noqa: E402

EXAMPLES = REPO_ROOT / "examples" / "verl"
AGENT_LOOP_YAML = REPO_ROOT / "adapters" / "rlfactory_adapters" / "verl" / "agent_loop.yaml"
RECORDER = """#!{python}
import json, os, sys
with open({log!r}, "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:3] == ["-m", "rlfactory_adapters.prepare_data"]:
    os.execv({python!r}, [{python!r}] + sys.argv[1:])
"""


@pytest.fixture
def recorder(tmp_path) -> tuple[Path, Path]:
    log = tmp_path / "calls.jsonl"
    python = tmp_path / "python-recorder"
    python.write_text(RECORDER.format(python=sys.executable, log=str(log)))
    python.chmod(0o755)
    return python, log


@pytest.fixture
def questions(tmp_path) -> Path:
    """Five questions of the embedded sample in NQ-open's jsonl layout."""
    path = tmp_path / "nq.jsonl"
    tasks = sample_tasks()
    path.write_text("".join(json.dumps({"question": tasks[i].question, "answer": list(tasks[i].golden_answers)}) + "\n"
                            for i in range(5)))
    return path


def run_script(name: str, python: Path, env: dict[str, str]) -> None:
    completed = subprocess.run(["bash", str(EXAMPLES / name)], env={**os.environ, "PYTHON": str(python), **env},
                               cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stdout + completed.stderr


def trainer_overrides(log: Path) -> list[str]:
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    trainer = [call for call in calls if call[:2] == ["-m", "verl.trainer.main_ppo"]]
    assert len(trainer) == 1
    return trainer[0][2:]


def check_overrides_and_data(overrides: list[str], data_dir: Path, tmp_path: Path) -> dict:
    config = verl_config(overrides)  # raises on a key verl 0.9 does not have
    assert config.algorithm.adv_estimator == "grpo"
    rollout = config.actor_rollout_ref.rollout
    assert rollout.name == "vllm" and rollout.mode == "async" and rollout.n == 8
    assert rollout.multi_turn.enable is True and rollout.calculate_log_probs is True
    assert config.trainer.n_gpus_per_node == 8 and config.trainer.nnodes == 1
    assert Path(rollout.agent.agent_loop_config_path) == AGENT_LOOP_YAML
    assert config.data.train_files == str(data_dir / "train.parquet")

    tokenizer = AutoTokenizer.from_pretrained(str(shared_file("tokenizers/qwen3/tokenizer.json").parent))
    train = RLHFDataset(config.data.train_files, tokenizer, config.data)  # filters prompts over max_prompt_length
    assert len(train) == 5
    row = train[0]
    assert row["agent_name"] == rollout.agent.default_agent_loop == "rlf_search_agent"
    assert row["extra_info"]["env_id"] == "rlf/Search-NQ-v0"
    assert pq.read_table(config.data.val_files).num_rows == 5
    return json.loads(row["extra_info"]["env_kwargs"])


def test_single_node_script(tmp_path, recorder, questions):
    python, log = recorder
    data_dir = tmp_path / "data"
    run_script("run_search_nq_grpo_qwen3_4b.sh", python, {
        "NQ_TRAIN": str(questions), "NQ_TEST": str(questions), "WIKI": str(SAMPLE_CORPUS_PATH),
        "INDEX_DIR": str(tmp_path / "bm25"), "DATA_DIR": str(data_dir)})
    env_kwargs = check_overrides_and_data(trainer_overrides(log), data_dir, tmp_path)
    assert env_kwargs == {"data_path": str(questions), "corpus_path": str(SAMPLE_CORPUS_PATH),
                          "index_dir": str(tmp_path / "bm25"), "max_turns": 4}


@pytest.mark.integration
def test_http_tools_script_reaches_a_search_server_on_another_process(tmp_path, recorder, questions):
    python, log = recorder
    data_dir = tmp_path / "data"
    with http_tool_server("rlfactory_tool_servers.search", "--corpus", str(SAMPLE_CORPUS_PATH)) as url:
        run_script("run_search_nq_grpo_http_tools.sh", python, {
            "RETRIEVER_URL": url, "NQ_TRAIN": str(questions), "NQ_TEST": str(questions), "DATA_DIR": str(data_dir)})
    overrides = trainer_overrides(log)
    assert "trainer.experiment_name=search-nq-grpo-qwen3-4b-http-tools" in overrides
    env_kwargs = check_overrides_and_data(overrides, data_dir, tmp_path)
    assert env_kwargs["tool_servers"]["mcpServers"]["search"]["url"] == url
    assert "corpus_path" not in env_kwargs
