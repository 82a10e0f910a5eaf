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
  (``qwen3``, ``search_r1``), ``answer_tag``: the final answer is the text inside ``<answer>...</answer>``.
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
import sys
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rlfactory_envs.generic.family import FAMILY, SAMPLE_TOOLS
from rlfactory_envs.generic.task import GenericTask
from rlfactory_envs.generic.tasks import load_generic_tasks
from rlfactory_envs.generic.tool_sources import ToolServers, tool_config
from rlfactory_envs.kernel.chat_format import ChatFormat, make_chat_format
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.session import TransportError
from rlfactory_envs.kernel.mcp.toolbox import ToolSpec
from rlfactory_envs.kernel.task_source import TaskSource, file_version, shared_tasks
from rlfactory_reward_models.answer_match import REWARDS
from rlfactory_reward_models.function_reward import FunctionReward
from rlfactory_envs.kernel.reward_setting import (FamilyRewards, JudgeSetting, RewardSetting, build_reward,
                                             reward_models_in)
from rlfactory_tool_servers.functions.server import resolve_function

DEFAULT_SYSTEM_PROMPT = ("Answer the user's question. Call the tools when they help. When you are ready, give the "
                         "final answer inside <{tag}> and </{tag}>, with no explanation, for example "
                         "<{tag}> 42 </{tag}>.")

_CHECKED_REWARDS: set[tuple[Any, ...]] = set()  # rewards already probed in this process, per dataset version
_CHECKED_TASKS: weakref.WeakKeyDictionary[TaskSource[GenericTask], set[tuple[Any, ...]]] = weakref.WeakKeyDictionary()
"""Per shared task source, the (template, bound columns) its every row was checked against: a pool of a thousand
envs over one dataset checks it once."""


def generic_rewards(reward_range: Sequence[float], timeout_s: float) -> FamilyRewards:
    """A user's env's rewards: the built-in answer matches by name and the user's functions, in ``reward_range``
    (exact match by default); a judge reads the question and the ground truth."""
    default = FunctionReward(REWARDS["exact_match"], "exact_match", tuple(reward_range), timeout_s)
    return FamilyRewards(default=default, named={}, functions=REWARDS, judge_template="qa",
                         function_range=default.reward_range, function_timeout_s=timeout_s)


class McpEnv(ToolEnv):
    """A user's env from data: see the module docstring for every setting."""

    def __init__(
        self,
        *,
        tool_servers: ToolServers | None = None,
        tools: Sequence[Callable[..., Any] | str] = (),
        qwen_agent_tools: Sequence[str | Mapping[str, Any]] = (),
        data_path: str | None = None,
        reward: RewardSetting = "exact_match",
        judge: JudgeSetting = None,
        reward_range: Sequence[float] = (0.0, 1.0),
        reward_timeout_s: float = 60.0,
        check_reward: bool = True,
        system_prompt: str | None = None,
        prompt_template: str = "{question}",
        chat_format: str | ChatFormat = "qwen3",
        enable_thinking: bool = True,
        bound_arguments: Mapping[str, str] | None = None,
        python_path: Sequence[str] = (),
        max_turns: int = 4,
        **env_kwargs: Any,
    ):
        for folder in python_path:
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
        for tool in tools:
            if isinstance(tool, str):
                _check_function(tool)
        no_tools = tool_servers is None and not tools and not qwen_agent_tools
        config = tool_config(tool_servers, SAMPLE_TOOLS if no_tools else tools, qwen_agent_tools)
        tasks: TaskSource[GenericTask] = shared_tasks(load_generic_tasks, FAMILY.setting("data_path", data_path))
        self.system_prompt = system_prompt
        self.prompt_template = prompt_template
        self.bound_columns = dict(bound_arguments or {})
        checked = _CHECKED_TASKS.setdefault(tasks, set())
        settings = (prompt_template, tuple(sorted(self.bound_columns.items())))
        if settings not in checked:
            for task in tasks:
                self._check_task(task, tasks.name)
            checked.add(settings)
        if isinstance(chat_format, str):
            chat_format = make_chat_format(chat_format, enable_thinking=enable_thinking)
        super().__init__(tasks=tasks, tool_servers=config, chat_format=chat_format,
                         reward_model=build_reward(reward, judge, generic_rewards(reward_range, reward_timeout_s)),
                         max_turns=max_turns, **env_kwargs)
        try:
            self._check_tools()
            if check_reward:
                for model in reward_models_in(self.reward_model):
                    if isinstance(model, FunctionReward):
                        self._check_reward(model)
        except BaseException:
            self.close()
            raise

    # -- checks at make ----------------------------------------------------------------------------------------

    def _check_task(self, task: GenericTask, where: str) -> None:
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

    def _check_tools(self) -> None:
        try:
            self.toolbox.start()
        except TransportError as exc:
            raise ConfigError(str(exc)) from None
        specs = self.tool_filter.specs(self.toolbox.specs)
        for argument in self.bound_columns:
            if not any(argument in (spec.input_schema.get("properties") or {}) for spec in specs):
                raise ConfigError(f"bound_arguments: no tool takes an argument {argument!r} (tools: "
                                  f"{', '.join(spec.name for spec in specs)})")

    def _check_reward(self, reward: FunctionReward) -> None:
        """Call ``reward`` on the first task, with no answer and with the reference as the answer: a reward that
        raises or returns a non-number fails here, at make, rather than in every episode."""
        task = self.tasks[0]
        name = reward.name
        key = (name, file_version(self.tasks.path), reward.reward_range)
        if key in _CHECKED_REWARDS:
            return
        context = {**task.context, "task": task.to_dict(), "response": "", "tool_results": [],
                   "messages": self.initial_messages(task, [])}
        for answer in (None, _as_text(task.ground_truth)):
            call = f"{name}({answer!r}, {_as_text(task.ground_truth)[:60]!r}, ...) on row {task.task_id!r}"
            try:
                value = self.toolbox.run_blocking(_within(reward.call(answer, task.ground_truth, context),
                                                          reward.timeout_s))
                reward.as_reward(value)
            except ValueError as exc:
                raise ConfigError(f"{exc} for {call}") from None
            except Exception as exc:  # noqa: BLE001 - the user's reward: any failure is reported, in one line
                raise ConfigError(f"reward {name!r} raised {type(exc).__name__}: {exc} for {call}; fix it or pass "
                                  "check_reward=False") from None
        _CHECKED_REWARDS.add(key)

    # -- family hooks ------------------------------------------------------------------------------------------

    def task_from_dict(self, data: Mapping[str, Any]) -> GenericTask:
        task = GenericTask.from_row(data, default_id="pinned")
        self._check_task(task, "options['task']")
        return task

    def bound_arguments(self, task: GenericTask) -> dict[str, Any]:
        return {argument: task.task_id if column == "id" else task.context[column]
                for argument, column in self.bound_columns.items()}

    def ground_truth(self, task: GenericTask) -> Any:
        return task.ground_truth

    def reference_answer(self, task: GenericTask) -> str | None:
        """The row's ground truth as answer text: itself, or its first accepted answer (a list, Search-R1's
        ``{"target": [...]}``); ``None`` for a row without one or whose ground truth is structured otherwise."""
        truth = task.ground_truth
        if isinstance(truth, Mapping):
            truth = truth.get("target")
        if isinstance(truth, (list, tuple)):
            truth = truth[0] if truth else None
        if truth is None or isinstance(truth, (Mapping, list, tuple)) or not str(truth).strip():
            return None
        return str(truth)

    def initial_messages(self, task: GenericTask, tools: list[ToolSpec]) -> list[dict[str, Any]]:
        if task.question is not None:
            messages = [{"role": "user",
                         "content": self.prompt_template.format(question=task.question, **task.context)}]
            system = self.system_prompt or DEFAULT_SYSTEM_PROMPT.format(tag=self.answer_tag)
        elif isinstance(task.prompt, str):
            messages, system = [{"role": "user", "content": task.prompt}], self.system_prompt
        else:
            messages, system = [dict(m) for m in task.prompt or ()], self.system_prompt
        if system is not None:
            messages = [{"role": "system", "content": system}] + [m for m in messages if m["role"] != "system"]
        return messages


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


async def _within(awaitable: Any, timeout_s: float) -> Any:
    return await asyncio.wait_for(awaitable, timeout_s)
