"""The `rlf` command as a user runs it: a real subprocess through the installed entry point."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


RLF = [shutil.which("rlf")] if shutil.which("rlf") else [sys.executable, "-m", "rlfactory_envs.cli"]
SAMPLE_CORPUS = Path(__file__).resolve().parents[1] / "rlfactory_envs" / "search" / "data" / "sample_corpus.jsonl"


def rlf(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*RLF, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


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


@pytest.mark.parametrize(("server", "data_option"), [("search", "--corpus"), ("sql", "--db-dir")])
def test_serve_help_is_the_servers_own_with_the_shared_options(server, data_option):
    result = rlf("serve", server, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("usage:") == 1 and result.stdout.startswith(f"usage: rlf serve {server} [-h]")
    for option in (data_option, "--transport", "--host", "--port", "--path", "--log-level"):
        assert option in result.stdout
    assert f"Without {data_option}, it serves the embedded sample" in " ".join(result.stdout.split())


def test_serve_without_a_server_lists_them_or_asks_for_one():
    listed = rlf("serve", "-h")
    assert listed.returncode == 0 and listed.stdout.startswith("usage: rlf serve [-h] [NAME]")
    assert "android, faulty, functions, qwen_tools, search, sleep, sql, travel" in " ".join(listed.stdout.split())
    missing = rlf("serve")
    assert missing.returncode == 2 and "name the server to run" in missing.stderr


def test_serve_refuses_an_abbreviated_option_instead_of_serving_the_sample():
    result = rlf("serve", "search", "--corp", "my-corpus.jsonl")
    assert result.returncode == 2 and "unrecognized arguments: --corp my-corpus.jsonl" in result.stderr


@pytest.mark.integration
def test_serve_over_http_says_where_and_that_it_serves_the_embedded_sample():
    import anyio
    from mcp import Client

    from tests.conftest import free_port
    from tests.server_process import server_process

    port = free_port()
    command = [*RLF, "serve", "search", "--transport", "http", "--port", str(port)]
    with server_process(command) as server:
        url = server.url()
        assert url == f"http://127.0.0.1:{port}/mcp"
        server.wait_for(r"^rlf serve search: no --corpus given, so the data is the embedded sample, .*; serve your "
                        r"own with --corpus \(see rlf serve search --help\)$")

        async def search() -> str:
            with anyio.fail_after(30):
                async with Client(url) as client:
                    return (await client.call_tool("search", {"query": "ship", "topk": 1})).content[0].text

        assert anyio.run(search).startswith("Doc 1(Title: ")
    assert server.stderr.splitlines()[0] == (
        f'rlf serve search: serving "search" (tools: search) over streamable HTTP at {url}; data: corpus '
        f"{SAMPLE_CORPUS}, BM25 retriever")


def test_serve_search_from_a_remote_retriever_does_not_mention_the_sample():
    result = rlf("serve", "search", "--retriever-url", "http://127.0.0.1:9")  # not reached until a search
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == ['rlf serve search: serving "search" (tools: search) over stdio; data: '
                                          "Search-R1 retriever at http://127.0.0.1:9/retrieve"]


def test_serve_with_its_own_data_does_not_mention_the_sample():
    result = rlf("serve", "search", f"--corpus={SAMPLE_CORPUS}")  # stdin is closed: it starts, says so, and ends
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [f'rlf serve search: serving "search" (tools: search) over stdio; data: '
                                          f"corpus {SAMPLE_CORPUS}, BM25 retriever"]


SPEC_PROBLEMS = {
    "command": ({"tool_servers": {"mcpServers": {"calc": {"command": "no-such-command-xyz"}}}},
                "command 'no-such-command-xyz' not found"),
    "data": ({"data_path": "missing.jsonl"}, "no such file: "),
    "reward": ({"reward": "rewards:no_such_reward"}, "rewards has no attribute 'no_such_reward'"),
    "row": ({"data_path": "no_question.jsonl"}, "line 1: the row has no 'question'"),
}


@pytest.mark.parametrize("problem", sorted(SPEC_PROBLEMS))
def test_list_checks_a_spec_as_make_does(tmp_path, capsys, problem):
    from rlfactory_envs.cli import main

    example = Path(__file__).resolve().parents[1] / "examples" / "custom_env"
    for name in ("calc_server.py", "questions.jsonl", "rewards.py"):
        (tmp_path / name).write_text((example / name).read_text())
    (tmp_path / "no_question.jsonl").write_text('{"id": "a", "ground_truth": "1"}\n')
    override, expected = SPEC_PROBLEMS[problem]
    spec = tmp_path / "bad.json"
    spec.write_text(json.dumps({"tool_servers": {"mcpServers": {"calc": {"command": "python", "args": [
        "calc_server.py"]}}}, "data_path": "questions.jsonl", "reward": "rewards:numeric_match", **override}))
    assert main(["list", str(spec)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("rlf list: error: ") and expected in line, line


def test_list_shows_what_a_sound_spec_holds():
    result = rlf("list", "examples/custom_env/env.yaml")
    assert result.returncode == 0, result.stderr
    assert "examples/custom_env/env.yaml: ok: 3 tasks in questions, tools multiply, add, reward range [0.0, 1.0]" \
        in result.stdout.splitlines()


def test_a_custom_env_rolls_out_without_a_model(tmp_path):
    spec, out = "examples/custom_env/env.yaml", tmp_path / "reference.jsonl"
    refused = rlf("rollout", spec, "--no-progress")
    assert refused.returncode == 2 and "pass --policy reference" in refused.stderr
    reference = rlf("rollout", spec, "--policy", "reference", "--no-progress", "--out", str(out))
    assert reference.returncode == 0, reference.stderr
    assert "policy                       reference - answers each task's reference answer" in reference.stdout
    replayed = rlf("rollout", spec, "--replay", str(out), "--no-progress", "--summary-json", str(tmp_path / "s.json"))
    assert replayed.returncode == 0, replayed.stderr
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["policy"]["name"] == "replay" and summary["mean_reward"] == 1.0 and summary["episodes"] == 3
