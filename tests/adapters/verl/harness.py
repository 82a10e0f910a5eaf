"""What the verl adapter tests drive: verl 0.9's real config, AgentLoopWorker and dataset, with a scripted
rollout server in place of vLLM (the one part that needs a GPU).

Import only after ``pytest.importorskip("verl")``.
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import verl
from hydra import compose, initialize_config_dir
from transformers import Qwen3Config
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
from verl.protocol import DataProto
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl.workers.rollout.replica import TokenOutput

from rlfactory_adapters.chat_prompt import prompt_text, template_kwargs_for
from rlfactory_adapters.prepare_data import main as prepare_data
from rlfactory_adapters.verl import AGENT_LOOP_CONFIG_PATH
from rlfactory_envs import make_env  # also registers the rlf/* ids
from tests.adapters.stop_strings import stop_after
from tests.conftest import shared_file

VERL_CONFIG_DIR = str(Path(verl.__file__).parent / "trainer" / "config")


def qwen3_model_dir(directory: Path) -> Path:
    """A model directory verl's ``HFModelConfig`` accepts: the real Qwen3 tokenizer and a Qwen3 config.json (no
    weights: the rollout server is scripted). Skips when ../shared/data has no Qwen3 tokenizer."""
    source = shared_file("tokenizers/qwen3/tokenizer.json").parent
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(source / name, directory / name)
    Qwen3Config(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=2,
                num_key_value_heads=1, head_dim=32, vocab_size=151_936,
                architectures=["Qwen3ForCausalLM"]).save_pretrained(directory)
    return directory


def verl_config(overrides: Sequence[str] = ()) -> Any:
    """verl's own ``ppo_trainer`` config composed with ``overrides``, as ``python -m verl.trainer.main_ppo``
    composes it (hydra rejects keys that do not exist)."""
    with initialize_config_dir(config_dir=VERL_CONFIG_DIR, version_base=None):
        return compose(config_name="ppo_trainer", overrides=list(overrides))


def agent_loop_worker(model_dir: Path, server: Any, *, prompt_length: int = 1024, response_length: int = 1024,
                      extra: Sequence[str] = (), agent_loop_config: str | Path = AGENT_LOOP_CONFIG_PATH
                      ) -> AgentLoopWorker:
    """verl's AgentLoopWorker (the class its Ray actors run), reading ``agent_loop_config`` (default: this
    package's agent_loop.yaml)."""
    config = verl_config([
        "algorithm.adv_estimator=grpo",
        f"actor_rollout_ref.model.path={model_dir}",
        "actor_rollout_ref.rollout.name=vllm",
        "actor_rollout_ref.rollout.mode=async",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={agent_loop_config}",
        f"data.max_prompt_length={prompt_length}",
        f"data.max_response_length={response_length}",
        *extra,
    ])
    return AgentLoopWorker(config, llm_client=server)


def dataset_batch(parquet: Path, worker: AgentLoopWorker, repeat: int = 1) -> DataProto:
    """The rows of ``parquet`` read by verl's RLHFDataset and batched as the trainer batches them for the rollout
    (collate, ``DataProto.from_single_dict``, ``n`` interleaved repeats)."""
    dataset = RLHFDataset(str(parquet), worker.tokenizer, worker.config.data)
    batch = DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]))
    batch.non_tensor_batch["uid"] = np.array([f"uid-{i}" for i in range(len(batch))], dtype=object)
    return batch.repeat(repeat_times=repeat, interleave=True)


def scripted_logprob(token_id: int) -> float:
    """The log-probability the scripted server reports for a token: a function of the id, so tests can check
    that each log-probability stayed with its token."""
    return -((token_id % 97) + 1) / 100.0


class ScriptedServer:
    """Stands in for verl's ``LLMServerClient``: ``generate`` returns a ``TokenOutput`` with the next scripted
    response of the sample (picked by the question in its prompt; each request id has its own turn counter),
    tokenised with the real tokenizer, stopped after the first of the ``stop`` strings asked for and cut at
    ``max_tokens`` like vLLM, with ``scripted_logprob`` per token.

    ``calls`` records ``(request_id, prompt_ids, sampling_params, returned_ids)`` of every call."""

    def __init__(self, tokenizer: Any, scripts: dict[str, Sequence[str]] | Callable[[str], Sequence[str]]):
        self.tokenizer = tokenizer
        self.scripts = scripts
        self.calls: list[tuple[str, list[int], dict[str, Any], list[int]]] = []
        self._turn: dict[str, int] = defaultdict(int)
        self._script_of: dict[str, Sequence[str]] = {}

    def _script(self, request_id: str, prompt_ids: list[int]) -> Sequence[str]:
        if request_id not in self._script_of:
            prompt = self.tokenizer.decode(prompt_ids, skip_special_tokens=False)
            if callable(self.scripts):
                self._script_of[request_id] = self.scripts(prompt)
            else:
                matches = [script for question, script in self.scripts.items() if question in prompt]
                assert len(matches) == 1, f"no single script for prompt {prompt[-200:]!r}"
                self._script_of[request_id] = matches[0]
        return self._script_of[request_id]

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **_: Any) -> TokenOutput:
        script = self._script(request_id, prompt_ids)
        turn = self._turn[request_id]
        self._turn[request_id] += 1
        ids = self.tokenizer.encode(script[min(turn, len(script) - 1)], add_special_tokens=False)
        ids = stop_after(self.tokenizer, ids, sampling_params.get("stop"))
        limit = int(sampling_params.get("max_tokens", len(ids)))
        cut = ids[:limit]
        logprobs = [scripted_logprob(t) for t in cut] if sampling_params.get("logprobs") else None
        self.calls.append((request_id, list(prompt_ids), dict(sampling_params), cut))
        return TokenOutput(token_ids=cut, log_probs=logprobs, num_preempted=0,
                           stop_reason="length" if len(cut) < len(ids) else "completed",
                           extra_fields={"global_steps": 7, "min_global_steps": 7, "max_global_steps": 7})


def valid_ids(output: DataProto, index: int) -> tuple[list[int], list[int], list[int], list[float]]:
    """Sample ``index`` of a rollout batch without padding: prompt ids, response ids, response mask, rollout
    log-probabilities (from the padded tensors, as the trainer sees them)."""
    prompt_width = output.batch["prompts"].shape[1]
    attention = output.batch["attention_mask"][index]
    prompt_keep = attention[:prompt_width].bool()
    response_keep = attention[prompt_width:].bool()
    prompt = output.batch["prompts"][index][prompt_keep].tolist()
    response = output.batch["responses"][index][response_keep].tolist()
    mask = output.batch["response_mask"][index][response_keep].tolist()
    logprobs = output.batch["rollout_log_probs"][index][response_keep].tolist()
    return prompt, response, mask, logprobs


def replay(tokenizer: Any, env_id: str, task: dict, responses: Sequence[str],
           **env_kwargs: Any) -> tuple[str, str, float, list[str]]:
    """The same episode played on a fresh env by text: (rendered prompt, response-side transcript, reward,
    observations). ``env_id`` is a registered id or an env spec path (``rlfactory_envs.make_env``)."""
    env = make_env(env_id, **env_kwargs)
    try:
        _, info = env.reset(options={"task": task})
        prompt = prompt_text(tokenizer, info["messages"], info["tools"], **template_kwargs_for(env))
        user_prompt = env.transcript
        observations, reward = [], 0.0
        for response in responses:
            obs, reward, terminated, truncated, _ = env.step(response)
            observations.append(obs)
            if terminated or truncated:
                break
        return prompt, env.transcript[len(user_prompt):], reward, observations
    finally:
        env.close()


def mask_runs(ids: Sequence[int], mask: Sequence[int], bit: int) -> list[list[int]]:
    """The maximal runs of ``ids`` whose mask is ``bit``: the model's turns (1) or the env's (0), in order."""
    runs: list[list[int]] = []
    for previous, (token, m) in zip([None, *mask], zip(ids, mask)):
        if m == bit:
            if previous != bit:
                runs.append([])
            runs[-1].append(token)
    return runs


def prepared_rows(directory: Path, env_id: str, rows: int | None,
                  agent_name: str = "rlf_search_agent") -> tuple[Path, list[dict]]:
    """``rows`` tasks (all with ``None``) of ``env_id`` (a registered id or an env spec path) written by
    ``rlfactory_adapters.prepare_data`` in verl's layout (agent ``agent_name``) into ``directory``, and the tasks
    as the rows carry them."""
    import pyarrow.parquet as pq

    path = directory / "train.parquet"
    limit = [] if rows is None else ["--limit", str(rows)]
    assert prepare_data(["--trainer", "verl", "--env", str(env_id), "--out", str(path), *limit,
                         "--agent-name", agent_name]) == 0
    return path, [json.loads(row["extra_info"]["task"]) for row in pq.read_table(path).to_pylist()]
