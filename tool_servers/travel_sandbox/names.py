"""How TravelPlanner writes a place: ``"Buffalo(New York)"`` is the city Buffalo of New York."""

from __future__ import annotations

import re

_PARENTHESIS_RE = re.compile(r"^(.*?)\([^)]*\)")


def before_parenthesis(text: str) -> str:
    """The text before a ``(...)`` group (upstream ``extract_before_parenthesis``): ``"Buffalo(New York)"`` is
    ``"Buffalo"``; a text with no such group is itself."""
    match = _PARENTHESIS_RE.search(text)
    return match.group(1) if match else text
