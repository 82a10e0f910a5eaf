"""A scripted baseline for the NL2SQL family that really uses the tools, never the gold query.

Turn 1 lists the tables; turn 2 describes the table whose name (singular or plural) the question mentions, else
the first one; turn 3 runs a look at a few of its rows; turn 4 answers: ``SELECT count(*) FROM table`` for a
"how many" question, else the first text column of that table. It gives every part of the pipeline real work
(three tool calls, the reward's execution) and scores on simple counting questions only.
"""

from __future__ import annotations

import re

from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.tool_call import ToolCall

_TABLE_LINE_RE = re.compile(r'^("(?:[^"]|"")+"|\S+) \([0-9?]+ rows\):', re.MULTILINE)
_COLUMN_RE = re.compile(r'^  ("(?:[^"]|"")+"|\S+) (\S+)', re.MULTILINE)
_WORD_RE = re.compile(r"[a-z0-9]+")


def _pick_table(question: str, tables: list[str]) -> str | None:
    words = set(_WORD_RE.findall(question.lower()))
    for table in tables:
        bare = table.strip('"').lower()
        if {bare, bare.rstrip("s"), bare + "s"} & words:
            return table
    return tables[0] if tables else None


class ExploreThenGuessPolicy:
    """List tables, describe the question's table, look at its rows, answer a count or a text column."""

    name = "scripted"

    def __init__(self) -> None:
        self._table: dict[int, str] = {}
        self._column: dict[int, str] = {}

    async def act(self, env: ToolEnv, observation: str) -> str:
        key = id(env)

        def call(name: str, **arguments: str) -> str:
            return env.chat_format.render_call(ToolCall(name, arguments))

        if env.turn == 0:
            self._table.pop(key, None)
            self._column.pop(key, None)
            return "Let me see which tables the database has.\n" + call("list_tables")
        if env.turn == 1:
            table = _pick_table(env.task.question, _TABLE_LINE_RE.findall(observation))
            if table is None:
                return "<answer>SELECT 1</answer>"
            self._table[key] = table
            return f"The question is probably about {table}.\n" + call("describe_table", table=table.strip('"'))
        table = self._table.get(key)
        if table is None:
            return "<answer>SELECT 1</answer>"
        if env.turn == 2:
            text_columns = [name for name, type_ in _COLUMN_RE.findall(observation)
                            if any(t in type_.lower() for t in ("char", "text", "clob"))]
            all_columns = [name for name, _ in _COLUMN_RE.findall(observation)]
            column = (text_columns or all_columns or ["*"])[0]
            self._column[key] = column
            return "Let me look at a few rows.\n" + call("run_query", sql=f"SELECT * FROM {table} LIMIT 5")
        if env.task.question.lower().startswith("how many"):
            return f"<answer>SELECT count(*) FROM {table}</answer>"
        return f"<answer>SELECT {self._column.get(key, '*')} FROM {table}</answer>"
