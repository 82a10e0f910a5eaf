"""examples/python_api.py shows what it says: a rewarded episode read from the search result, and a batch whose
first observation carries the passages."""

from __future__ import annotations

import re
import sys

from tests.examples.helpers import EXAMPLES, run_example


def test_python_api_example_earns_reward_and_shows_the_batch_search_result(tmp_path):
    out = run_example([sys.executable, "examples/python_api.py"], cwd=tmp_path).stdout
    assert "tools: ['search']" in out
    assert "observation to append: <|im_end|>\n<|im_start|>user\n<tool_response>\nDoc 1(Title: " in out
    # the answer is read from the search result (not written in the script), and it is right
    assert re.search(r"^answer: Battle of Corrow Pass reward: 1\.0 parts: .*'exact_match': 1\.0.* terminated: True$",
                     out, re.MULTILINE), out
    assert re.search(r'^256 searches in one batch step, first result starts: Doc 1\(Title: "', out, re.MULTILINE), out
    mean = float(re.search(r"^256 answers in one batch step, mean reward: ([0-9.]+)$", out, re.MULTILINE).group(1))
    assert 0.5 < mean <= 1.0
    assert "Corrow" not in (EXAMPLES / "python_api.py").read_text(encoding="utf-8")  # read, not written in
