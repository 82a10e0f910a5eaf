"""Reading a submitted plan from the model's answer text.

The answer is the benchmark's submission: a list of day dicts, as JSON, a Python literal (TravelPlanner's own gold
plans are written that way) or JSON that ``json_repair`` can mend (a trailing comma, single quotes, a cut-off
end; malformed text is mended up to ``MAX_REPAIR_CHARS`` and 64 nested brackets, so a hostile answer cannot spend
seconds of the reward's time). A ``{"plan": [...]}`` wrapper is unwrapped. Anything else is refused with the reason, never raised.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import Any

from rlfactory_reward_models.lenient_json import UNREADABLE, load_json_leniently

MAX_PLAN_CHARS = 65_536
MAX_REPAIR_CHARS = 16_384
"""A malformed plan longer than this is not repaired (a week's plan is 3-6 KB); a valid one is read up to
``MAX_PLAN_CHARS``."""
MAX_PLAN_DAYS = 64


def _decode(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # ValueError: malformed, or an integer past Python's digit limit
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        pass
    repaired = load_json_leniently(text, MAX_REPAIR_CHARS)  # repair is ~0.1 ms a character: bounded
    return None if repaired is UNREADABLE else repaired


def parse_plan(text: str | None) -> tuple[list[Any] | None, str | None]:
    """``(days, None)`` for a readable plan (a list, possibly with ``{}`` padding), else ``(None, why)``."""
    if text is None:
        return None, "no plan was submitted (no final answer)"
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").removeprefix("python").strip()
    if not body:
        return None, "the submitted plan is empty"
    if len(body) > MAX_PLAN_CHARS:
        return None, f"the submitted plan has {len(body):,} characters, over the limit of {MAX_PLAN_CHARS:,}"
    plan = _decode(body)
    if isinstance(plan, Mapping) and isinstance(plan.get("plan"), list):
        plan = plan["plan"]
    if not isinstance(plan, list) or not plan:
        return None, ("the plan must be a non-empty list of day objects like [{\"days\": 1, \"current_city\": "
                      "\"from A to B\", ...}]")
    if len(plan) > MAX_PLAN_DAYS:
        return None, f"the plan has {len(plan)} days, over the limit of {MAX_PLAN_DAYS}"
    if not all(isinstance(day, Mapping) for day in plan):
        return None, "every day of the plan must be an object of fields (current_city, transportation, ...)"
    return [dict(day) for day in plan], None
