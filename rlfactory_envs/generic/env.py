"""``rlf/MCP-v0``: a user's own environment, with no subclass.

    env = gym.make("rlf/MCP-v0", tool_servers="mcp.json", data_path="questions.jsonl", reward="my_rewards:score")

- Tools: ``tool_servers`` (the standard ``{"mcpServers": ...}`` document, as a dict, JSON text or path; or
  RL-Factory's ``mcp_tools.pydata``), ``tools`` (typed Python functions, or ``"module:function"``) and
  ``qwen_agent_tools`` (see ``tool_sources``). ``tools_allowed`` / ``tools_denied`` choose among them;
  ``bound_arguments={"db_id": "db_id"}`` sets a tool argument from a column of the task (or its ``id``) on every
  call and hides it from the model (as the SQL env binds ``db_id``).
- Tasks: ``data_path``, JSONL/JSON/parquet rows with ``question`` or ``prompt`` and ``ground_truth`` (see
  ``task``). ``options={"task_id": id}`` pins a row by its ``id`` (else its 0-based line/row number),
  ``options={"task": row}`` takes a row given in full.
- Prompt: ``system_prompt`` (a question row without one gets ``DEFAULT_SYSTEM_PROMPT``), ``prompt_template``
  (how a ``question`` row becomes the user message: ``str.format`` over the row's columns), ``chat_format``
  (``qwen3``, ``search_r1``, or the model's own template: ``chat_template=``), ``answer_tag``: the final answer is the text inside ``<answer>...</answer>``.
- Reward: ``reward``, a built-in name (``exact_match``, ``f1``, ``contains``), ``"package.module:function"`` or a
  function (see ``reward``), returning values inside ``reward_range``.

Everything is checked when the env is made: the tool servers are started and their tools listed, so a command
that is not found, a server that exits at start, an unknown tool in the filters, an unknown reward, a row without
a question and (with ``check_reward``) a reward that raises or returns a non-number on the first task fail at
``make`` with one line naming the problem. ``python_path`` adds folders to ``sys.path`` for the ``module:...``
names (an env spec's folder is added for it). With nothing given, the env plays an embedded sample: arithmetic
word problems with a ``calculate`` tool (``info["dataset"]`` says ``rlf-mcp-sample``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rlfactory_envs.generic.family import FAMILY, SAMPLE_TOOLS
from rlfactory_envs.generic.task import GenericTask
from rlfactory_envs.generic.tasks import load_generic_tasks
from rlfactory_envs.generic.tool_sources import ToolServers, tool_config
from rlfactory_envs.kernel.chat_template import settings_chat_format
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.session import TransportError
from rlfactory_envs.kernel.mcp.toolbox import ToolSpec
from rlfactory_envs.kernel.reward_setting import FamilyRewards, RewardSetting, build_reward, reward_models_in
from rlfactory_envs.kernel.runtime import Parts, Runtime
from rlfactory_envs.kernel.settings import EnvSettings, EpisodeLimits, RewardScoring, ToolServing
from rlfactory_reward_models.answer_match import REWARDS
from rlfactory_reward_models.function_reward import FunctionReward
from rlfactory_tool_servers.functions.server import resolve_function

DEFAULT_SYSTEM_PROMPT = ("Answer the user's question. Call the tools when they help. When you are ready, give the "
                         "final answer inside <{tag}> and </{tag}>, with no explanation, for example "
                         "<{tag}> 42 </{tag}>.")


def generic_rewards(reward_range: Sequence[float]) -> FamilyRewards:
    """A user's env's rewards: the built-in answer matches by name and the user's functions, in ``reward_range``
    (exact match by default); a judge reads the question and the ground truth. A function is bounded by the env's
    ``reward_timeout_s`` alone."""
    default = FunctionReward(REWARDS["exact_match"], "exact_match", tuple(reward_range), None)
    return FamilyRewards(default=default, named={}, functions=REWARDS, judge_template="qa",
                         function_range=default.reward_range, function_timeout_s=None)


class GenericServing(ToolServing):
    """Where a user's env gets its tools: ``tool_servers`` (an ``mcpServers`` document, JSON text or path, or
    RL-Factory's ``mcp_tools.pydata``), ``tools`` (typed Python functions, or ``"module:function"``) and
    ``qwen_agent_tools``; ``bound_arguments`` sets a tool argument from a column of the task (or its ``id``);
    ``python_path`` adds folders to ``sys.path`` for the ``module:...`` names."""

    tool_servers: ToolServers | None = None
    tools: Sequence[Callable[..., Any] | str] = ()
    qwen_agent_tools: Sequence[str | Mapping[str, Any]] = ()
    bound_arguments: Mapping[str, str] | None = None
    python_path: Sequence[str] = ()


class GenericScoring(RewardScoring):
    """The reward (``exact_match`` by default, a built-in name, ``"module:function"`` or a function) in
    ``reward_range``; ``check_reward`` probes it at make (``reward_timeout_s``, 60 s here, bounds each call)."""

    reward: RewardSetting = "exact_match"
    reward_range: Sequence[float] = (0.0, 1.0)
    check_reward: bool = True


class GenericSettings(EnvSettings):
    """``rlf/MCP-v0``'s settings: the dataset, the prompt, the chat format (see the module docstring)."""

    data_path: str | None = None
    system_prompt: str | None = None
    prompt_template: str = "{question}"
    limits: EpisodeLimits = EpisodeLimits(max_turns=4, reward_timeout_s=60.0)
    serving: GenericServing = GenericServing()
    scoring: GenericScoring = GenericScoring()


@dataclasses.dataclass(eq=False, kw_only=True)
class GenericRuntime(Runtime):
    system_prompt: str | None
    prompt_template: str
    bound_columns: Mapping[str, str]

    def messages(self, task: GenericTask) -> list[dict[str, Any]]:
        """The chat messages that open an episode of ``task`` (see ``McpEnv.initial_messages``)."""
        if task.question is not None:
            messages = [{"role": "user", "content": self.prompt_template.format(question=task.question,
                                                                                  **task.context)}]
            system = self.system_prompt or DEFAULT_SYSTEM_PROMPT.format(tag=self.answer_tag)
        elif isinstance(task.prompt, str):
            messages, system = [{"role": "user", "content": task.prompt}], self.system_prompt
        else:
            messages, system = [dict(m) for m in task.prompt or ()], self.system_prompt
        if system is not None:
            messages = [{"role": "system", "content": system}] + [m for m in messages if m["role"] != "system"]
        return messages

    def check_task(self, task: GenericTask, where: str) -> None:
        """``ConfigError`` when the prompt template cannot be filled from the row or a bound column is missing."""
        if task.question is not None:
            try:
                self.prompt_template.format(question=task.question, **task.context)
            except (KeyError, IndexError, ValueError) as exc:
                raise ConfigError(f"{where}: row {task.task_id!r}: prompt_template {self.prompt_template!r} cannot be "
                                  f"filled ({type(exc).__name__}: {exc}); it may name the row's columns") from None
        missing = [column for column in self.bound_columns.values() if column != "id" and column not in task.context]
        if missing:
            raise ConfigError(f"{where}: row {task.task_id!r} has no column {missing[0]!r}, which bound_arguments "
                              "binds a tool argument to")


class McpEnv(ToolEnv):
    """A user's env from data: see the module docstring for every setting."""

    settings_model = GenericSettings
    family = FAMILY
    runtime: GenericRuntime

    @classmethod
    def build_runtime(cls, settings: GenericSettings, parts: Parts) -> GenericRuntime:
        """The runtime, checked whole (tools, every row, the reward on the first row) before any episode."""
        serving, scoring = settings.serving, settings.scoring
        chat_format = settings_chat_format(settings, choices=("qwen3", "hermes", "search_r1"))
        runtime = GenericRuntime(
            settings=settings, parts=parts, system_prompt=settings.system_prompt,
            prompt_template=settings.prompt_template, bound_columns=dict(serving.bound_arguments or {}),
            tasks=parts.tasks(load_generic_tasks, settings.data_path),
            toolbox=parts.toolbox(_tool_config(serving)), chat_format=chat_format,
            reward_model=build_reward(scoring.reward, scoring.judge, generic_rewards(scoring.reward_range)))
        _check_runtime(runtime)
        return runtime

    # -- family hooks ------------------------------------------------------------------------------------------

    def task_from_dict(self, data: Mapping[str, Any]) -> GenericTask:
        task = GenericTask.from_row(data, default_id="pinned")
        self.runtime.check_task(task, "options['task']")
        return task

    def bound_arguments(self, task: GenericTask) -> dict[str, Any]:
        return {argument: task.task_id if column == "id" else task.context[column]
                for argument, column in self.runtime.bound_columns.items()}

    def initial_messages(self, task: GenericTask, tools: list[ToolSpec]) -> list[dict[str, Any]]:
        return self.runtime.messages(task)


def _tool_config(serving: GenericServing) -> dict[str, Any]:
    """The ``mcpServers`` document of the tools ``serving`` names (the sample's when it names none), the
    ``module:function`` names checked and ``python_path`` on ``sys.path`` first."""
    for folder in serving.python_path:
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    for tool in serving.tools:
        if isinstance(tool, str):
            _check_function(tool)
    no_tools = serving.tool_servers is None and not serving.tools and not serving.qwen_agent_tools
    return tool_config(serving.tool_servers, SAMPLE_TOOLS if no_tools else serving.tools, serving.qwen_agent_tools)


def _check_runtime(runtime: GenericRuntime) -> None:
    """Every row, the tools, and (``check_reward``) each function reward on the first row."""
    for task in runtime.tasks:
        runtime.check_task(task, runtime.tasks.name)
    _check_tools(runtime)
    if runtime.settings.scoring.check_reward:
        for model in reward_models_in(runtime.reward_model):
            if isinstance(model, FunctionReward):
                _check_reward(runtime, model)


def _check_tools(runtime: GenericRuntime) -> None:
    """The servers start and list their tools, and every bound argument is an argument of a tool the model sees."""
    try:
        runtime.toolbox.start()
    except TransportError as exc:
        raise ConfigError(str(exc)) from None
    specs = runtime.tool_filter.specs(runtime.toolbox.specs)
    for argument in runtime.bound_columns:
        if not any(argument in (spec.input_schema.get("properties") or {}) for spec in specs):
            raise ConfigError(f"bound_arguments: no tool takes an argument {argument!r} (tools: "
                              f"{', '.join(spec.name for spec in specs)})")


def _check_reward(runtime: GenericRuntime, reward: FunctionReward) -> None:
    """Call ``reward`` on the first task, with no answer and with the reference as the answer: a reward that raises
    or returns a non-number fails here, at make, rather than in every episode."""
    task = runtime.tasks[0]
    name = reward.name
    context = {**task.context, "task": task.to_dict(), "response": "", "tool_results": [],
               "messages": runtime.messages(task)}
    for answer in (None, _as_text(task.ground_truth)):
        call = f"{name}({answer!r}, {_as_text(task.ground_truth)[:60]!r}, ...) on row {task.task_id!r}"
        try:
            value = runtime.toolbox.run_blocking(_within(reward.call(answer, task.ground_truth, context),
                                                         runtime.limits.reward_timeout_s))
            reward.as_reward(value)
        except ValueError as exc:
            raise ConfigError(f"{exc} for {call}") from None
        except Exception as exc:  # noqa: BLE001 - the user's reward: any failure is reported, in one line
            raise ConfigError(f"reward {name!r} raised {type(exc).__name__}: {exc} for {call}; fix it or pass "
                              "check_reward=False") from None


def _check_function(ref: str) -> None:
    try:
        resolve_function(ref)
    except ValueError as exc:
        raise ConfigError(f"tools: {exc}") from None


def _as_text(ground_truth: Any) -> str:
    """A plausible answer made of the reference: its first accepted string."""
    if isinstance(ground_truth, Mapping) and "target" in ground_truth:
        ground_truth = ground_truth["target"]
    if isinstance(ground_truth, (list, tuple)) and ground_truth:
        ground_truth = ground_truth[0]
    return "" if ground_truth is None else str(ground_truth)


async def _within(awaitable: Any, timeout_s: float | None) -> Any:
    return await asyncio.wait_for(awaitable, timeout_s)
