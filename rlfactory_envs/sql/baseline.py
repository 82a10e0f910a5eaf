"""A scripted policy for the NL2SQL family that shows the env working end to end: it explores the database with the
tools and answers the task's gold query.

Turn 1 lists the tables; turn 2 describes the first table the gold query names (else the first one listed); turn 3
runs the gold query through ``run_query``; turn 4 answers it. Every part of the pipeline gets real work (three tool
calls, the reward's execution on the test suite), and the reward is 1.0 on every task the reward scores (a gold query
with an empty result everywhere is unscored). It reads the gold query, so it is an oracle, like Android's plan
player: a check that the env, its tools and its reward work, not the score of a model.
"""

from __future__ import annotations

import re

from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.tool_call import ToolCall

_TABLE_LINE_RE = re.compile(r'^("(?:[^"]|"")+"|\S+) \([0-9?]+ rows\):', re.MULTILINE)
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def gold_table(gold_sql: str, tables: list[str]) -> str | None:
    """The first of ``tables`` (as ``list_tables`` names them) that ``gold_sql`` names, else the first of them."""
    words = {word.lower() for word in _WORD_RE.findall(gold_sql)}
    named = [table for table in tables if table.strip('"').lower() in words]
    return (named or tables or [None])[0]


class ExploreThenGoldPolicy:
    """List the tables, describe the gold query's table, run the gold query, answer it (see the module docstring)."""

    name = "scripted"
    description = ("explores the database with the tools, then runs and answers the task's gold query: an oracle "
                   "that checks the env, its tools and its reward, not a model's score")

    async def act(self, env: ToolEnv, observation: str) -> str:
        gold = env.task.gold_sql
        render = env.chat_format.render_call
        if env.turn == 0:
            return "Let me see which tables the database has.\n" + render(ToolCall("list_tables", {}))
        if env.turn == 1:
            table = gold_table(gold, _TABLE_LINE_RE.findall(observation))
            if table is not None:
                return f"The question is about {table}.\n" + render(ToolCall("describe_table",
                                                                             {"table": table.strip('"')}))
        if env.turn <= 2:
            return "Let me run my query.\n" + render(ToolCall("run_query", {"sql": gold}))
        return f"<{env.answer_tag}>{gold}</{env.answer_tag}>"
