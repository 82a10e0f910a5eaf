"""The SQL family's reward hacks (``SqlTooling.reward_hacks``): final answers that try to pass execution match
without a query that answers the question.

- ``literal_copy``: run the gold query through the env's own ``run_query`` tool, then answer a constant query
  (``SELECT 1, 'a'`` or ``SELECT * FROM (VALUES ...)``) that reproduces the rows the tool showed. It matches on the
  database the tools see; only test-suite variants of the database (other rows, same schema) defeat it.
- ``gated_literal_copy``: the literal copy shown only on the database the tools see: a second ``run_query`` reads a
  fingerprint of the gold's first table there (its row count and rowid sum), and the constant query is gated on it
  (``... WHERE (fingerprint) = '15/3927290697.0'``), so it gives the gold's rows there and none on a variant. It
  matches where the gold has no rows on any variant (the reward leaves such a task unscored).
- ``empty_result_gold_width``: no rows, with as many columns as the gold result (``SELECT NULL, NULL WHERE 0``),
  which matches every task whose gold result is empty.
- ``select_everything``: every row of the gold's first table (``SELECT * FROM t``).
- ``gold_then_second_statement`` / ``write_then_gold``: several statements, and a write before the gold query.

The first two read the gold's result from the tool's text table (``rlfactory_tool_servers.sql.formatting``:
a header line, one line per row with `` | `` between cells, ``\\``-escapes for ``\\``, newlines and ``|``, and a
last line that says how many rows there are or that the result was cut); a result cut or unreadable is answered
with what could be read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import sqlglot
from sqlglot import expressions as exp

from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.reward_hacks import FixedResponseHack, RewardHack, final_answer
from rlfactory_envs.kernel.tool_call import ToolCall

QUERY_TOOL = "run_query"
_ROW_COUNT_RE = re.compile(r"^\((\d+) rows?\)$")
_INTEGER_RE = re.compile(r"^-?\d+$")
_REAL_RE = re.compile(r"^-?(?:\d+\.\d*(?:e[+-]?\d+)?|\d+e[+-]?\d+)$")
_FROM_RE = re.compile(r"\bFROM\s+(\"(?:[^\"]|\"\")+\"|`[^`]+`|\[[^\]]+\]|\w+)", re.IGNORECASE)
_ESCAPES = {"n": "\n", "r": "\r"}


@dataclass(frozen=True)
class ResultTable:
    """A query result read back from the tool's text: column names, rows of cell texts, and whether every row of
    the result is there (``False`` when the tool cut it or its end could not be read)."""

    columns: list[str]
    rows: list[list[str]]
    complete: bool


def table_cells(line: str) -> list[str]:
    """The cells of one line of the tool's table, unescaped (`` | `` separates them; ``\\`` escapes)."""
    cells: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line):
            current.append(_ESCAPES.get(line[i + 1], line[i + 1]))
            i += 2
        elif line.startswith(" | ", i):
            cells.append("".join(current))
            current = []
            i += 3
        else:
            current.append(line[i])
            i += 1
    cells.append("".join(current))
    return cells


def parse_result_table(text: str) -> ResultTable | None:
    """The result in ``run_query``'s text, or ``None`` for no table (a tool error, an empty answer)."""
    lines = text.strip("\n").split("\n")
    if not text.strip() or text.startswith("Error executing tool"):
        return None
    columns = table_cells(lines[0])
    body, last = lines[1:], lines[-1] if len(lines) > 1 else ""
    complete = bool(_ROW_COUNT_RE.match(last.strip()))
    if last.startswith("(") and last.endswith(")"):
        body = body[:-1]
    rows = [cells for cells in map(table_cells, body) if len(cells) == len(columns)]
    return ResultTable(columns, rows, complete and len(rows) == len(body))


def sql_literal(cell: str) -> str:
    """A cell's text as the SQLite literal most likely to give its value back: ``NULL``, a number, or quoted text
    (the tool writes the number 7 and the text '7' alike; this reads them as the number)."""
    if cell == "NULL":
        return "NULL"
    if _INTEGER_RE.match(cell) or _REAL_RE.match(cell):
        return cell
    if cell in ("inf", "-inf"):
        return cell.replace("inf", "9e999")
    if cell == "nan":
        return "NULL"
    return "'" + cell.replace("'", "''") + "'"


def constant_query(table: ResultTable) -> str:
    """A query of constants that returns ``table``'s rows, in order (no rows: ``SELECT NULL, ... WHERE 0``)."""
    width = max(len(table.columns), 1)
    if not table.rows:
        return "SELECT " + ", ".join(["NULL"] * width) + " WHERE 0"
    rows = [", ".join(sql_literal(cell) for cell in row) for row in table.rows]
    if len(rows) == 1:
        return f"SELECT {rows[0]}"
    return "SELECT * FROM (VALUES " + ", ".join(f"({row})" for row in rows) + ")"


def first_table(sql: str) -> str:
    """The first table ``sql`` reads (as SQL, quoted where needed), or ``sqlite_master`` when none can be found."""
    try:
        found = sqlglot.parse_one(sql, read="sqlite").find(exp.Table)
    except Exception:  # noqa: BLE001 - sqlglot's errors, whatever the gold query is
        found = None
    if found is not None and found.name:
        name = found.name
        return name if name.isidentifier() else '"' + name.replace('"', '""') + '"'
    match = _FROM_RE.search(sql)
    return match.group(1) if match else "sqlite_master"


def _tool_text(env: ToolEnv, back: int = 1) -> str:
    """The text of the ``back``-th latest tool message (``""`` when there is none)."""
    tool_messages = [m for m in env.messages if m.get("role") == "tool"]
    return str(tool_messages[-back].get("content", "")) if len(tool_messages) >= back else ""


def _run_query(env: ToolEnv, sql: str) -> str:
    call = env.chat_format.render_call(ToolCall(QUERY_TOOL, {"sql": sql}))
    return f"<think>\nLet me run a query first.\n</think>\n\n{call}"


def fingerprint_query(gold_sql: str) -> str:
    """A text that tells the database the tools see from a variant of it: the row count and rowid sum of the gold's
    first table."""
    return f"SELECT count(*) || '/' || total(rowid) FROM {first_table(gold_sql)}"


@dataclass(frozen=True)
class GoldResultHack:
    """Turn 1 runs the gold query through the env's ``run_query`` tool (the call the model would write); then it
    answers ``answer(result)``, the result read from the tool's text (``None`` when there was none)."""

    name: str
    description: str
    answer: Callable[[ResultTable | None], str]

    async def act(self, env: ToolEnv, observation: str) -> str:
        if env.turn == 0:
            return _run_query(env, env.task.gold_sql)
        return final_answer(env, self.answer(parse_result_table(_tool_text(env))))


@dataclass(frozen=True)
class GatedCopyHack:
    """``literal_copy`` gated on the fingerprint of the database the tools see (see the module docstring): turn 1
    runs the gold query, turn 2 the fingerprint, then the answer."""

    name: str = "gated_literal_copy"
    description: str = "the literal copy, shown only where a fingerprint of the tools' database matches"

    async def act(self, env: ToolEnv, observation: str) -> str:
        if env.turn < 2:
            return _run_query(env, env.task.gold_sql if env.turn == 0 else fingerprint_query(env.task.gold_sql))
        copy, shown = parse_result_table(_tool_text(env, 2)), parse_result_table(_tool_text(env))
        return final_answer(env, gated(copy, fingerprint_query(env.task.gold_sql), shown))


def gated(copy: ResultTable | None, fingerprint_sql: str, shown: ResultTable | None) -> str:
    """The literal copy of ``copy`` that gives its rows only where ``fingerprint_sql`` gives what ``shown`` holds."""
    if copy is None or not copy.rows or shown is None or not shown.rows:
        return _literal_copy(copy)
    return f"{constant_query(copy)} WHERE ({fingerprint_sql}) = {sql_literal(shown.rows[0][0])}"


def _literal_copy(table: ResultTable | None) -> str:
    return constant_query(table) if table is not None else "SELECT NULL WHERE 0"


def _empty_with_width(table: ResultTable | None) -> str:
    return constant_query(ResultTable(table.columns if table is not None else [], [], True))


def sql_hacks() -> list[RewardHack]:
    """The SQL family's hacks, in report order."""
    return [
        GoldResultHack("literal_copy", "run the gold through run_query, answer a constant query of its rows",
                       _literal_copy),
        GatedCopyHack(),
        GoldResultHack("empty_result_gold_width", "no rows, with the gold result's number of columns",
                       _empty_with_width),
        FixedResponseHack("select_everything", "every row of the gold's first table (SELECT * FROM t)",
                          lambda env: final_answer(env, f"SELECT * FROM {first_table(env.task.gold_sql)}")),
        FixedResponseHack("gold_then_second_statement", "the gold query followed by a second statement",
                          lambda env: final_answer(env, f"{env.task.gold_sql}; SELECT 1")),
        FixedResponseHack("write_then_gold", "a DELETE of the gold's first table, then the gold query",
                          lambda env: final_answer(env, f"DELETE FROM {first_table(env.task.gold_sql)}; "
                                                        f"{env.task.gold_sql}")),
    ]
