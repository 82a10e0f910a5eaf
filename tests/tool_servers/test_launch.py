"""Every tool server's command line (``python -m rlfactory_tool_servers.NAME``) as a user runs it: one help with the
server's options and the shared ones, usage errors named after the command, the start message on stderr with stdout
left to the protocol, and the request log of ``--log-level``."""

from __future__ import annotations

import subprocess
import sys

import anyio
import pytest
from mcp import Client

from rlfactory_envs.search.family import SAMPLE_CORPUS_PATH
from tests.conftest import REPO_ROOT
from tests.server_process import server_process

OWN_OPTION = {"functions": "package.module:function", "qwen_tools": "--tool-config", "search": "--corpus",
              "sleep": "", "sql": "--db-dir", "travel": "--database-dir"}
SHARED_OPTIONS = ("--transport", "--host", "--port", "--path", "--log-level")


def run_module(server: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", f"rlfactory_tool_servers.{server}", *args], cwd=REPO_ROOT,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("server", sorted(OWN_OPTION))
def test_help_is_one_usage_block_with_the_server_and_the_shared_options(server):
    result = run_module(server, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("usage:") == 1 and not result.stderr
    assert result.stdout.startswith(f"usage: python -m rlfactory_tool_servers.{server} [-h]")
    assert OWN_OPTION[server] in result.stdout
    assert all(option in result.stdout for option in SHARED_OPTIONS)


def test_a_usage_error_is_named_after_the_command():
    result = run_module("search", "--corpus", "missing.jsonl")
    assert result.returncode == 2 and not result.stdout
    assert result.stderr.count("usage:") == 1
    assert "python -m rlfactory_tool_servers.search: error: --corpus missing.jsonl: no such file" in result.stderr


def test_over_stdio_the_start_message_goes_to_stderr_and_stdout_stays_empty():
    result = run_module("sleep")  # stdin is closed: the server starts, says so, and ends
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [(
        'python -m rlfactory_tool_servers.sleep: serving "sleep" (tools: sleep, process_id, exit_process) over stdio; '
        "data: none (the tools wait, tell the process id, or end the process)")]


def test_log_level_error_says_nothing_at_start():
    result = run_module("sleep", "--log-level", "error")
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""


def test_over_http_the_start_message_gives_the_url_and_info_logs_every_request():
    command = [sys.executable, "-m", "rlfactory_tool_servers.search", "--corpus", str(SAMPLE_CORPUS_PATH),
               "--transport", "http", "--port", "0", "--log-level", "info"]
    with server_process(command) as server:
        start = server.wait_for(r'serving "search" \(tools: search\) over streamable HTTP at http://127\.0\.0\.1:'
                                r"(\d+)/mcp; data: corpus (\S+), BM25 retriever$")
        assert int(start.group(1)) > 0 and start.group(2) == str(SAMPLE_CORPUS_PATH)

        async def use() -> None:
            with anyio.fail_after(30):
                async with Client(server.url()) as client:
                    assert [tool.name for tool in (await client.list_tools()).tools] == ["search"]
                    assert not (await client.call_tool("search", {"query": "ship", "topk": 1})).is_error
                    assert (await client.call_tool("search", {"query": " "})).is_error

        anyio.run(use)
        server.wait_for(r"INFO rlfactory_tool_servers\.requests: tools/list [\d.]+ ms is_error=false$")
        server.wait_for(r"INFO rlfactory_tool_servers\.requests: tools/call search [\d.]+ ms is_error=false$")
        server.wait_for(r"INFO rlfactory_tool_servers\.requests: tools/call search [\d.]+ ms is_error=true$")
        server.wait_for(r'INFO uvicorn\.access: .*"POST /mcp HTTP/1\.1" 200')
        assert server.stop() == ""


def test_a_port_in_use_is_named_with_the_fix():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_module("sleep", "--transport", "http", "--port", str(port))
    assert result.returncode == 2 and not result.stdout
    assert result.stderr.splitlines() == [
        f"python -m rlfactory_tool_servers.sleep: error: port {port} on 127.0.0.1 is in use (another server listens "
        "there); pick another with --port PORT, or --port 0 for a free one (the start message says which)"]
