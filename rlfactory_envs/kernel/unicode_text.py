"""Text that UTF-8 can hold: unpaired UTF-16 surrogates replaced.

JSON's ``"\\ud800"`` escape decodes to a lone surrogate, which has no UTF-8 form: a tokenizer cannot take it, a
UTF-8 file or socket refuses it, and one such string in a merged request fails every call of the request. A tool's
result and a model's tool call both may carry one, so both are cleaned where they are read.
"""

from __future__ import annotations

from typing import Any


def without_lone_surrogates(text: str) -> str:
    """``text`` with unpaired UTF-16 surrogates replaced by U+FFFD (a pair stays the character it encodes)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def json_without_lone_surrogates(value: Any) -> Any:
    """A decoded JSON value with ``without_lone_surrogates`` applied to every string in it, keys included."""
    if isinstance(value, str):
        return without_lone_surrogates(value)
    if isinstance(value, dict):
        return {without_lone_surrogates(k): json_without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_without_lone_surrogates(item) for item in value]
    return value
