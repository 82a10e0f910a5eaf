"""Verdicts kept in memory, least recently used dropped first.

A key is a SHA-256 digest of everything that decides the judge's reply (endpoint, model, template, rendered
prompt, sampling settings), so 100,000 entries cost a few tens of MB however long the prompts are. Only readable
verdicts are stored; failures and unreadable replies are asked again next time. Thread-safe: one judge may be
used from several event loops.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CachedVerdict", "VerdictCache", "cache_key", "process_cache"]


@dataclass(frozen=True)
class CachedVerdict:
    score: float
    reply: str
    """The judge's reply, already cut short for ``info``."""


def cache_key(*, base_url: str, model: str, template: str, prompt: str, max_tokens: int, temperature: float,
              extra_body: Mapping[str, Any] | None = None) -> bytes:
    """The digest naming one judge request."""
    parts = [base_url.rstrip("/"), model, template, prompt, max_tokens, temperature,
             json.dumps(extra_body or {}, sort_keys=True, default=str)]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).digest()


class VerdictCache:
    """At most ``size`` verdicts (``size=0``: none kept)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[bytes, CachedVerdict] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: bytes) -> CachedVerdict | None:
        with self._lock:
            verdict = self._entries.get(key)
            if verdict is not None:
                self._entries.move_to_end(key)
            return verdict

    def put(self, key: bytes, verdict: CachedVerdict) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._entries[key] = verdict
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def grow(self, size: int) -> None:
        """Keep at least ``size`` verdicts from now on."""
        with self._lock:
            self.size = max(self.size, size)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


_PROCESS_CACHE = VerdictCache(0)


def process_cache(size: int) -> VerdictCache:
    """The process's one verdict cache, grown to keep at least ``size`` verdicts: the judges made for envs use it, so
    a verdict outlives the envs (and the judge) that asked for it, and a second rollout in the same process asks
    nothing twice. Sharing is safe: a key names everything that decides a reply (``cache_key``)."""
    _PROCESS_CACHE.grow(size)
    return _PROCESS_CACHE
