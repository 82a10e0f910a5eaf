"""``python -m benchmarks.adapter_overhead --tokenizer PATH``: the adapters' own cost per turn.

Per turn an adapter decodes the model's tokens (to give the env text), appends them, tokenises the env's
observation delta and appends it. This measures that work at a given observation size (default 4096 tokens of
search results in Qwen3 markup) with the fast delta encoder and with the plain tokenizer, prints a table and
writes ``bench_results/adapter_overhead.json``. CPU time per turn, best of ``--repeats`` rounds.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

from rlfactory_adapters.delta_encoder import TokenizerDeltaEncoder, delta_encoder
from rlfactory_adapters.token_episode import TokenEpisode

PASSAGE = ('Doc {i}(Title: "Harbour town {i}") The harbour town {i} lies on the northern coast of Velmora; it was '
           "founded in {year} and is known for its herring fleet, the Lantern Tide festival and a lighthouse that "
           "has stood since {year2}. Population: {pop:,} (census of 2020). ")


def observation_of(tokenizer: Any, n_tokens: int) -> str:
    """A Qwen3-style tool-response observation of about ``n_tokens`` tokens of search-result text."""
    head = "<|im_end|>\n<|im_start|>user\n<tool_response>\n"
    tail = "\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    body, i = "", 0
    while len(tokenizer.encode(head + body + tail, add_special_tokens=False)) < n_tokens:
        body += PASSAGE.format(i=i, year=1200 + 7 * i, year2=1500 + i, pop=1000 * i)
        i += 1
    return head + body + tail


def per_turn_seconds(tokenizer: Any, encoder: Any, response_ids: list[int], observation: str, repeats: int,
                     turns: int = 8) -> float:
    best = float("inf")
    for _ in range(repeats):
        episode = TokenEpisode(tokenizer, [0] * 256, 10**9, encoder=encoder)
        started = time.process_time()
        for _ in range(turns):
            kept = episode.add_model_tokens(response_ids, [-0.5] * len(response_ids))
            tokenizer.decode(kept, skip_special_tokens=False)
            episode.add_environment_text(observation)
        best = min(best, (time.process_time() - started) / turns)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.adapter_overhead", description=__doc__.split("\n")[0])
    parser.add_argument("--tokenizer", required=True, help="a Hugging Face tokenizer directory or name")
    parser.add_argument("--observation-tokens", type=int, nargs="+", default=[512, 4096])
    parser.add_argument("--response-tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default="bench_results/adapter_overhead.json")
    args = parser.parse_args(argv)

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    started = time.perf_counter()
    fast = delta_encoder(tokenizer)
    build_s = time.perf_counter() - started
    plain = TokenizerDeltaEncoder(tokenizer)
    response = ("<think>\nThe passage says the town was founded in 1306, so I will search once more for its "
                "festival. " * 40)
    response_ids = tokenizer.encode(response, add_special_tokens=False)[: args.response_tokens]

    rows = []
    for n in args.observation_tokens:
        observation = observation_of(tokenizer, n)
        n_obs = len(plain.encode(observation))
        assert fast.encode(observation) == plain.encode(observation)
        fast_s = per_turn_seconds(tokenizer, fast, response_ids, observation, args.repeats)
        plain_s = per_turn_seconds(tokenizer, plain, response_ids, observation, args.repeats)
        rows.append({"observation_tokens": n_obs, "response_tokens": len(response_ids),
                     "fast_ms_per_turn": fast_s * 1e3, "tokenizer_ms_per_turn": plain_s * 1e3,
                     "speedup": plain_s / fast_s})

    print(f"adapter overhead per turn (decode {len(response_ids)} model tokens, tokenise the observation, "
          f"bookkeeping); CPU ms, best of {args.repeats}")
    print(f"fast encoder: {type(fast).__name__} (built in {build_s:.2f} s, once per process)")
    print("| observation tokens | fast encoder | tokenizer.encode | speedup |")
    print("|---|---|---|---|")
    for row in rows:
        print(f"| {row['observation_tokens']} | {row['fast_ms_per_turn']:.2f} ms | "
              f"{row['tokenizer_ms_per_turn']:.2f} ms | {row['speedup']:.1f}x |")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "adapter_overhead", "tokenizer": args.tokenizer,
                               "encoder": type(fast).__name__, "encoder_build_s": build_s,
                               "machine": platform.platform(), "rows": rows}, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
