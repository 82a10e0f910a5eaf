"""The GPU training launches (examples/verl/*.sh, examples/openrlhf/*.sh) checked without a GPU or a trainer: no
test here trains. Statically: each script is valid bash; every `python -m` target, file path, verl agent name and
env setting it names exists (rlfactory_envs.env_spec.resolve refuses an unknown setting). Then each script's data
step runs for real on the embedded sample with ``PYTHON`` a recorder that runs `rlfactory_adapters.prepare_data` and
only records the trainer's command line (and `ray` a stub): the data files are written and the trainer command
names them. With .venv-openrlhf present, OpenRLHF 0.11's own argument parser reads the recorded command line.
(tests/adapters/verl/test_examples.py, in .venv-verl, composes the verl command line with verl's hydra config.)"""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from rlfactory_envs.env_spec import resolve
from rlfactory_envs.kernel.mcp.config import HttpServerEntry, load_mcp_config
from rlfactory_envs.search.family import SAMPLE_CORPUS_PATH, SAMPLE_QUESTIONS_PATH
from tests.conftest import REPO_ROOT, shared_file
from tests.examples.helpers import EXAMPLES, rlf_serve, run_example

ENV_ID = "rlf/Search-NQ-v0"
SCRIPTS = ["verl/run_search_nq_grpo_qwen3_4b.sh", "verl/run_search_nq_grpo_http_tools.sh",
           "openrlhf/train_grpo_search_nq.sh"]
TRAINER_MODULES = {"verl": "verl.trainer.main_ppo", "openrlhf": "openrlhf.cli.train_ppo_ray"}
PREPARE_DATA = ["-m", "rlfactory_adapters.prepare_data"]
RECORDER = """#!{python}
import json, os, sys
with open({log!r}, "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:3] == {prepare_data!r}:
    os.execv({python!r}, [{python!r}] + sys.argv[1:])
"""


def agent_names() -> set[str]:
    return {entry["name"] for entry in yaml.safe_load((REPO_ROOT / "adapters/rlfactory_adapters/verl/agent_loop.yaml").read_text())}


def check_env_kwargs(kwargs: dict) -> None:
    """Every setting is one the env takes, and every tool-server key one the toolbox reads (it ignores others)."""
    resolve(ENV_ID, kwargs)  # ConfigError names an unknown setting
    if "tool_servers" in kwargs:
        load_mcp_config(kwargs["tool_servers"])
        for entry in kwargs["tool_servers"]["mcpServers"].values():
            assert set(entry) <= set(HttpServerEntry.model_fields), set(entry) - set(HttpServerEntry.model_fields)


# -- static ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("script", SCRIPTS)
def test_trainer_script_is_valid_bash(script):
    done = subprocess.run(["bash", "-n", str(EXAMPLES / script)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("script", SCRIPTS)
def test_trainer_script_names_only_modules_files_agents_and_settings_that_exist(script):
    text = (EXAMPLES / script).read_text(encoding="utf-8")
    trainer = script.split("/")[0]
    modules = set(re.findall(r"(?<!\S)-m\s+([A-Za-z_][\w.]*)", text))
    assert modules, "the script runs no python -m module"
    for module in modules:
        if module.startswith("rlfactory_"):
            assert importlib.util.find_spec(module) is not None, module
        else:
            assert module == TRAINER_MODULES[trainer], f"{module}: not {trainer}'s entry point"
    paths = set(re.findall(r"\$PWD/([\w./-]+)", text)) | set(re.findall(r"\b((?:examples|adapters)/[\w./-]+\.\w+)",
                                                                       text))
    assert paths
    for path in paths:  # the scripts cd to the checkout's root first
        assert (REPO_ROOT / path).is_file(), path
    assert set(re.findall(r"(?:--agent-name |default_agent_loop=)(\w+)", text)) <= agent_names()
    for key, value in re.findall(r'"(\w+)": (false|true)', text):  # settings the comments tell you to add
        check_env_kwargs({key: value == "true"})


@pytest.mark.parametrize("trainer", sorted(TRAINER_MODULES))
def test_trainer_entry_point_exists_in_the_trainers_venv(trainer):
    """The trainer module each script launches, as installed by .ci/{trainer}.sh (no import: it needs GPU wheels)."""
    venv = REPO_ROOT / f".venv-{trainer}"
    if not venv.is_dir():
        pytest.skip(f"{venv} is absent (bash .ci/{trainer}.sh makes it)")
    relative = Path(*TRAINER_MODULES[trainer].split(".")).with_suffix(".py")
    assert list(venv.glob(f"lib/python*/site-packages/{relative}")), f"no {relative} in {venv}"


# -- the data step, the trainer recorded ---------------------------------------------------------------------------


def run_up_to_the_trainer(script: str, tmp_path: Path, **env: str) -> list[list[str]]:
    """Run ``script`` with the recorder as PYTHON and a stub `ray` on PATH; the recorded command lines."""
    log, bin_dir = tmp_path / "calls.jsonl", tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    recorder = bin_dir / "python-recorder"
    recorder.write_text(RECORDER.format(python=sys.executable, log=str(log), prepare_data=PREPARE_DATA))
    (bin_dir / "ray").write_text(f"#!/bin/sh\necho ray \"$@\" >> {tmp_path / 'ray.log'}\n")
    for stub in (recorder, bin_dir / "ray"):
        stub.chmod(0o755)
    run_example(["bash", f"examples/{script}"], cwd=tmp_path, timeout_s=120, PYTHON=str(recorder),
                PATH=f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin", **env)
    return [json.loads(line) for line in log.read_text().splitlines()]


def data_steps(calls: list[list[str]]) -> list[dict[str, str]]:
    steps = []
    for call in calls:
        if call[:2] == PREPARE_DATA:
            words = call[2:]
            steps.append({words[i]: words[i + 1] if i + 1 < len(words) else "" for i in range(0, len(words), 2)})
    return steps


def trainer_call(calls: list[list[str]], trainer: str) -> list[str]:
    [call] = [c for c in calls if c[:2] == ["-m", TRAINER_MODULES[trainer]]]
    return call[2:]


def verl_overrides(calls: list[list[str]]) -> dict[str, str]:
    return dict(arg.split("=", 1) for arg in trainer_call(calls, "verl"))


def check_verl_data(calls: list[list[str]], data_dir: Path) -> dict:
    steps = data_steps(calls)
    assert [s["--split"] for s in steps] == ["train", "test"]
    for step in steps:
        assert step["--trainer"] == "verl" and step["--env"] == ENV_ID and step["--agent-name"] in agent_names()
        check_env_kwargs(json.loads(step["--env-kwargs"]))
    overrides = verl_overrides(calls)
    assert overrides["data.train_files"] == str(data_dir / "train.parquet")
    assert overrides["data.val_files"] == str(data_dir / "test.parquet")
    assert Path(overrides["actor_rollout_ref.rollout.agent.agent_loop_config_path"]).is_file()
    assert overrides["actor_rollout_ref.rollout.agent.default_agent_loop"] in agent_names()
    train = pq.read_table(data_dir / "train.parquet").to_pylist()
    assert len(train) > 10 and pq.read_table(data_dir / "test.parquet").num_rows == 5
    assert train[0]["agent_name"] == "rlf_search_agent" and train[0]["extra_info"]["env_id"] == ENV_ID
    return json.loads(train[0]["extra_info"]["env_kwargs"])


def test_verl_single_node_script_data_step_without_training(tmp_path):
    data_dir = tmp_path / "data"
    calls = run_up_to_the_trainer("verl/run_search_nq_grpo_qwen3_4b.sh", tmp_path, NQ_TRAIN=str(SAMPLE_QUESTIONS_PATH),
                                  NQ_TEST=str(SAMPLE_QUESTIONS_PATH), WIKI=str(SAMPLE_CORPUS_PATH), VAL_LIMIT="5",
                                  INDEX_DIR=str(tmp_path / "bm25"), DATA_DIR=str(data_dir), WANDB_API_KEY="")
    assert verl_overrides(calls)["trainer.logger"] == '["console"]'  # wandb only with a key to log with
    env_kwargs = check_verl_data(calls, data_dir)
    assert env_kwargs == {"data_path": str(SAMPLE_QUESTIONS_PATH), "corpus_path": str(SAMPLE_CORPUS_PATH),
                          "index_dir": str(tmp_path / "bm25"), "max_turns": 4}


def test_verl_http_tools_script_data_step_without_training(tmp_path):
    data_dir = tmp_path / "data"
    with rlf_serve("search") as url:  # the data step connects to it once
        calls = run_up_to_the_trainer("verl/run_search_nq_grpo_http_tools.sh", tmp_path, RETRIEVER_URL=url,
                                      NQ_TRAIN=str(SAMPLE_QUESTIONS_PATH), NQ_TEST=str(SAMPLE_QUESTIONS_PATH),
                                      VAL_LIMIT="5", DATA_DIR=str(data_dir))
    env_kwargs = check_verl_data(calls, data_dir)
    assert env_kwargs["tool_servers"]["mcpServers"]["search"]["url"] == url and "corpus_path" not in env_kwargs
    assert verl_overrides(calls)["trainer.experiment_name"] == "search-nq-grpo-qwen3-4b-http-tools"


@pytest.fixture(scope="module")
def openrlhf_run(tmp_path_factory) -> tuple[list[list[str]], Path]:
    tmp_path = tmp_path_factory.mktemp("openrlhf")
    tokenizer = shared_file("tokenizers/qwen3/tokenizer.json").parent  # the data step renders prompts with it
    calls = run_up_to_the_trainer("openrlhf/train_grpo_search_nq.sh", tmp_path, NQ_TRAIN=str(SAMPLE_QUESTIONS_PATH),
                                  NQ_TEST=str(SAMPLE_QUESTIONS_PATH), WIKI=str(SAMPLE_CORPUS_PATH), VAL_LIMIT="5",
                                  INDEX_DIR=str(tmp_path / "bm25"), DATA_DIR=str(tmp_path / "data"),
                                  OUT_DIR=str(tmp_path / "out"), MODEL=str(tokenizer))
    return calls, tmp_path


def test_openrlhf_script_data_step_without_training(openrlhf_run):
    calls, tmp_path = openrlhf_run
    data_dir = tmp_path / "data"
    steps = data_steps(calls)
    assert [Path(s["--out"]).name for s in steps] == ["train.jsonl", "test.jsonl"]
    for step in steps:
        assert step["--trainer"] == "openrlhf" and step["--env"] == ENV_ID
        check_env_kwargs(json.loads(step["--env-kwargs"]))
    train = [json.loads(line) for line in (data_dir / "train.jsonl").read_text().splitlines()]
    assert len(train) > 10 and len((data_dir / "test.jsonl").read_text().splitlines()) == 5
    assert train[0]["prompt"].startswith("<|im_start|>") and '"name": "search"' in train[0]["prompt"]
    assert json.loads(train[0]["label"])["env_id"] == ENV_ID
    args = trainer_call(calls, "openrlhf")
    flag = dict(itertools.pairwise(args))
    assert flag["--data.prompt_dataset"] == str(data_dir / "train.jsonl")
    assert flag["--eval.dataset"] == str(data_dir / "test.jsonl")
    assert Path(flag["--train.agent_func_path"]).is_file()
    assert (tmp_path / "ray.log").read_text().startswith("ray status")


def test_openrlhf_script_flags_parse_with_openrlhf_0_11s_own_parser(openrlhf_run):
    """The argument parser of the installed openrlhf/cli/train_ppo_ray.py (its __main__ block up to parse_args; the
    module itself imports ray and GPU code) reads the recorded command line: a misspelt or missing flag fails."""
    calls, _ = openrlhf_run
    sources = list((REPO_ROOT / ".venv-openrlhf").glob("lib/python*/site-packages/openrlhf/cli/train_ppo_ray.py"))
    if not sources:
        pytest.skip(".venv-openrlhf is absent (bash .ci/openrlhf.sh makes it)")
    source = sources[0].read_text(encoding="utf-8")
    start = source.index("    parser = argparse.ArgumentParser()", source.index('if __name__ == "__main__":'))
    end = source.index("    args = parser.parse_args()", start)
    namespace: dict = {}
    exec(textwrap.dedent(source[start:end]), {"argparse": __import__("argparse"),  # noqa: S102
                                              "datetime": __import__("datetime").datetime}, namespace)
    args = vars(namespace["parser"].parse_args(trainer_call(calls, "openrlhf")))
    assert args["train.agent_func_path"].endswith("adapters/rlfactory_adapters/openrlhf/agent_func.py")
    assert args["algo.advantage.estimator"] == "group_norm" and args["rollout.n_samples_per_prompt"] == 8


def test_openrlhf_script_data_step_with_a_search_server_over_http(tmp_path):
    """The script's other branch: RETRIEVER_URL instead of WIKI puts the server's URL in the rows' env kwargs."""
    tokenizer = shared_file("tokenizers/qwen3/tokenizer.json").parent
    data_dir = tmp_path / "data"
    with rlf_serve("search") as url:
        calls = run_up_to_the_trainer("openrlhf/train_grpo_search_nq.sh", tmp_path, RETRIEVER_URL=url,
                                      NQ_TRAIN=str(SAMPLE_QUESTIONS_PATH), NQ_TEST=str(SAMPLE_QUESTIONS_PATH),
                                      VAL_LIMIT="5", DATA_DIR=str(data_dir), OUT_DIR=str(tmp_path / "out"),
                                      MODEL=str(tokenizer))
    for step in data_steps(calls):
        env_kwargs = json.loads(step["--env-kwargs"])
        check_env_kwargs(env_kwargs)
        assert env_kwargs["tool_servers"]["mcpServers"]["search"]["url"] == url and "corpus_path" not in env_kwargs
    label = json.loads(json.loads((data_dir / "test.jsonl").read_text().splitlines()[0])["label"])
    assert label["env_kwargs"]["tool_servers"]["mcpServers"]["search"]["url"] == url
