"""The adapter overhead benchmark runs and writes its table (numbers are reported, not asserted)."""

from __future__ import annotations

import json

from benchmarks.adapter_overhead import main


def test_overhead_bench_writes_json(tmp_path, qwen3_tokenizer, capsys):
    out = tmp_path / "overhead.json"
    assert main(["--tokenizer", qwen3_tokenizer.name_or_path, "--observation-tokens", "300", "--repeats", "1",
                 "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["encoder"] == "TiktokenDeltaEncoder"
    assert result["rows"][0]["observation_tokens"] >= 300 and result["rows"][0]["fast_ms_per_turn"] > 0
    assert "| observation tokens |" in capsys.readouterr().out
