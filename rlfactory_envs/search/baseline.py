"""A scripted baseline for the search family that really uses the tool: search the question, answer with the
title of the top-ranked passage. It runs offline and gives every part of the pipeline real work; on real NQ it
scores near zero, as a retrieve-and-copy-title reader should."""

from __future__ import annotations

import re

from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.tool_call import ToolCall

_TOP_TITLE_RE = re.compile(r'Doc 1\(Title: "?(.*?)"?\) ', re.DOTALL)


class SearchThenTitlePolicy:
    """Turn 1: search the question. Turn 2: answer the top passage's title (or give up when there is none)."""

    name = "scripted"
    description = ("searches the question and answers the top passage's title: a retrieve-and-copy baseline (near 0 "
                   "on real NQ; the embedded sample is written so that it often works)")

    async def act(self, env: ToolEnv, observation: str) -> str:
        question = env.task.question
        if env.turn == 0:
            call = env.chat_format.render_call(ToolCall("search", {"query": question}))
            return f"<think>I should look this up.</think>\n{call}"
        match = _TOP_TITLE_RE.search(observation)
        answer = match.group(1).strip() if match else "unknown"
        return f"<think>The top passage is about {answer}.</think>\n<answer> {answer} </answer>"
