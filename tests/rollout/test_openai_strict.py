"""``--policy openai`` against a server that refuses what the OpenAI API refuses (``strict_openai``): native tool
calls answered by ``tool`` messages with their ids, the history as text, Search-R1's stop strings put back when the
server does not echo them, the whole error text of a refusal, and trajectories that survive a killed run."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from starlette.requests import Request
from starlette.responses import JSONResponse

from rlfactory_envs.rollout.policy import OpenAIChatPolicy
from rlfactory_envs.rollout.runner import run_rollouts
from tests.conftest import openai_endpoint
from tests.rollout.strict_openai import StrictServer, serve


def search_then_answer(body: dict) -> dict:
    """Turn 1: search the question (a structured call); turn 2: answer the first title the results name."""
    last = body["messages"][-1]
    if last["role"] == "user" and "Title:" not in last["content"]:
        return {"content": None, "tool_calls": [("search", {"query": last["content"].split("Question: ")[-1]})]}
    title = last["content"].split('Title: "')[1].split('"')[0]
    return {"content": f"<answer>{title}</answer>"}


def play(env_id: str, server: StrictServer, n: int = 3, **policy) -> tuple:
    with serve(server) as url:
        async def run():
            return await run_rollouts(env_id, lambda env: OpenAIChatPolicy(url, server.model, **policy), n,
                                      progress=False)

        return asyncio.run(run())


def test_native_tool_calls_pass_a_strict_server_with_their_ids():
    server = StrictServer(search_then_answer)
    summary, records = play("rlf/Search-NQ-v0", server)
    assert server.refusals == [] and summary.failed == 0
    assert summary.tool_calls == 3 and summary.mean_reward > 0.5
    second = next(r["messages"] for r in server.requests if len(r["messages"]) > 1)
    assert [m["role"] for m in second] == ["user", "assistant", "tool"]
    assert second[2]["tool_call_id"] == second[1]["tool_calls"][0]["id"] and "name" not in second[2]
    assert second[1]["content"] is None  # the call travels as tool_calls, not twice
    assert records[0].messages[2]["tool_call_id"] == records[0].messages[1]["tool_calls"][0]["id"]


def test_text_mode_sends_the_results_as_a_user_turn_in_the_formats_words():
    server = StrictServer(search_then_answer)
    summary, _ = play("rlf/Search-NQ-v0", server, tool_mode="text")
    assert server.refusals == [] and summary.failed == 0 and summary.tool_calls == 3
    second = next(r["messages"] for r in server.requests if len(r["messages"]) > 1)
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1]["content"].startswith("<tool_call>") and "tool_calls" not in second[1]
    assert second[2]["content"].startswith("<tool_response>\n")


def test_search_r1_stop_strings_are_put_back_when_the_server_does_not_echo_them():
    def search_r1(body: dict) -> dict:  # a server that stops at "</search>" and drops it, as llama.cpp does
        so_far = body["messages"][-1]["content"] if body["messages"][-1]["role"] == "assistant" else ""
        if "<information>" not in so_far:
            return {"content": "<think>look it up</think>\n<search> ysolde harn ombrecht rebels ", "finish_reason": "stop"}
        return {"content": "<answer> Battle of Corrow Pass ", "finish_reason": "stop"}

    server = StrictServer(search_r1)
    summary, records = play("rlf/Search-NQ-SearchR1-v0", server, n=1)
    assert server.refusals == [] and summary.failed == 0  # no vLLM-only field was sent
    assert summary.tool_calls == 1 and records[0].answer == "Battle of Corrow Pass"
    assert "<search> ysolde harn ombrecht rebels </search>\n\n<information>" in records[0].transcript
    assert all(set(r) <= {"model", "messages", "temperature", "max_tokens", "stop"} for r in server.requests)


def test_a_refusal_is_reported_whole_on_one_line():
    errors = "3 validation errors:\n  messages.2.tool_call_id\n    Field required\n  messages.2.name\n    Extra"

    async def refuse(request: Request) -> JSONResponse:
        return JSONResponse({"error": {"message": errors, "type": "invalid_request_error"}}, status_code=500)

    with openai_endpoint(refuse) as url:
        summary, records = asyncio.run(run_rollouts(
            "rlf/Search-NQ-v0", lambda env: OpenAIChatPolicy(url, "m"), 1, progress=False))
    assert summary.failed == 1
    assert records[0].error.endswith("3 validation errors: | messages.2.tool_call_id | Field required | "
                                     "messages.2.name | Extra")


class HangingServer(StrictServer):
    """The first ``quick`` questions are answered at once; the others search first, and then their next request is
    kept waiting: the quick episodes end on turn 1 while the others are still running."""

    def __init__(self, quick: int) -> None:
        super().__init__(self.answer)
        self.quick: set[str] = set()
        self.places = quick

    def answer(self, body: dict) -> dict:
        question = body["messages"][0]["content"]
        if len(self.quick) < self.places and len(body["messages"]) == 1:
            self.quick.add(question)
        if question in self.quick:
            return {"content": "<answer>somewhere</answer>"}
        return {"content": None, "tool_calls": [("search", {"query": "anything"})]}

    async def handle(self, request: Request) -> JSONResponse:
        body = await request.json()
        if len(body["messages"]) > 1:
            await asyncio.sleep(3600)
        return await super().handle(request)


def test_a_killed_rollout_keeps_every_episode_it_finished(tmp_path: Path):
    out = tmp_path / "run.jsonl"
    with serve(HangingServer(quick=2)) as url:
        command = [sys.executable, "-m", "rlfactory_envs.cli", "rollout", "rlf/Search-NQ-v0", "--policy", "openai",
                   "--base-url", url, "--model", "scripted", "-n", "4", "--out", str(out), "--no-progress"]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and (not out.exists() or out.read_text().count("\n") < 2):
                assert process.poll() is None, process.stderr.read().decode()
                time.sleep(0.2)
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(30)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 2 and all(line["answer"] == "somewhere" and line["terminated"] for line in lines)
