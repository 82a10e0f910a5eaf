"""``python -m benchmarks.verl_overhead``: the verl adapter's cost per turn at ~4k-token observations.

Plays search episodes of rlf/Search-NQ-v0 over the wiki-18 sample through ``RlfAgentLoop`` as verl builds it
(verl's ``ppo_trainer`` config composed by hydra, the loop instantiated from ``agent_loop.yaml``), with a rollout
server that answers at once, so only the rollout side's CPU work is measured. Each search response makes parallel
searches with topk=20, so an observation holds about 4k tokens. Prints a table and writes JSON (``--out``). Rows:

- token bookkeeping per turn: the driver's decode of the model's ids and the observation's delta tokenisation
  (``metrics["tokenize_s"]`` of the episodes, divided by their turns);
- adapter per turn: everything of ``RlfAgentLoop.run`` that is neither generation nor the env step (row parsing,
  env lease, reset, prompt rendering, bookkeeping, ``AgentLoopOutput``), per turn;
- loop instantiation per episode: verl builds a new loop object per sample (``hydra.utils.instantiate``, with
  ``AgentLoopBase.__init__``'s token builder), not counted in the rows above;
- env step: ``env.astep`` (parse, in-process MCP search, observation text), per turn;
- scripted generate call per turn: the instant server's answer as the loop awaits it (no model).

Needs verl (the .venv-verl of .ci/verl.sh) and a tokenizer (``--tokenizer``, default: the Qwen3 one in
../shared/data).
"""

from __future__ import annotations

import asyncio
import json
import platform
import time
from pathlib import Path
from typing import Any

import hydra
import verl
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from verl.experimental.agent_loop.agent_loop import DictConfigWrap
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.workers.rollout.replica import TokenOutput

from benchmarks.overhead_episodes import ENV_ID, overhead_arguments, report, scripted_responses
from rlfactory_adapters.delta_encoder import delta_encoder
from rlfactory_adapters.task_rows import task_rows
from rlfactory_adapters.verl import AGENT_LOOP_CONFIG_PATH
from rlfactory_adapters.verl.agent_loop import count_env_turns


class InstantServer:
    """verl's ``server_manager.generate`` answering at once with the next scripted response of the request."""

    def __init__(self, tokenizer: Any, responses: list[str]):
        self.scripts = [tokenizer.encode(r, add_special_tokens=False) for r in responses]
        self.turn: dict[str, int] = {}

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **_: Any) -> TokenOutput:
        turn = self.turn.get(request_id, 0)
        self.turn[request_id] = turn + 1
        ids = self.scripts[min(turn, len(self.scripts) - 1)][: sampling_params["max_tokens"]]
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids), num_preempted=0)


def loop_factory(tokenizer: Any, server: Any, response_length: int) -> Any:
    """A function making the loop as verl's AgentLoopWorker does per sample (``rlf_search_agent`` of
    agent_loop.yaml, instantiated by hydra)."""
    with initialize_config_dir(config_dir=str(Path(verl.__file__).parent / "trainer" / "config"), version_base=None):
        config = compose(config_name="ppo_trainer", overrides=[
            "data.max_prompt_length=4096", f"data.max_response_length={response_length}"])
    entry = next(e for e in OmegaConf.load(AGENT_LOOP_CONFIG_PATH) if e.name == "rlf_search_agent")
    return lambda: hydra.utils.instantiate(
        config=entry, trainer_config=DictConfigWrap(config), server_manager=server, tokenizer=tokenizer,
        processor=None, hf_model_type=getattr(tokenizer, "model_type", None) or "qwen3", dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data))


async def measure(tokenizer: Any, corpus: Path, episodes: int, turns: int, searches: int) -> dict[str, Any]:
    env_kwargs = {"corpus_path": str(corpus), "max_turns": turns + 1}
    rows = list(task_rows(ENV_ID, env_kwargs, limit=episodes))
    responses = scripted_responses(rows[0].task["question"], turns, searches)
    make_loop = loop_factory(tokenizer, InstantServer(tokenizer, responses), response_length=65_536)
    sampling_params = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": True}

    def extra_info(row: Any) -> dict[str, Any]:
        return {"env_id": ENV_ID, "env_kwargs": json.dumps(env_kwargs), "task": json.dumps(row.task)}

    await make_loop().run(sampling_params, extra_info=extra_info(rows[0]))  # warm-up: runtime, server, encoder
    outputs, wall, instantiate_s = [], 0.0, 0.0
    for row in rows:
        started = time.perf_counter()
        loop = make_loop()
        instantiate_s += time.perf_counter() - started
        started = time.perf_counter()
        outputs.append(await loop.run(sampling_params, extra_info=extra_info(row)))
        wall += time.perf_counter() - started
    total_turns = sum(int(o.extra_fields["rlf_metrics"]["num_turns"]) for o in outputs)
    generate_s = sum(o.metrics.generate_sequences for o in outputs)
    env_s = sum(o.metrics.tool_calls for o in outputs)
    tokenize_s = sum(o.extra_fields["rlf_metrics"]["tokenize_s"] for o in outputs)
    first_mask = outputs[0].response_mask
    return {
        "benchmark": "verl_adapter_overhead", "episodes": len(outputs), "turns": total_turns,
        "observation_tokens_mean": first_mask.count(0) / count_env_turns(first_mask),
        "response_tokens": len(tokenizer.encode(responses[0], add_special_tokens=False)),
        "token_bookkeeping_ms_per_turn": tokenize_s * 1000 / total_turns,
        "adapter_ms_per_turn": (wall - generate_s - env_s) * 1000 / total_turns,
        "env_step_ms_per_turn": env_s * 1000 / total_turns,
        "generate_call_ms_per_turn": generate_s * 1000 / total_turns,
        "loop_instantiation_ms_per_episode": instantiate_s * 1000 / len(outputs),
        "delta_encoder": type(delta_encoder(tokenizer)).__name__, "machine": platform.platform(),
    }


def main(argv: list[str] | None = None) -> int:
    args = overhead_arguments("python -m benchmarks.verl_overhead", __doc__.split("\n")[0],
                              "verl_adapter.json").parse_args(argv)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    result = asyncio.run(measure(tokenizer, Path(args.corpus), args.episodes, args.turns, args.searches))
    table = [
        ("observation size", f"{result['observation_tokens_mean']:,.0f} tokens (response "
                             f"{result['response_tokens']} tokens, {result['delta_encoder']})"),
        ("token bookkeeping per turn (decode + observation delta)", f"{result['token_bookkeeping_ms_per_turn']:.3f} ms"),
        ("adapter per turn (all of run() but generate and env step)", f"{result['adapter_ms_per_turn']:.3f} ms"),
        ("env step per turn (parse, in-process MCP search, observation)", f"{result['env_step_ms_per_turn']:.3f} ms"),
        ("scripted generate call per turn (no model)", f"{result['generate_call_ms_per_turn']:.3f} ms"),
        ("loop instantiation per episode (verl: one loop per sample)",
         f"{result['loop_instantiation_ms_per_episode']:.3f} ms"),
    ]
    report(f"verl adapter, {result['episodes']} episodes, {result['turns']} turns", table, result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
