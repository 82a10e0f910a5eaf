"""Real qwen-agent tools (``BaseTool`` subclasses) for the qwen-agent tool server's tests, one per behaviour the
server must carry over MCP: a JSON-schema tool, an old list-form tool with multimodal results, a tool that fails,
one that hangs, one that needs its cfg, and a class that is not a tool."""

from __future__ import annotations

import time
from typing import Any

from qwen_agent.llm.schema import ContentItem
from qwen_agent.tools.base import BaseTool, register_tool


@register_tool("fixture_repeat")
class RepeatTool(BaseTool):
    """Parameters as a JSON schema; returns a string."""

    description = "Repeat a text a number of times, separated by spaces."
    parameters = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "the text to repeat"},
            "times": {"type": "integer", "description": "how many times (default 2)", "minimum": 1},
        },
        "required": ["text"],
    }

    def call(self, params: str | dict, **kwargs: Any) -> str:
        args = self._verify_json_format_args(params)
        separator = self.cfg.get("separator", " ")
        return separator.join([args["text"]] * args.get("times", 2))


@register_tool("fixture_describe_image")
class DescribeImageTool(BaseTool):
    """Parameters in qwen-agent's older list form; returns content items, an image among them."""

    description = "Describe an image by its URL."
    parameters = [
        {"name": "url", "type": "string", "description": "the image URL", "required": True},
        {"name": "detail", "type": "string", "description": "how much detail", "enum": ["low", "high"]},
    ]

    def call(self, params: str | dict, **kwargs: Any) -> list[ContentItem]:
        args = self._verify_json_format_args(params)
        return [ContentItem(text=f"An image at {args['url']} ({args.get('detail', 'low')} detail):"),
                ContentItem(image=args["url"]), {"text": "a red square."}]


@register_tool("fixture_stats")
class StatsTool(BaseTool):
    """Returns a dict, which the server shows as JSON."""

    description = "Count the words and characters of a text."
    parameters = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}

    def call(self, params: str | dict, **kwargs: Any) -> dict[str, int]:
        text = self._verify_json_format_args(params)["text"]
        return {"words": len(text.split()), "chars": len(text)}


@register_tool("fixture_fail")
class FailingTool(BaseTool):
    """Raises on every call."""

    description = "Always fails."
    parameters = {"type": "object", "properties": {"reason": {"type": "string"}}, "required": []}

    def call(self, params: str | dict, **kwargs: Any) -> str:
        raise RuntimeError(f"broken on purpose: {self._verify_json_format_args(params).get('reason', 'no reason')}")


@register_tool("fixture_sleep")
class SleepTool(BaseTool):
    """Blocks its thread for ``seconds``: a slow tool that must not block the server."""

    description = "Sleep for a number of seconds, then say so."
    parameters = {"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]}

    def call(self, params: str | dict, **kwargs: Any) -> str:
        seconds = self._verify_json_format_args(params)["seconds"]
        time.sleep(seconds)
        return f"slept {seconds} s"


@register_tool("fixture_keyed")
class KeyedTool(BaseTool):
    """Needs an ``api_key`` in its cfg, as many of qwen-agent's web tools do; constructing it without one fails."""

    description = "Answer with the configured key's length."
    parameters = {"type": "object", "properties": {}, "required": []}

    def __init__(self, cfg: dict | None = None):
        super().__init__(cfg)
        if "api_key" not in self.cfg:
            raise ValueError("fixture_keyed needs cfg['api_key']")

    def call(self, params: str | dict, **kwargs: Any) -> str:
        return str(len(self.cfg["api_key"]))


class NotATool:
    """A class that is not a ``BaseTool``."""

    def call(self, params: str) -> str:
        return params
