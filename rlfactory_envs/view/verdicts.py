"""A reward's ``info`` as verdict tables: what each family's scorer says about the episode, read from its shape.

Every family's reward reports its verdict in ``reward_info`` (TravelPlanner's ``travel_eval`` with its commonsense
and hard constraints, Android's ``android_eval`` with its sub-goals, the judge's ``judge`` with its reply, the SQL
reward's reasons and the database variant where a result differed); the page shows each dict of it as a section:

- ``checks``: its entries that are booleans or ``None`` (a constraint passed, failed, or did not apply), when the
  dict is made of them (TravelPlanner's constraints, Android's sub-goals);
- ``fields``: its other scalars (numbers, short texts: a variant's file, a total cost);
- ``texts``: its long texts (a judge's reply, a reason);
- nested dicts become sections of their own, titled by their path.
"""

from __future__ import annotations

from typing import Any

LONG_TEXT_CHARS = 120
MAX_DEPTH = 4
MAX_SECTIONS = 40


def verdict_sections(info: dict[str, Any]) -> list[dict[str, Any]]:
    """The sections of ``info`` (see the module docstring), outermost first."""
    sections: list[dict[str, Any]] = []
    _walk(info, "", 0, sections)
    return sections[:MAX_SECTIONS]


def _walk(value: dict[str, Any], title: str, depth: int, sections: list[dict[str, Any]]) -> None:
    checks, fields, texts, nested = [], [], [], []
    for key, item in value.items():
        if isinstance(item, dict):
            nested.append((str(key), item))
        elif isinstance(item, bool) or item is None:
            checks.append([str(key), item])
        elif isinstance(item, str) and (len(item) > LONG_TEXT_CHARS or "\n" in item):
            texts.append([str(key), item])
        elif isinstance(item, (str, int, float)):
            fields.append([str(key), item])
        else:
            fields.append([str(key), _short(item)])
    if checks and not any(isinstance(v, bool) for _, v in checks):
        fields += [[name, None] for name, _ in checks]
        checks = []
    if checks or fields or texts:
        sections.append({"title": title or "reward info", "checks": checks, "fields": fields, "texts": texts})
    for key, item in nested:
        if depth < MAX_DEPTH:
            _walk(item, f"{title} › {key}" if title else key, depth + 1, sections)


def _short(value: Any) -> str:
    """A list or other value on one line, cut to ``LONG_TEXT_CHARS``."""
    text = str(value)
    return text if len(text) <= LONG_TEXT_CHARS else text[:LONG_TEXT_CHARS] + "…"
