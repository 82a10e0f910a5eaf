"""What a qwen-agent tool returns, as the text the model reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from qwen_agent.llm.schema import ContentItem

from rlfactory_tool_servers.tool_signature import result_text

CONTENT_KINDS = ("text", "image", "file", "audio", "video")
"""The fields of qwen-agent's ``ContentItem``, exactly one of which an item sets."""


def content_part(element: Any) -> tuple[str, Any] | None:
    """``(kind, content)`` of a qwen-agent content item: a ``ContentItem``, or a dict with exactly one key, one of
    ``CONTENT_KINDS`` (a text's content a string). ``None`` for anything else."""
    if isinstance(element, ContentItem):
        return element.get_type_and_value()
    if isinstance(element, Mapping) and len(element) == 1:
        [(kind, content)] = element.items()
        if kind in CONTENT_KINDS and (kind != "text" or isinstance(content, str)):
            return kind, content
    return None


def tool_result_text(value: Any) -> str:
    """The text of a tool's return value.

    A string is itself. A non-empty list (or tuple) of content items (see ``content_part``) is its items joined
    with newlines: a text item as its text, any other as ``[<kind> content omitted]`` (an image, a file... is
    named, never inlined). Anything else is compact JSON (what JSON cannot encode as its ``str``).
    """
    if isinstance(value, Sequence) and not isinstance(value, str) and value:
        parts = [content_part(element) for element in value]
        if all(part is not None for part in parts):
            return "\n".join(content if kind == "text" else f"[{kind} content omitted]" for kind, content in parts)
    return result_text(value)


def cap_text(text: str, max_chars: int) -> str:
    """``text`` when it has at most ``max_chars`` characters; else its first ``max_chars`` characters and a line
    ``[result cut: showing the first <max_chars> of <n> characters]``."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\n[result cut: showing the first {max_chars} of {len(text)} characters]"
