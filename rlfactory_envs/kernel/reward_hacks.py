"""The reward-hack contract: scripted policies that try to earn reward without doing the task.

An RL policy finds every way to earn reward that does not need the task done; ``rlf audit`` runs a battery of such
ways against an env's reward and reports how often each one pays. A ``RewardHack`` is a policy (the shape of
``rlfactory_envs.rollout.policy.Policy``: ``name`` and ``async act(env, observation) -> str``, the raw response
text for the env's current turn) with a ``description`` of the exploit in one sentence.

A hack may read privileged data (``env.task``, its gold answer, the family's reference answer): it stands for a
policy that found the answer by other means, or it tests how the reward treats one shape of answer. When it cannot
be built for the current task (it needs a reference answer and the env has none) ``act`` raises
``HackNotApplicable``, and the audit counts that task as not tried rather than as a finding. Any other exception
is a finding: the audit reports it with the hack.

A family offers its own hacks through its tooling (``FamilyTooling.reward_hacks``); its module imports only this
contract (and its own family), never the audit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from rlfactory_envs.kernel.families import tooling_of

if TYPE_CHECKING:
    from rlfactory_envs.kernel.env import ToolEnv


class RewardHack(Protocol):
    """A scripted exploit: ``act`` answers one turn with the raw text of the response; ``description`` says in one
    sentence what it tries (shown by ``rlf audit``)."""

    name: str
    description: str

    async def act(self, env: ToolEnv, observation: str) -> str: ...


class HackNotApplicable(Exception):
    """Raised by ``RewardHack.act`` when the hack cannot be built for the env's current task; the message says why
    (e.g. the env has no reference answer for it)."""


def final_answer(env: ToolEnv, text: str) -> str:
    """``text`` as the env's final answer: inside ``<answer_tag>...</answer_tag>``."""
    return f"<{env.answer_tag}>{text}</{env.answer_tag}>"


def required_reference(env: ToolEnv) -> str:
    """The reference answer of the env's current task (its family's tooling's); ``HackNotApplicable`` when there is
    none."""
    reference = tooling_of(env).reference_answer(env, env.task)
    if reference is None:
        task_id = getattr(env.task, "task_id", None)
        raise HackNotApplicable(f"{type(env).__name__} gives no reference answer for task {task_id!r}")
    return reference


@dataclass(frozen=True)
class FixedResponseHack:
    """A hack that sends ``respond(env)`` on every turn: one final answer, given again while the env refuses it as
    unreadable (``ToolEnv.answer_problem``) until the last turn scores it."""

    name: str
    description: str
    respond: Callable[[ToolEnv], str]

    async def act(self, env: ToolEnv, observation: str) -> str:
        return self.respond(env)
