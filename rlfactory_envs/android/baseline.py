"""A scripted policy that solves every template: it plays the task's reference plan
(``rlfactory_tool_servers.android.phone.plans``), finding each target in the screen text it is shown, never in the
phone's state, and acts through the tools."""

from __future__ import annotations

from typing import Any

from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.tool_call import ToolCall
from rlfactory_tool_servers.android.phone.plans import PlanError, PlanPlayer


class ScriptedPhonePolicy:
    """Plays each episode's reference plan from the observations."""

    name = "scripted"
    description = ("plays the task's reference plan, finding each target on the screen it is shown: an oracle that "
                   "checks the env and its phone, not a model's score")

    def __init__(self) -> None:
        self._players: dict[int, PlanPlayer] = {}

    def next_action(self, env: ToolEnv, observation: str) -> dict[str, Any]:
        """The plan's next action as AndroidWorld's action JSON (``status(infeasible)`` when the plan is stuck)."""
        task = env.task
        if env.turn == 0:
            self._players[id(env)] = PlanPlayer(task.definition.plan(task.params))
        player = self._players[id(env)]
        try:
            action = player.next_action(observation)
        except PlanError:
            action = {"action_type": "status", "goal_status": "infeasible"}
        if player.finished or action["action_type"] in ("status", "answer"):
            self._players.pop(id(env), None)
        return action

    async def act(self, env: ToolEnv, observation: str) -> str:
        action = self.next_action(env, observation)
        arguments = {k: v for k, v in action.items() if k != "action_type"}
        return "Next step of the plan.\n" + env.chat_format.render_call(ToolCall(action["action_type"], arguments))
