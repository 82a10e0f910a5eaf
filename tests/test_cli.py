"""The `rlf` command as a user runs it: a real subprocess through the installed entry point."""

import json
import shutil
import subprocess
import sys

import pytest


def rlf(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    command = [shutil.which("rlf")] if shutil.which("rlf") else [sys.executable, "-m", "rlfactory_envs.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout)


def test_list():
    result = rlf("list")
    assert result.returncode == 0 and "rlf/Search-NQ-v0" in result.stdout.split()


def test_rollout_writes_trajectories_and_a_summary(tmp_path):
    out, summary = tmp_path / "traj.jsonl", tmp_path / "summary.json"
    result = rlf("rollout", "rlf/Search-NQ-v0", "-n", "12", "--batch-size", "5", "--out", str(out),
                 "--summary-json", str(summary), "--set", "max_turns=3", "--no-progress")
    assert result.returncode == 0, result.stderr
    assert "mean reward" in result.stdout and "tool latency ms p50/p90/p99" in result.stdout
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 12 and sorted(r["seed"] for r in records) == list(range(12))
    assert json.loads(summary.read_text())["episodes"] == 12


def test_rollout_reports_bad_usage():
    result = rlf("rollout", "rlf/Search-NQ-v0", "--policy", "openai")
    assert result.returncode != 0 and "--model" in result.stderr


@pytest.mark.integration
def test_serve_search_over_stdio_answers_a_client():
    import asyncio

    from mcp import Client, StdioServerParameters

    async def ask():
        params = StdioServerParameters(command=sys.executable, args=["-m", "rlfactory_envs.cli", "serve", "search"])
        async with Client(params) as client:
            return (await client.call_tool("search", {"query": "mountain", "topk": 2})).content[0].text

    text = asyncio.run(asyncio.wait_for(ask(), 60))
    assert text.startswith("Doc 1(Title: ") and "Doc 2(Title: " in text


def test_bench_runs_the_checkout_benchmarks_from_anywhere(tmp_path):
    out = tmp_path / "bench.json"
    command = [shutil.which("rlf")] if shutil.which("rlf") else [sys.executable, "-m", "rlfactory_envs.cli"]
    result = subprocess.run([*command, "bench", "--quick", "--only", "env_overhead", "--out", str(out)],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text())["results"][0]["name"] == "env_overhead_batched"
