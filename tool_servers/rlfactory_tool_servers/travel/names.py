"""How TravelPlanner writes a place: ``"Buffalo(New York)"`` is the city Buffalo of New York."""

from __future__ import annotations


def before_parenthesis(text: str) -> str:
    """The text before a ``(...)`` group (upstream ``extract_before_parenthesis``): ``"Buffalo(New York)"`` is
    ``"Buffalo"``; a text with no such group is itself. Upstream's regular expression, in linear time: the text
    before the first ``(`` when a ``)`` follows it and no line break precedes it."""
    start = text.find("(")
    if start < 0 or "\n" in text[:start] or text.find(")", start) < 0:
        return text
    return text[:start]
