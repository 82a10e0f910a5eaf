"""The verl overhead benchmark runs end to end and writes its JSON (the numbers are read, not asserted)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("verl", reason="the verl adapter tests run in .venv-verl (bash .ci/verl.sh): verl is not "
                                   "installed here")

from benchmarks.verl_overhead import main  # noqa: E402
from rlfactory_envs.search.tasks import SAMPLE_CORPUS_PATH  # noqa: E402
from tests.conftest import shared_file  # noqa: E402


def test_bench_writes_one_row_per_measure(tmp_path, capsys):
    tokenizer = shared_file("tokenizers/qwen3/tokenizer.json").parent
    out = tmp_path / "verl_adapter.json"
    assert main(["--tokenizer", str(tokenizer), "--corpus", str(SAMPLE_CORPUS_PATH), "--episodes", "2",
                 "--turns", "1", "--searches", "1", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["episodes"] == 2 and result["turns"] == 4  # one search turn and the answer each
    assert result["observation_tokens_mean"] > 100
    for key in ("token_bookkeeping_ms_per_turn", "adapter_ms_per_turn", "env_step_ms_per_turn",
                "loop_instantiation_ms_per_episode"):
        assert result[key] > 0
    assert "adapter per turn" in capsys.readouterr().out
