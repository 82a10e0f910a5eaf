"""A Gymnasium space of Unicode strings up to a stated length."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import Text

# What ``sample()`` draws from: letters, digits, white space and the markup characters tool calls are made of,
# plus a few non-ASCII characters, so random actions exercise the parsers.
SAMPLE_CHARSET = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n\t"
    "<>/{}[]\":,._-=|?!'`#*&%$@\\éüßçñ中文字日本語한국어αβγ→…"
)


class UnicodeText(Text):
    """Any ``str`` of at most ``max_length`` characters (Gymnasium's ``Text`` limits the charset; this does not).

    ``sample()`` draws from ``SAMPLE_CHARSET`` and may also return a fragment of tool-call markup, so that
    random actions reach the parsers' interesting paths.
    """

    def __init__(self, max_length: int, min_length: int = 0, seed: int | np.random.Generator | None = None):
        super().__init__(max_length=max_length, min_length=min_length, charset=SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, UnicodeText) and self.min_length == other.min_length
                and self.max_length == other.max_length)
