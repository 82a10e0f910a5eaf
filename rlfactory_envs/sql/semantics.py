"""The NL2SQL family's env-semantics options (``rlfactory_envs.testing``): real and hostile SQL mixed into the
library's actions, and rewards that are exactly 0.0 or 1.0 (0.0 for an episode cut short)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from rlfactory_envs.testing.actions import tool_call_text

SQL_TEXT = st.one_of(st.sampled_from(["SELECT 1", "SELECT * FROM books", "DROP TABLE books", "SELECT 1; SELECT 2",
                                      "SELECT count(*) FROM students", "PRAGMA query_only=0", ""]),
                     st.text(max_size=60))
SQL_ACTIONS = st.one_of(
    SQL_TEXT.map(lambda sql: tool_call_text("run_query", sql=sql)),
    st.fixed_dictionaries({"db_id": st.text(max_size=20), "sql": SQL_TEXT}).map(
        lambda a: tool_call_text("run_query", **a)),
    SQL_TEXT.map(lambda sql: f"<answer>{sql}</answer>"),
)
"""Real and hostile SQL, mixed into the library's actions (which already cover the markup and every tool)."""


def sql_rewards(env: Any, action: str, result: Any) -> None:
    """Rewards are exactly 0.0 or 1.0, and 0.0 for an episode cut short without an answer."""
    assert result.reward in (0.0, 1.0), f"the SQL reward {result.reward!r} for {action[:80]!r} is not 0.0 or 1.0"
    if result.truncated:
        assert result.reward == 0.0, f"a truncated SQL episode scored {result.reward!r}, not 0.0"


def semantics_options(env_id: str) -> Mapping[str, Any]:
    """``query_timeout_s`` 2 s: its queries are quick, but the time one waits for a worker counts, and at 0.5 s a
    ``SELECT 1`` on a loaded 2-core CI machine once timed out alone and not in the batch."""
    return {"env_kwargs": {"max_turns": 3, "max_action_chars": 4096, "query_timeout_s": 2.0}, "max_examples": 50,
            "actions": SQL_ACTIONS, "idle_action": tool_call_text("list_tables"), "check_step": sql_rewards}
