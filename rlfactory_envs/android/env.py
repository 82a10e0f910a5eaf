"""``rlf/Android-v0``: control a phone with AndroidWorld's actions, on a simulated phone that trains at batch scale.

    env = gym.make("rlf/Android-v0")
    obs, info = env.reset(seed=0)      # obs: the goal and the screen (T3A's numbered UI-element list)
    obs, reward, terminated, truncated, info = env.step('<tool_call>{"name": "open_app", '
                                                         '"arguments": {"app_name": "Contacts"}}</tool_call>')

Each episode gets its own phone on the ``android`` tool server (the episode id travels in each request's ``_meta``),
made at reset for the task instance and dropped when the episode ends or the env closes. The model acts with the server's
tools, one action per turn by default (``max_tool_calls``; several run in order), or with AndroidWorld's action
JSON in its text (``Action: {"action_type": "click", "index": 3}``). Each action's observation says what
happened and shows the new screen; an invalid action (no such index, typing into a button, an unknown app) is
reported and changes nothing. ``status`` or ``answer`` ends the episode (terminated); ``max_turns`` truncates.

Tasks: ``instances_per_template`` seeds of every template (``templates=`` to choose), interleaved, so
``reset(seed=s)`` spreads over all of them; ``options={"task": {"template": ..., "seed": ...}}`` (and ``"params"``)
pins one, ``options={"task_id": "ContactsAddContact/3"}`` too. ``info["task"]`` holds ``template``, ``params``,
``optimal_steps``, ``goal``, ``kind`` and ``app``.

Reward: 1 when the server's check of the final phone state (or of the answer, or of an ``infeasible`` status
given after looking) passes, else 0 (``reward="success"``); ``reward="progress"`` pays the fraction of sub-goals
met instead; weights over them, ``format`` and a judge work as in every family. ``info["android_eval"]`` holds the
verdict: ``success``, ``progress``, each sub-goal, the reason and the number of actions. ``observation="xml"``
shows screens as compressed XML instead of T3A's list.

``backend="adb", serial="emulator-5554"`` drives a real emulator or phone through ADB instead (one episode at a
time, ``adb_path=`` for the executable): the same tools and screens, tasks limited to the templates whose setup and
check adb reaches (the settings ones).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from rlfactory_envs.android.family import FAMILY
from rlfactory_envs.android.parser import AndroidActionParser
from rlfactory_envs.android.prompt import android_messages
from rlfactory_envs.android.tasks import AndroidTask, load_android_tasks
from rlfactory_envs.kernel.chat_template import settings_chat_format
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.config import bundled_server_config
from rlfactory_envs.kernel.mcp.toolbox import ToolSpec
from rlfactory_envs.kernel.reward_setting import FamilyRewards, build_reward
from rlfactory_envs.kernel.runtime import Parts, Runtime
from rlfactory_envs.kernel.settings import BundledServing, EnvSettings, EpisodeLimits, RewardScoring
from rlfactory_reward_models.base import RewardInput
from rlfactory_reward_models.tool_verdict import ToolVerdictReward
from rlfactory_tool_servers.android.phone.tasks import all_templates
from rlfactory_tool_servers.android.phone.tasks.base import initial_state
from rlfactory_tool_servers.android.tools import ENV_TOOLS


class PhoneUnavailable(RuntimeError):
    """The tool server could not make the episode's phone."""


def android_server_config(*, transport: Literal["inprocess", "stdio"] = "inprocess", backend: str = "sim",
                          serial: str | None = None, adb_path: str = "adb",
                          tuning: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``mcpServers`` document for the bundled android server (simulated phones, or a real one over ADB)."""
    args = [] if backend == "sim" else ["--backend", "adb", "--adb-path", adb_path] + (["--serial", serial] if serial
                                                                                        else [])
    return bundled_server_config("android", "rlfactory_tool_servers.android", args, transport=transport,
                                 tuning=tuning)


def android_rewards() -> FamilyRewards:
    """Success (default) or sub-goal progress, from one verdict per episode; a judge reads the goal and the
    ending action."""
    verdict = ToolVerdictReward("device_verify", part_keys=("progress",), info_key="android_eval")
    return FamilyRewards(default=verdict, named={"success": (verdict, None), "progress": (verdict, "progress")},
                         judge_template="qa", judge_fields=_judge_fields)


def _judge_fields(item: RewardInput) -> dict[str, str]:
    """The goal, and for a question the answer read from the phone as it was set up."""
    task: AndroidTask = item.task
    definition, params = task.definition, task.params
    reference = ""
    if definition.kind == "answer":
        reference = definition.expected_answer(initial_state(definition, task.seed, params), params)
    return {"question": task.goal, "reference": reference}


def real_device_templates(names: Sequence[str] | None) -> list[str]:
    """The templates a real phone runs (``real_device``): those named, each checked, or all of them."""
    runnable = [t.name for t in all_templates() if t.real_device]
    if names is None:
        return runnable
    refused = [name for name in names if name not in runnable]
    if refused:
        raise ConfigError(f"templates= {refused[0]!r} cannot run with backend='adb' (its setup or check reads app "
                          f"data adb does not reach); these can: {', '.join(runnable)}")
    return list(names)


class AndroidServing(BundledServing):
    """The android server, in this process or over stdio: simulated phones (``backend="sim"``), or a real one over
    ADB (``"adb"``, ``serial=`` the device, ``adb_path=`` the executable)."""

    backend: Literal["sim", "adb"] = "sim"
    serial: str | None = None
    adb_path: str = "adb"


class AndroidScoring(RewardScoring):
    """``reward="success"`` (default): the server's check of the final state; ``"progress"``: sub-goals met."""

    reward: Any = "success"


class AndroidSettings(EnvSettings):
    """``rlf/Android-v0``'s settings: which templates, how many seeded instances of each, how screens are shown."""

    templates: Sequence[str] | None = None
    instances_per_template: int = 1000
    observation: Literal["t3a", "xml"] = "t3a"
    limits: EpisodeLimits = EpisodeLimits(max_turns=20, max_tool_calls=1, max_tool_response_chars=16_384)
    serving: AndroidServing = AndroidServing()
    scoring: AndroidScoring = AndroidScoring()


@dataclasses.dataclass(eq=False, kw_only=True)
class AndroidRuntime(Runtime):
    observation: str


class AndroidEnv(ToolEnv):
    """Phone control on simulated phones; see the module docstring for every setting."""

    settings_model = AndroidSettings
    family = FAMILY
    prompt_tools = ("click", "long_press", "input_text", "keyboard_enter", "scroll", "navigate_back",
                    "navigate_home", "open_app", "status", "answer")
    calls_in_order = True  # each acts on the screen the previous one left
    runtime: AndroidRuntime

    def __init__(self, runtime: AndroidRuntime | None = None, **kwargs: Any):
        super().__init__(runtime, **kwargs)
        self._screen = ""

    @classmethod
    def build_runtime(cls, settings: AndroidSettings, parts: Parts) -> AndroidRuntime:
        serving, scoring, limits = settings.serving, settings.scoring, settings.limits
        templates = [settings.templates] if isinstance(settings.templates, str) else settings.templates
        if serving.backend == "adb":
            templates = real_device_templates(templates)
        chat_format = settings_chat_format(settings)
        servers = serving.tool_servers or android_server_config(transport=serving.transport, backend=serving.backend,
                                                                serial=serving.serial, adb_path=serving.adb_path)
        return AndroidRuntime(
            settings=settings, parts=parts, observation=settings.observation, hidden_tools=ENV_TOOLS,
            tasks=parts.tasks(load_android_tasks, None, None if templates is None else tuple(templates),
                              settings.instances_per_template),
            toolbox=parts.toolbox(servers), chat_format=chat_format,
            parser=AndroidActionParser(chat_format.parser(max_tool_calls=limits.max_tool_calls,
                                                          answer_tag=settings.answer_tag,
                                                          repair=settings.repair_tool_calls), limits.max_tool_calls),
            reward_model=build_reward(scoring.reward, scoring.judge, android_rewards()))

    # -- the episode's phone ------------------------------------------------------------------------------------

    async def aopen_episode(self, task: AndroidTask) -> None:
        arguments = {"template": task.template, "seed": task.seed, "observation": self.runtime.observation,
                     "params": "" if task.pinned_params is None else json.dumps(dict(task.pinned_params))}
        result = await self.call_episode_tool("device_open", arguments, task)
        if result.is_error:
            raise PhoneUnavailable(f"the android server could not make the phone for {task.task_id}: {result.text}")
        self._screen = result.text

    async def aclose_episode(self) -> None:
        await self.call_episode_tool("device_close", {})

    # -- family hooks -------------------------------------------------------------------------------------------

    def task_from_dict(self, data: Mapping[str, Any]) -> AndroidTask:
        return AndroidTask.from_dict(data)

    def initial_messages(self, task: AndroidTask, tools: list[ToolSpec]) -> list[dict[str, Any]]:
        return android_messages(task.goal, self._screen)
