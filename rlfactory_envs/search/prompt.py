"""The search family's prompts: the same protocol in the two chat formats the family supports (``PROMPTS``, by
format name)."""

from __future__ import annotations

from rlfactory_envs.search.task import SearchTask

SEARCH_R1_INSTRUCTIONS = (
    "Answer the given question. Every time you receive new information, first reason about it inside "
    "<think> and </think>. If you find you lack some knowledge, you can search by writing <search> query "
    "</search>; the top results are returned between <information> and </information>. You may search as many "
    "times as you need. When you are ready, give the final answer inside <answer> and </answer>, with no "
    "explanation, for example <answer> Paris </answer>."
)

TOOL_CALLING_INSTRUCTIONS = (
    "Answer the given question. You may call the search tool as many times as you need to look facts up; it "
    "returns the top Wikipedia passages for your query. When you are ready, give the final answer inside "
    "<answer> and </answer>, with no explanation, for example <answer> Paris </answer>."
)


def search_r1_prompt(task: SearchTask) -> str:
    """Search-R1's protocol: instructions, then ``Question: ...``."""
    return f"{SEARCH_R1_INSTRUCTIONS} Question: {task.question.strip()}\n"


def tool_calling_prompt(task: SearchTask) -> str:
    """The Qwen3/Hermes protocol: the tool schema travels in the system prompt the chat template builds."""
    return f"{TOOL_CALLING_INSTRUCTIONS}\nQuestion: {task.question.strip()}"


PROMPTS = {"qwen3": tool_calling_prompt, "search_r1": search_r1_prompt}
"""The user prompt for each chat format the family supports."""
