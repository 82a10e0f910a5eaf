"""What the trainer adapters' overhead benchmarks share: scripted search episodes with ~4k-token observations,
their command line and their report (a table on stdout, the numbers as JSON).

Each search response makes ``searches`` parallel searches with ``topk=20`` over the wiki-18 sample, so that an
observation holds about 4k tokens; the last response answers.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TOKENIZER = REPO.parent / "shared" / "data" / "tokenizers" / "qwen3"
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "wiki" / "wiki18_sample_1000.jsonl"
ENV_ID = "rlf/Search-NQ-v0"


def search_response(queries: Sequence[str], topk: int) -> str:
    """A Qwen3 response that calls ``search`` once per query, in parallel."""
    calls = "\n".join("<tool_call>\n" + json.dumps({"name": "search", "arguments": {"query": q, "topk": topk}})
                      + "\n</tool_call>" for q in queries)
    return f"<think>\nI need more passages about this.\n</think>\n\n{calls}<|im_end|>"


def scripted_responses(question: str, turns: int, searches: int) -> list[str]:
    """``turns`` search responses about ``question``, then an answer."""
    search = search_response([f"{question} part {k}" for k in range(searches)], topk=20)
    return [search] * turns + ["<answer> done </answer><|im_end|>"]


def overhead_arguments(prog: str, description: str, default_out: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--tokenizer", default=str(DEFAULT_TOKENIZER))
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--turns", type=int, default=3, help="search turns an episode (then it answers)")
    parser.add_argument("--searches", type=int, default=2, help="parallel searches a response (topk=20 each)")
    parser.add_argument("--out", default=str(REPO / "bench_results" / default_out))
    return parser


def report(title: str, table: Sequence[tuple[str, str]], result: dict[str, Any], out: str | Path) -> None:
    """Print ``title`` and the two-column ``table``; write ``result`` as JSON to ``out``."""
    print(title)
    width = max(len(name) for name, _ in table)
    for name, value in table:
        print(f"{name:<{width}}  {value}")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
