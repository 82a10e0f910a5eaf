"""A scripted model behind an OpenAI chat-completions endpoint, answering the way `vllm serve ...
--enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3` does: the reasoning apart
(``reasoning_content``), a tool call as structured ``tool_calls`` with ``finish_reason: "tool_calls"``.

Turn 1 searches the question; turn 2 reads the top passage's title from the tool message and answers it. Every
request is kept, so a test can check what the client sent. ``serve`` runs it on loopback, with ``GET /v1/models``
listing the model as vLLM does.
"""

from __future__ import annotations

import json
import re
from contextlib import AbstractContextManager

from starlette.requests import Request
from starlette.responses import JSONResponse

from tests.conftest import openai_endpoint

TOP_TITLE = re.compile(r'Doc 1\(Title: "?(.*?)"?\) ')


def completion(message: dict, finish_reason: str, model: str) -> dict:
    return {"id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason,
                         "logprobs": None}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


class ScriptedModel:
    def __init__(self, name: str) -> None:
        self.name = name
        self.requests: list[dict] = []

    async def handle(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        messages, model = body["messages"], body.get("model", "scripted")
        if messages[-1]["role"] != "tool":  # the question: search it
            question = messages[-1]["content"].split("Question: ")[-1].strip()
            call = {"id": f"chatcmpl-tool-{len(self.requests)}", "type": "function",
                    "function": {"name": "search", "arguments": json.dumps({"query": question})}}
            return JSONResponse(completion({"content": None, "reasoning_content": "I should look this up.",
                                            "tool_calls": [call]}, "tool_calls", model))
        match = TOP_TITLE.search(messages[-1]["content"])
        answer = match.group(1) if match else "unknown"
        return JSONResponse(completion({"content": f"<answer> {answer} </answer>",
                                        "reasoning_content": f"The top passage is about {answer}."}, "stop", model))


def serve(model: ScriptedModel) -> AbstractContextManager[str]:
    """``model`` behind a real HTTP server on a free loopback port, its name listed at ``/v1/models``; yields the
    base URL (``http://127.0.0.1:P/v1``)."""
    return openai_endpoint(model.handle, models=[model.name])
