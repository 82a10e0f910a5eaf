"""The Android family's env-semantics options (``rlfactory_envs.testing``): actions on indexes that may not exist,
AndroidWorld's action JSON and random text mixed into the library's actions, and rewards within [0, 1]."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from rlfactory_envs.testing.actions import rewards_within, tool_call_text

INDEXES = st.one_of(st.integers(-2, 40), st.text(max_size=4))
ANDROID_ACTIONS = st.one_of(
    st.builds(lambda i: tool_call_text("click", index=i), INDEXES),
    st.builds(lambda i, t: tool_call_text("input_text", index=i, text=t), INDEXES, st.text(max_size=50)),
    st.builds(lambda d: tool_call_text("scroll", direction=d), st.sampled_from(["up", "down", "left", "x"])),
    st.builds(lambda a: tool_call_text("open_app", app_name=a),
              st.sampled_from(["Contacts", "Clock", "Settings", "?"])),
    st.just(tool_call_text("navigate_back")), st.just(tool_call_text("navigate_home")),
    st.builds(lambda s: tool_call_text("status", goal_status=s), st.sampled_from(["complete", "infeasible", "bad"])),
    st.builds(lambda t: f'Action: {{"action_type": "answer", "text": {json.dumps(t)}}}', st.text(max_size=20)),
    st.text(max_size=200),
)


def semantics_options(env_id: str) -> Mapping[str, Any]:
    return {"env_kwargs": {"max_turns": 3}, "max_examples": 25, "actions": ANDROID_ACTIONS,
            "idle_action": tool_call_text("wait"), "check_step": rewards_within(0.0, 1.0),
            "call_tools": "all"}  # every action acts on the episode's own simulated phone
