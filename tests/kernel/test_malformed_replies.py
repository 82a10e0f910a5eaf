"""Malformed MCP replies from a real server process (``rlfactory_tool_servers.faulty``'s ``malformed(kind)``), over
stdio and streamable HTTP: in a batch of calls, each malformed one gets an error result naming the server (at once
when the reply can be told to be its own, at the deadline when it cannot), the healthy calls beside it their
answers, aligned; the session keeps serving, and ``Toolbox.stats()`` counts the errors.

One server per transport serves every kind (the stdio one merges calls into batched requests, the HTTP one does
not), so the whole file costs a few deadlines of ``DEADLINE_S``."""

from __future__ import annotations

import json
import sys
import time

import gymnasium as gym
import pytest

from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.tool_call import ToolCall
from tests.server_process import http_tool_server

FAULTY = "rlfactory_tool_servers.faulty"
DEADLINE_S = 2.0
SLACK_S = 5.0  # a loaded 2-core machine
MALFORMED = "sent a malformed reply: "

# What a malformed call of each kind comes to: the words its error text holds; None: its deadline, the only way to
# end a request whose reply cannot be told apart (no id of ours in it, or none that is ours).
STDIO = {
    "not_json": None,
    "not_jsonrpc": None,
    "unknown_id": None,
    "huge_line": None,
    "truncated": None,
    "bad_result": MALFORMED + "the result has the wrong shape (content: Input should be a valid list)",
    "bad_error": MALFORMED + "not a JSON-RPC message (error.code: Input should be a valid integer",
    "status_500": "cannot be sent here",
}
HTTP = {
    "not_json": MALFORMED + "not JSON (expected ident at line 1 column 2)",
    "not_jsonrpc": MALFORMED + "not a JSON-RPC message",
    "unknown_id": None,
    "huge_line": MALFORMED + "not JSON",
    "truncated": MALFORMED + "the reply broke off after ",
    "bad_result": MALFORMED + "the result has the wrong shape (content: Input should be a valid list)",
    "bad_error": MALFORMED + "not a JSON-RPC message (error.code: Input should be a valid integer",
    "status_500": "Server returned an error response",
    "content_type": "Unexpected content type: text/html",
    "noise": "cannot be sent here",
}

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def stdio_toolbox():
    entry = {"command": sys.executable, "args": ["-m", FAULTY], "timeout_s": DEADLINE_S}
    with Toolbox({"mcpServers": {"faulty": entry}}) as toolbox:
        yield toolbox


@pytest.fixture(scope="module")
def http_toolbox():
    with http_tool_server(FAULTY) as url:
        entry = {"url": url, "timeout_s": DEADLINE_S, "batching": False}
        with Toolbox({"mcpServers": {"faulty": entry}}) as toolbox:
            yield toolbox


def mixed_batch(kind: str) -> list[ToolCall]:
    """Two calls of ``kind`` among ten healthy ones."""
    return [ToolCall("malformed", {"kind": kind}, call_id=i) if i in (3, 8) else
            ToolCall("echo", {"text": f"{kind} {i}"}, call_id=i) for i in range(12)]


def counters(toolbox: Toolbox, tool: str) -> dict:
    return toolbox.stats()["servers"]["faulty"]["tools"].get(tool, {"calls": 0, "errors": 0, "timeouts": 0})


def check_batch(toolbox: Toolbox, kind: str, expected: str | None) -> None:
    before = {tool: counters(toolbox, tool) for tool in ("malformed", "echo")}
    sent = mixed_batch(kind)
    started = time.monotonic()
    results = toolbox.call_many(sent)
    elapsed = time.monotonic() - started
    assert [(r.name, r.call_id) for r in results] == [(c.name, c.call_id) for c in sent]
    for result, call in zip(results, sent):
        if call.name == "echo":
            assert not result.is_error and result.text == call.arguments["text"], result.text
            continue
        assert result.is_error and "Traceback" not in result.text and "\n" not in result.text, result.text
        if expected is None:
            assert result.failure == "timeout" and "'malformed'" in result.text and "deadline" in result.text
        else:
            assert expected in result.text and result.failure is None, result.text
            assert "'faulty'" in result.text or "cannot be sent here" in expected, result.text
    assert elapsed < (DEADLINE_S if expected is None else 0) + SLACK_S, elapsed
    [again] = toolbox.call_many([ToolCall("echo", {"text": "still serving"})])
    assert again.text == "still serving" and not again.is_error
    after = {tool: counters(toolbox, tool) for tool in ("malformed", "echo")}
    assert after["malformed"]["calls"] - before["malformed"]["calls"] == 2
    assert after["malformed"]["errors"] - before["malformed"]["errors"] == 2
    assert after["malformed"]["timeouts"] - before["malformed"]["timeouts"] == (2 if expected is None else 0)
    assert after["echo"]["errors"] == before["echo"]["errors"]
    stats = toolbox.stats()["servers"]["faulty"]
    assert stats["reconnects"] == 0 and stats["retries"] == 0 and stats["unavailable"] == 0, stats


@pytest.mark.parametrize("kind", sorted(STDIO))
def test_a_malformed_reply_over_stdio_fails_its_call_alone(stdio_toolbox, kind):
    check_batch(stdio_toolbox, kind, STDIO[kind])


@pytest.mark.parametrize("kind", sorted(HTTP))
def test_a_malformed_reply_over_http_fails_its_call_alone(http_toolbox, kind):
    check_batch(http_toolbox, kind, HTTP[kind])


def test_noise_on_a_stdio_servers_stdout_is_skipped_and_the_call_answered(stdio_toolbox):
    sent = [ToolCall("malformed", {"kind": "noise"}, call_id=0), ToolCall("echo", {"text": "beside"}, call_id=1)]
    results = stdio_toolbox.call_many(sent)
    assert [(r.is_error, r.text) for r in results] == [(False, "noise, then this answer"), (False, "beside")]


def test_an_env_whose_model_calls_the_malformed_tool_sees_an_error_and_goes_on(tmp_path):
    data = tmp_path / "questions.jsonl"
    data.write_text(json.dumps({"id": "a", "question": "What is 6 times 7?", "ground_truth": "42"}) + "\n")
    servers = {"mcpServers": {"faulty": {"command": sys.executable, "args": ["-m", FAULTY],
                                         "timeout_s": DEADLINE_S}}}
    env = gym.make("rlf/MCP-v0", tool_servers=servers, data_path=str(data), check_reward=False).unwrapped
    try:
        env.reset(seed=0)
        call = {"name": "malformed", "arguments": {"kind": "bad_error"}}
        obs, reward, terminated, truncated, info = env.step(f"<tool_call>{json.dumps(call)}</tool_call>")
        assert not (terminated or truncated) and reward == 0.0
        assert info["tool_results"][0]["is_error"] and "server 'faulty' sent a malformed reply" in obs, obs
        call = {"name": "echo", "arguments": {"text": "still here"}}
        obs, *_ = env.step(f"<tool_call>{json.dumps(call)}</tool_call>")
        assert "still here" in obs
        _, reward, terminated, *_ = env.step("<answer>42</answer>")
        assert terminated and reward == 1.0
    finally:
        env.close()
