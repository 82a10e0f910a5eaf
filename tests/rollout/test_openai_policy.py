"""The OpenAI-compatible policy against a scripted chat-completions server on loopback (real HTTP, real client).

The server plays a model the way ``vllm serve --enable-auto-tool-choice --tool-call-parser hermes
--reasoning-parser qwen3`` answers: reasoning apart, tool calls structured. It records every request so the
test can check what the policy sent.
"""

import asyncio
import json

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse

from rlfactory_envs.rollout.policy import OpenAIChatPolicy
from rlfactory_envs.rollout.runner import run_rollouts
from tests.conftest import chat_completion, openai_endpoint


class ScriptedModel:
    """Turn 1: search the question (structured tool call). Turn 2: answer what the tool response's first title says."""

    def __init__(self):
        self.requests: list[dict] = []

    async def handle(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        messages = body["messages"]
        if body.get("stop"):  # Search-R1 continuation
            if len(messages) == 1:
                return JSONResponse(chat_completion({"content": "<think>search</think><search> mountain </search>"}))
            return JSONResponse(chat_completion({"content": " <answer> Mount Arvel </answer>"}))
        if messages[-1]["role"] == "user":
            question = messages[-1]["content"].split("Question: ")[-1]
            call = {"id": "call_0", "type": "function",
                    "function": {"name": "search", "arguments": json.dumps({"query": question})}}
            return JSONResponse(chat_completion({"content": None, "reasoning_content": "I should search.",
                                            "tool_calls": [call]}))
        title = messages[-1]["content"].split('Title: "')[1].split('"')[0]
        return JSONResponse(chat_completion({"content": f"<answer>{title}</answer>"}))


@pytest.fixture(scope="module")
def endpoint():
    model = ScriptedModel()
    with openai_endpoint(model.handle) as url:
        yield url, model


def test_tool_calling_episode_through_the_chat_api(endpoint):
    base_url, model = endpoint
    model.requests.clear()
    summary, records = asyncio.run(run_rollouts(
        "rlf/Search-NQ-v0", lambda env: OpenAIChatPolicy(base_url, "scripted"), 6, batch_size=3, progress=False))
    assert summary.episodes == 6 and summary.tool_calls == 6 and summary.tool_errors == 0
    assert summary.mean_reward > 0.5
    first_response = records[0].messages[1]["content"]
    assert first_response.startswith("<think>\nI should search.\n</think>\n\n<tool_call>\n")
    second_request = next(r for r in model.requests if r["messages"][-1]["role"] == "tool")
    assert [m["role"] for m in second_request["messages"]] == ["user", "assistant", "tool"]
    assert second_request["tools"][0]["function"]["name"] == "search"


def test_search_r1_episode_continues_one_assistant_message_with_vllms_fields(endpoint):
    base_url, model = endpoint
    model.requests.clear()
    summary, records = asyncio.run(run_rollouts(
        "rlf/Search-NQ-SearchR1-v0", lambda env: OpenAIChatPolicy(base_url, "scripted", vllm=True), 2,
        progress=False))
    assert summary.tool_calls == 2 and all(r.terminated for r in records)
    continuation = model.requests[-1]
    assert continuation["continue_final_message"] is True and continuation["add_generation_prompt"] is False
    assert continuation["messages"][1]["content"].startswith("<think>search</think><search> mountain </search>")
    assert "<information>" in continuation["messages"][1]["content"]
