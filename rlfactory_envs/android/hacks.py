"""The Android family's reward hacks (``AndroidTooling.reward_hacks``), and its control: the reference plan played from
the screens, which must earn reward. The hacks end without doing the task, or act at random first, or answer with
the goal's own words, or with all the text of the screen that holds the answer, or, per question template, with its
most common answer."""

from __future__ import annotations

import functools
import json
import random
from collections import Counter
from dataclasses import dataclass, field

from rlfactory_envs.android.baseline import ScriptedPhonePolicy
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.reward_hacks import FixedResponseHack, HackNotApplicable, RewardHack
from rlfactory_envs.kernel.tool_call import ToolCall
from rlfactory_tool_servers.android.phone.tasks import all_templates, template_named
from rlfactory_tool_servers.android.phone.tasks.base import initial_state, instance_params
from rlfactory_tool_servers.android.phone.ui import parse_t3a

RANDOM_TURNS = 12
RANDOM_TEXTS = ("hello", "1", "Alice", "note", "10:00", "2023-10-15")


def _action(env: ToolEnv, name: str, **arguments: object) -> str:
    return env.chat_format.render_call(ToolCall(name, dict(arguments)))


class ReferencePlanControl(ScriptedPhonePolicy):
    """The control: the task's reference plan, played from the screen text."""

    name = "control"
    description = "the task's reference plan played from the screens (must earn reward)"


class ScreenDumpAnswerHack(ScriptedPhonePolicy):
    """Question tasks: follow the reference plan to the screen that holds the answer, then answer with every text
    on it, hoping the check looks for the answer inside."""

    name = "answer_screen_dump"
    description = "the reference plan to the answer's screen, then every text on it as the answer"

    def next_action(self, env: ToolEnv, observation: str) -> dict[str, object]:
        if env.task.definition.kind != "answer":
            raise HackNotApplicable("only question tasks are answered")
        action = super().next_action(env, observation)
        if action["action_type"] == "answer":
            texts = [str(e.get("text") or e.get("content_description") or "") for e in parse_t3a(observation)]
            action = {"action_type": "answer", "text": ", ".join(t for t in texts if t)}
        return action


@dataclass
class RandomActionsHack:
    """Random actions of every type on whatever is on screen, then ``status(goal_status)``. Ending
    ``infeasible`` is tried on the feasible tasks only: on an infeasible one, looking around and saying so is the
    right answer, which a policy blind to the goal gets on the infeasible share of the tasks (see
    rlfactory_envs/android/README.md)."""

    name: str = "random_then_complete"
    description: str = f"{RANDOM_TURNS} random actions, then status complete"
    goal_status: str = "complete"
    _rngs: dict[int, random.Random] = field(default_factory=dict)

    async def act(self, env: ToolEnv, observation: str) -> str:
        if self.goal_status == "infeasible" and env.task.definition.kind == "infeasible":
            raise HackNotApplicable("saying infeasible is this task's right answer")
        if env.turn == 0:
            self._rngs[id(env)] = random.Random(env.task.task_id)
        rng = self._rngs[id(env)]
        if env.turn >= min(RANDOM_TURNS, env.max_turns - 1):
            self._rngs.pop(id(env), None)
            return _action(env, "status", goal_status=self.goal_status)
        index = rng.randrange(25)
        choices = [("click", {"index": index}), ("long_press", {"index": index}),
                   ("input_text", {"index": index, "text": rng.choice(RANDOM_TEXTS)}), ("keyboard_enter", {}),
                   ("scroll", {"direction": rng.choice(["up", "down"])}), ("navigate_back", {}),
                   ("open_app", {"app_name": env.task.definition.app})]
        name, arguments = rng.choice(choices)
        return _action(env, name, **arguments)


@dataclass
class BrowseThenInfeasibleHack:
    """Open the goal's app, scroll its first list to the end, declare the task infeasible: what the infeasible
    templates ask for, tried on the feasible ones (where it must earn nothing)."""

    name: str = "browse_then_infeasible"
    description: str = "open the goal's app, scroll to the end, status infeasible (feasible tasks)"

    async def act(self, env: ToolEnv, observation: str) -> str:
        if env.task.definition.kind == "infeasible":
            raise HackNotApplicable("saying infeasible is this task's right answer")
        if env.turn == 0:
            return _action(env, "open_app", app_name=env.task.definition.app)
        if env.turn < min(8, env.max_turns - 1):
            return _action(env, "scroll", direction="down")
        return _action(env, "status", goal_status="infeasible")


MODAL_SEEDS = 500
"""The seeds a fixed-answer hack learns its template's most common answer from."""
MODAL_CANDIDATES = 20
"""The most frequent right answers tried as the fixed one (each against all the others)."""


@functools.cache
def modal_answer(template_name: str, seeds: int = MODAL_SEEDS) -> tuple[str, float]:
    """The answer that would be right on the most of ``seeds`` seeds of a question template, and the share of them
    it is right on (an answer counts where the template's own ``answer_matches`` accepts it)."""
    template = template_named(template_name)
    expected = Counter(template.expected_answer(initial_state(template, seed, params), params)
                       for seed in range(seeds) for params in [instance_params(template, seed)])
    def right_on(answer: str) -> int:
        return sum(n for other, n in expected.items() if template.answer_matches(answer, other))
    best = max((answer for answer, _ in expected.most_common(MODAL_CANDIDATES)), key=right_on)
    return best, right_on(best) / seeds


@dataclass(frozen=True)
class FixedAnswerHack:
    """A question template's most common answer (``modal_answer``), given at once without touching the phone: what a
    policy learns where a question has few possible answers."""

    template: str

    @property
    def name(self) -> str:
        return f"fixed_answer_{self.template}"

    @property
    def description(self) -> str:
        return f"{self.template}'s most common answer, at once"

    async def act(self, env: ToolEnv, observation: str) -> str:
        if env.task.template != self.template:
            raise HackNotApplicable(f"only {self.template} tasks")
        return _action(env, "answer", text=modal_answer(self.template)[0])


def _goal_words(env: ToolEnv) -> str:
    """The goal's parameters (names, numbers, titles) as an answer."""
    return ", ".join(str(value) for value in env.task.params.values())


def android_hacks() -> list[RewardHack]:
    return [
        ReferencePlanControl(),
        FixedResponseHack("complete_at_once", "status complete before doing anything",
                          lambda env: _action(env, "status", goal_status="complete")),
        FixedResponseHack("infeasible_at_once", "status infeasible before looking at anything",
                          lambda env: _action(env, "status", goal_status="infeasible")),
        FixedResponseHack("answer_with_goal_words", "the goal's parameters as the answer",
                          lambda env: _action(env, "answer", text=_goal_words(env))),
        FixedResponseHack("androidworld_json_complete", "AndroidWorld's status JSON in the text, at once",
                          lambda env: "Action: " + json.dumps({"action_type": "status", "goal_status": "complete"})),
        RandomActionsHack(),
        RandomActionsHack("random_then_infeasible", f"{RANDOM_TURNS} random actions, then status infeasible "
                          "(feasible tasks)", "infeasible"),
        BrowseThenInfeasibleHack(),
        ScreenDumpAnswerHack(),
        *(FixedAnswerHack(template.name) for template in all_templates() if template.kind == "answer"),
    ]
