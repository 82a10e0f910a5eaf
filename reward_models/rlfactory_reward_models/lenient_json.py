"""JSON that a model wrote, read leniently: parsed, or repaired by ``json_repair`` when it is malformed, within bounds
(repair is superlinear, so long or deeply nested text is refused rather than repaired). For any reader of model
output: the rewards' answer parsers, and the env's tool-call parsers above them."""

from __future__ import annotations

import json
from typing import Any

import json_repair

MAX_REPAIR_CHARS = 8_192  # malformed JSON longer than this is reported, not repaired (repair is superlinear)
MAX_REPAIR_NESTING = 64  # nor is malformed JSON whose brackets open deeper than this

UNREADABLE = object()


def load_json_leniently(text: str, max_repair_chars: int = MAX_REPAIR_CHARS) -> Any:
    """``text`` as JSON, repaired by ``json_repair`` when it is malformed and short enough; ``UNREADABLE`` when
    neither works (deep nesting included: a recursion or nesting error is an unreadable call, not a crash). For any
    parser of model output."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    if len(text) > max_repair_chars or _bracket_depth(text) > MAX_REPAIR_NESTING:
        return UNREADABLE
    try:
        return json_repair.loads(text)
    except (ValueError, RecursionError, TypeError):
        return UNREADABLE


def _bracket_depth(text: str) -> int:
    """The deepest run of open brackets, strings ignored: an upper bound on the JSON's nesting, in one scan."""
    depth = deepest = 0
    for char in text:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(depth - 1, 0)
    return deepest
