"""The NL2SQL family's prompt: explore the task's database with the tools, then answer with one SQL query."""

from __future__ import annotations

from rlfactory_envs.sql.task import SqlTask

INSTRUCTIONS = (
    "Answer the question below with one SQLite query over the database `{db_id}`. You can explore the database "
    "first with the tools: list_tables shows its tables and columns, describe_table shows one table's columns, "
    "keys and sample rows, and run_query runs a read-only query and shows its rows. Only read-only SELECT queries "
    "(WITH ... SELECT included) are allowed, one statement at a time. When you are ready, give your final query "
    "inside <answer> and </answer>, with no explanation, for example <answer>SELECT count(*) FROM singer</answer>. "
    "The final query is executed on the database and scored by whether its result equals the correct result: "
    "return exactly the columns the question asks for, and order the rows only when the question asks for an order."
)


def sql_prompt(task: SqlTask, *, with_evidence: bool) -> str:
    """The user message of an episode; BIRD's prompt adds the question's external-knowledge hint."""
    parts = [INSTRUCTIONS.format(db_id=task.db_id)]
    if with_evidence and task.evidence:
        parts.append(f"External knowledge: {task.evidence}")
    parts.append(f"Question: {task.question}")
    return "\n".join(parts)
