"""``python -m benchmarks.openrlhf_overhead``: the OpenRLHF adapter's cost per turn at ~4k-token observations.

Plays search episodes of rlf/Search-NQ-v0 over the wiki-18 sample through OpenRLHF's real MultiTurnAgentExecutor
and the adapter, with an engine that answers at once (so only CPU work on the rollout side is measured), each
response making parallel searches with topk=20 so that an observation holds about 4k tokens. Prints a table and
writes JSON (``--out``). Rows:

- adapter, per turn: the token bookkeeping of a turn outside the engine and the env: the exact text of the
  response's ids, and the observation tokenised once (``DeltaTokenizer``: the budget check, then the executor's
  ``hf_tokenizer(..., return_tensors="pt")`` call answered from the memo);
- plain tokenizer: that executor call on the Hugging Face tokenizer itself (what the wrapper replaces);
- env step: ``env.astep`` (parse, in-process MCP search, observation text);
- whole turn: one turn of the real executor end to end, engine excluded.

Needs openrlhf (the .venv-openrlhf of .ci/openrlhf.sh) and a tokenizer (``--tokenizer``, default: the Qwen3 one
in ../shared/data).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from benchmarks.overhead_episodes import ENV_ID, overhead_arguments, report, scripted_responses
from rlfactory_adapters.delta_encoder import delta_encoder
from rlfactory_adapters.env_lease import alease_env
from rlfactory_adapters.openrlhf.agent_func import AgentExecutor
from rlfactory_adapters.openrlhf.delta_tokenizer import DeltaTokenizer
from rlfactory_adapters.task_rows import task_rows


class InstantEngine:
    """Returns the next scripted response at once, as vLLM's RequestOutput would carry it."""

    def __init__(self, tokenizer: Any, responses: list[str]):
        self.scripts = [tokenizer.encode(r, add_special_tokens=False) for r in responses]
        self.calls = 0

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        ids = self.scripts[min(self.calls, len(self.scripts) - 1)][: sampling_params.max_tokens]
        self.calls += 1
        return SimpleNamespace(outputs=[SimpleNamespace(token_ids=ids, text="", finish_reason="stop", logprobs=None)])


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


async def measure(tokenizer: Any, corpus: Path, episodes: int, turns: int, searches: int) -> dict[str, Any]:
    env_kwargs = {"corpus_path": str(corpus), "max_turns": turns + 1}
    rows = list(task_rows(ENV_ID, env_kwargs, limit=episodes))
    responses = scripted_responses(rows[0].task["question"], turns, searches)

    # one observation, for the component timings
    step_times = []
    async with alease_env(ENV_ID, env_kwargs) as env:
        for _ in range(7):
            await env.areset(options={"task": rows[0].task})
            started = time.perf_counter()
            observation, *_ = await env.astep(responses[0])
            step_times.append(time.perf_counter() - started)
    env_step_ms = statistics.median(step_times) * 1000
    response_ids = tokenizer.encode(responses[0], add_special_tokens=False)
    encoder = delta_encoder(tokenizer)
    obs_tokens = len(encoder.encode(observation))
    decode_ms = median_ms(lambda: tokenizer.decode(response_ids, skip_special_tokens=False), 50)

    def delta_turn() -> None:
        wrapper = DeltaTokenizer(tokenizer, encoder)
        wrapper.encode_delta(observation)
        wrapper(text=observation, add_special_tokens=False, return_tensors="pt")["input_ids"][0].tolist()

    count_ms = median_ms(delta_turn, 50)
    plain_ms = median_ms(lambda: tokenizer(text=observation, add_special_tokens=False,
                                           return_tensors="pt")["input_ids"][0].tolist(), 50)

    # whole turns through the real executor
    executor = AgentExecutor()
    params = SimpleNamespace(max_tokens=None, logprobs=None, skip_special_tokens=False)
    await executor.execute("warm-up", rows[0].label(), params, 65_536, tokenizer, InstantEngine(tokenizer, responses))
    started = time.perf_counter()
    outs = [await executor.execute("p", row.label(), params, 65_536, tokenizer, InstantEngine(tokenizer, responses))
            for row in rows]
    elapsed = time.perf_counter() - started
    total_turns = sum(len(out["action_ranges"]) for out in outs)
    return {
        "observation_tokens": obs_tokens, "response_tokens": len(response_ids), "episodes": len(outs),
        "turns": total_turns, "adapter_decode_ms": decode_ms, "adapter_tokenize_ms": count_ms,
        "adapter_per_turn_ms": decode_ms + count_ms, "plain_tokenizer_ms": plain_ms,
        "env_step_ms": env_step_ms, "whole_turn_ms": elapsed * 1000 / total_turns,
        "delta_encoder": type(encoder).__name__,
    }


def main(argv: list[str] | None = None) -> int:
    args = overhead_arguments("python -m benchmarks.openrlhf_overhead", __doc__.split("\n")[0],
                              "openrlhf_adapter.json").parse_args(argv)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    result = asyncio.run(measure(tokenizer, Path(args.corpus), args.episodes, args.turns, args.searches))
    rows = [
        ("observation size", f"{result['observation_tokens']:,} tokens (response {result['response_tokens']} tokens)"),
        ("adapter, per turn", f"{result['adapter_per_turn_ms']:.3f} ms (exact text {result['adapter_decode_ms']:.3f}"
                              f" + observation tokens {result['adapter_tokenize_ms']:.3f}, {result['delta_encoder']})"),
        ("same observation through the plain HF tokenizer", f"{result['plain_tokenizer_ms']:.3f} ms"),
        ("env step (parse, in-process MCP search, observation)", f"{result['env_step_ms']:.3f} ms"),
        ("whole turn through the real executor, engine excluded", f"{result['whole_turn_ms']:.3f} ms "
                                                                  f"({result['turns']} turns)"),
    ]
    report(f"OpenRLHF adapter, {result['episodes']} episodes", rows, result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
