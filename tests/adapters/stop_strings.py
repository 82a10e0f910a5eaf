"""How vLLM stops on stop strings, for the scripted engines of the adapter tests."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def stop_after(tokenizer: Any, ids: Sequence[int], stops: str | Iterable[str] | None) -> list[int]:
    """``ids`` up to and including the token that completes the first of ``stops`` in their decoded text, as vLLM
    stops a generation: the whole token is kept, so the text may run a few characters past the stop string (Qwen's
    ``>\\n\\n`` is one token). All of ``ids`` when no stop string occurs."""
    stops = [stops] if isinstance(stops, str) else list(stops or ())
    ids = list(ids)
    if not stops:
        return ids
    for end in range(1, len(ids) + 1):
        text = tokenizer.decode(ids[:end], skip_special_tokens=False)
        if any(stop in text for stop in stops):
            return ids[:end]
    return ids
