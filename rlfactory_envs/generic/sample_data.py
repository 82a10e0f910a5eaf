"""SYNTHETIC SAMPLE, NOT REAL DATA: arithmetic word problems for trying ``rlf/MCP-v0`` offline.

Deterministic (the numbers come from arithmetic on the row number, no randomness). Each row is
``{"id", "question", "ground_truth"}`` with the exact answer as text, so the built-in ``exact_match`` reward scores
it and the ``calculate`` tool computes it. ``python -m rlfactory_envs.generic.sample_data`` rewrites
``rlfactory_envs/generic/data/arithmetic.jsonl``; a test checks the committed file equals its output.
"""

from __future__ import annotations

import json
from pathlib import Path

DATA_PATH = Path(__file__).resolve().parent / "data" / "arithmetic.jsonl"
ROWS = 24

TEMPLATES = [
    ("A shop sells {a} boxes of {b} pencils each. How many pencils is that in total?", lambda a, b: a * b),
    ("A train travels {a} kilometres a day for {b} days. How many kilometres does it travel?", lambda a, b: a * b),
    ("A library has {a} books and buys {b} more every month for a year. How many books does it have then?",
     lambda a, b: a + 12 * b),
    ("A farmer packs {a} eggs into cartons of {b}. How many eggs are left over?", lambda a, b: a % b),
]


def rows() -> list[dict[str, str]]:
    out = []
    for i in range(ROWS):
        text, answer = TEMPLATES[i % len(TEMPLATES)]
        a, b = 137 + (i * 7919) % 863, 11 + (i * 104729) % 89
        out.append({"id": f"arith-{i:03d}", "question": text.format(a=a, b=b), "ground_truth": str(answer(a, b))})
    return out


def text() -> str:
    return "".join(json.dumps(row) + "\n" for row in rows())


def main() -> None:
    DATA_PATH.parent.mkdir(parents=True, exist_ok=True)
    DATA_PATH.write_text(text(), encoding="utf-8", newline="\n")
    print(f"wrote {ROWS} questions to {DATA_PATH}")


if __name__ == "__main__":
    main()
