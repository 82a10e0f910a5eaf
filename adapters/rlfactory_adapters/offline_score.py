"""Scoring a finished response string without replaying the episode (verl's reward-manager path).

The agent loops return the env's own reward; this is for trainers that only keep the decoded response and call a
``compute_score`` afterwards. The answer is taken from the last model turn of the response (after the last
assistant header, or after the last ``</information>`` block for Search-R1's format), parsed by the env's own parser
and scored by the env's own reward model, so both paths give the same reward for the same answer. Decoded without
special tokens, a header reads as plain text (``"\\nassistant\\n"``) that the model can write too: the plain form
is read only in a response with no special header, and there a model that writes it is read from there on. Keep
the special tokens in the decoded response (``skip_special_tokens=False``) when scoring this way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rlfactory_adapters.env_lease import lease_env
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_reward_models.base import Reward, RewardInput


def last_model_turn(response: str, markers: Sequence[str]) -> str:
    """The text after the last occurrence of the first of ``markers`` that ``response`` holds; the whole ``response``
    when it holds none. ``markers`` are the env's chat format's ``last_turn_markers`` (where the env's text ends and
    the model's turn begins), in order of preference: the header with its special tokens comes before its form
    decoded without them, which a model can write itself, so that form counts only in a text with no special
    header."""
    for marker in markers:
        start = response.rfind(marker)
        if start >= 0:
            return response[start + len(marker):]
    return response


def final_answer(env: ToolEnv, response: str) -> tuple[str, str | None]:
    """``response``'s last model turn and the answer the env's parser reads in it (``None``: none)."""
    last = last_model_turn(response, env.chat_format.last_turn_markers)
    return last, env.parser.parse(last).answer


async def ascore_response(env: ToolEnv, task: Mapping[str, Any], response: str) -> Reward:
    """The env's reward for ``task`` when ``response`` (one or many turns) ends the episode."""
    return await ascore_answer(env, task, *final_answer(env, response))


async def ascore_answer(env: ToolEnv, task: Mapping[str, Any], last: str, answer: str | None) -> Reward:
    """The env's reward for ``task`` of ``answer`` read in the last model turn ``last`` (``final_answer``), as
    the env scores it (``Runtime.score``: its deadline, its range, a failure's reason)."""
    item = RewardInput(task=env.task_from_dict(task), answer=answer, response=last)
    return await env.runtime.score(item)


def score_response(env_id: str, task: Mapping[str, Any], response: str,
                   env_kwargs: Mapping[str, Any] | None = None) -> Reward:
    """``ascore_response`` from sync code (also from inside a running event loop: it runs on the env's loop)."""
    with lease_env(env_id, env_kwargs) as env:
        return env.toolbox.run_blocking(ascore_response(env, task, response))
