"""The travel family's env-semantics options (``rlfactory_envs.testing``): tool calls the sandbox refuses and plans
of every shape mixed into the library's actions, and rewards within [0, 1]."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from rlfactory_envs.testing.actions import rewards_within, tool_call_text
from rlfactory_envs.travel.family import SAMPLE_PLANS_PATH

DAY_KEYS = ["days", "current_city", "transportation", "breakfast", "lunch", "attraction", "accommodation", "dinner"]


def answer(plan: Any) -> str:
    return f"<answer>{json.dumps(plan)}</answer>"


def travel_actions() -> st.SearchStrategy[str]:
    """A sample query's reference plan, refused calls, and plans of random days."""
    rows = map(json.loads, SAMPLE_PLANS_PATH.read_text(encoding="utf-8").splitlines())
    plan = next(row["plan"] for row in rows if row["idx"] == 1)
    return st.one_of(
        st.sampled_from([tool_call_text("search_cities", state="Veradon"),
                         tool_call_text("search_flights", origin="x", destination="y", date="2022-13-45"),
                         tool_call_text("distance_matrix", origin="Arlow", destination="Quillford", mode="boat"),
                         answer(plan), "<answer>[]</answer>", "<answer>[{\"days\": 1}]</answer>",
                         "<answer>" + "[" * 5000 + "</answer>"]),
        st.lists(st.dictionaries(st.sampled_from(DAY_KEYS), st.one_of(st.text(max_size=30), st.integers(), st.none())),
                 max_size=4).map(answer),
    )


def semantics_options(env_id: str) -> Mapping[str, Any]:
    return {"env_kwargs": {"max_turns": 3, "max_action_chars": 8192}, "max_examples": 30, "actions": travel_actions(),
            "idle_action": tool_call_text("search_cities", state="Veradon"), "check_step": rewards_within(0.0, 1.0)}
