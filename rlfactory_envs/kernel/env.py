"""``ToolEnv``: a Gymnasium environment whose observations and actions are text and whose tools are MCP tools.

One episode, as data::

    obs, info = env.reset(seed=s)          # obs: the task prompt (the user message); info["messages"], info["tools"]
    obs, r, terminated, truncated, info = env.step(response)   # response: the model's raw text

``step`` parses the response (pluggable ``ActionParser``), runs its tool calls through the shared ``Toolbox``
and returns as ``obs`` exactly the text to append after the response (pluggable ``ChatFormat``), so that
``prompt + response_1 + obs_1 + response_2 + ...`` is the transcript in the policy's own format. The first
observation is the prompt's content; trainers render it with ``info["messages"]`` and ``info["tools"]`` through
their chat template.

Semantics:
- ``terminated``: the agent gave a final answer; the reward is scored then, and ``obs`` is ``""``. An answer the
  family cannot read (``answer_problem``) is told to the model instead and the episode goes on, except on the
  last turn.
- ``truncated``: a budget ran out (``max_turns`` responses, or ``max_episode_seconds``); ``obs`` is ``""``, tools
  of that last response are not run, and the reward is that of an episode without an answer. Never both.
- The reward of a step before the end is 0.0, unless ``process_reward`` is set: then every step, the last too, adds
  its turn's process reward (``info["process_reward"]``).
- Any string is a legal action. Malformed calls, unknown tools, bad arguments, timeouts and dead servers come
  back as observation text and ``info`` fields, never as exceptions. ``step`` after the end raises.
- ``info`` is deterministic for a seed and actions (timings only with ``record_timings=True``), and fresh on
  every call.
- A reward model that raises, or gives no score within ``reward_timeout_s`` (a judge endpoint down), scores the
  range's low end with the reason and ``info["reward_failed"] = True``: the episode ends, the batch goes on. The
  last ``info["failed_tool_calls"]`` counts the episode's calls that hit a deadline or a dead server, when there
  were any: a reward computed after them may be biased (``rlf rollout``'s summary counts such episodes).

An env holds one episode's state; what every episode of its id and settings shares (tasks, toolbox, reward, chat
format, parser, limits) is its ``Runtime``, built once per process by the class's ``build_runtime`` from its typed
``settings_model`` (``rlfactory_envs.kernel.runtime``), so making a thousand envs costs little more than making one.
A family's subclass supplies ``build_runtime`` and the episode dynamics hooks at the bottom (the prompt, what a task
dict is, the arguments it binds); see ``rlfactory_envs.search.env``. A family whose servers keep state per episode
(a phone) makes it in ``aopen_episode`` and releases it in ``aclose_episode`` (once per episode: at its end, or when
the env is reset or closed first); its reward may ask the servers for the verdict (``RewardInput.call_tool``).
``rlfactory_envs.generic.env`` fills the same hooks from data (an ``mcpServers`` config, a dataset and a reward
function), with no subclass for the user to write. What tooling needs (a baseline policy, reward hacks, a report)
is the family's declaration's, not the env's (``rlfactory_envs.kernel.families``).
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any, ClassVar

import gymnasium as gym

from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.toolbox import Toolbox, ToolSpec
from rlfactory_envs.kernel.parsers import ActionParser
from rlfactory_envs.kernel.process_reward import Turn
from rlfactory_envs.kernel.runtime import (MAX_FEEDBACK_CHARS, MissingToolWarning, Parts, Runtime, hold_runtime,
                                          runtime_for)
from rlfactory_envs.kernel.settings import EnvSettings, EpisodeLimits
from rlfactory_envs.kernel.shared import SHARED
from rlfactory_envs.kernel.tool_call import ParsedAction, ToolCall, ToolResult
from rlfactory_envs.kernel.unicode_text import without_lone_surrogates
from rlfactory_reward_models.base import Reward, RewardInput, RewardModel

if TYPE_CHECKING:
    from rlfactory_envs.kernel.chat_format import ChatFormat
    from rlfactory_envs.kernel.task_source import TaskSource

__all__ = ["EpisodeOver", "MissingToolWarning", "OpenTurn", "ToolEnv", "clip_text", "without_lone_surrogates"]


def tool_call_id(turn: int, position: int) -> str:
    """The id of the ``position``-th call of turn ``turn``: unique in the episode, the same for the same actions, and
    nine letters and digits (what Mistral's templates require; any id is valid for the OpenAI API)."""
    return f"c{turn % 10_000:04d}{position % 10_000:04d}"


def _arguments_encoder() -> Callable[[dict[str, Any]], str]:
    """``json.dumps(arguments, ensure_ascii=False)``, its C encoder made once rather than per call (``JSONEncoder``
    makes one per call: 60% of its time on small arguments); arguments read from JSON hold no cycle to check for."""
    plain = json.JSONEncoder(ensure_ascii=False)
    if c_make_encoder is None:  # pragma: no cover - a Python without the _json accelerator
        return plain.encode
    encode = c_make_encoder(None, plain.default, encode_basestring, None, ": ", ", ", False, False, True)
    return lambda arguments: "".join(encode(arguments, 0))


_ARGUMENTS_JSON = _arguments_encoder()


def assistant_message(action: str, calls: Sequence[ToolCall], ids: Sequence[str]) -> dict[str, Any]:
    """The model's turn as an OpenAI chat message: its raw text, and the calls that ran as ``tool_calls`` (arguments
    as a JSON string, as the API has them), each answered by the ``tool`` message with its ``tool_call_id``."""
    message: dict[str, Any] = {"role": "assistant", "content": action}
    if calls:
        message["tool_calls"] = [{"id": i, "type": "function", "function": {
            "name": c.name, "arguments": _ARGUMENTS_JSON(c.arguments)}} for c, i in zip(calls, ids)]
    return message


def turn_messages(action: str, calls: Sequence[ToolCall], ids: Sequence[str], results: Sequence[ToolResult],
                  feedback: str | None) -> list[dict[str, Any]]:
    """One turn as OpenAI chat messages: the assistant's (``assistant_message``), a ``tool`` message answering each
    call by its id, and the feedback as a user message."""
    messages = [assistant_message(action, calls, ids)]
    messages += [{"role": "tool", "tool_call_id": i, "name": r.name, "content": r.text} for i, r in zip(ids, results)]
    return messages + ([{"role": "user", "content": feedback}] if feedback else [])


class EpisodeOver(RuntimeError):
    """``step`` was called after ``terminated`` or ``truncated``, or before ``reset``."""


def clip_text(text: str, limit: int, what: str) -> str:
    """``text`` cut to at most ``limit`` characters, ending with a note that says how much was cut."""
    if len(text) <= limit:
        return text
    note = f"\n[... {what} cut: {len(text) - limit:,} more characters]"
    keep = max(0, limit - len(note))
    return text[:keep] + note[: limit - keep]


@dataclasses.dataclass(slots=True)
class OpenTurn:
    """A step under way (``ToolEnv.open_turn``): its number, the action as read, the ``info`` begun, and either the
    bound calls to run or, when the step ends the episode, ``(answer, terminated, truncation reason)``."""

    turn: int
    action: str
    parsed: ParsedAction
    notes: list[str]
    info: dict[str, Any]
    started: float
    calls: list[ToolCall]
    ending: tuple[str | None, bool, str | None] | None = None


class ToolEnv(gym.Env[str, str]):
    """A text, multi-turn, tool-using environment: one episode's state over a shared ``Runtime``.

    ``ToolEnv(**settings)`` (or ``gym.make(id, **settings)``) plays on the runtime of its class and settings, built
    on first use and shared with every other env of them; ``ToolEnv(runtime)`` plays on a given one. ``settings``
    are the flat names of ``settings_model`` (its groups: ``EpisodeLimits``, ``ToolServing``, ``RewardScoring``,
    and the family's own fields). ``render_mode`` and ``record_timings`` are the env's own: ``"ansi"`` renders the
    transcript, ``record_timings`` adds tool latencies and step seconds to ``info``.

    The tools the model sees are the servers' catalog filtered by ``tools_allowed``/``tools_denied``; a call to any
    other tool is answered as an unknown tool's. A call to a tool its server marks as keeping state per episode
    (``wire.EPISODE_STATE``) carries the episode id in its request's ``_meta``; ``episode_argument`` names a tool
    argument set to it as well, for a server that takes it as an argument (hidden from the model and left out of
    ``info``). ``process_reward`` (off by default) pays each turn a score of its own
    (``rlfactory_envs.kernel.process_reward``), added to that step's reward."""

    metadata = {"render_modes": ["ansi"]}
    prompt_tools: ClassVar[tuple[str, ...]] = ()
    """The tools the family's prompt tells the model to call: a ``MissingToolWarning`` names those the model
    cannot see (the servers given do not offer them, or ``tools_allowed``/``tools_denied`` hide them)."""
    calls_in_order: ClassVar[bool] = False
    """The calls of one response act on one shared state in order (a phone's screen): they run one by one."""
    settings_model: ClassVar[type[EnvSettings]] = EnvSettings
    """The settings this env takes (a family subclasses ``EnvSettings`` with its fields and defaults)."""
    family: ClassVar[Any] = None
    """The declaration of the family this env belongs to (a ``kernel.families.Family``: its ids, its tooling),
    if any."""
    tooling: ClassVar[Any] = None
    """Tooling of this class's own (a ``kernel.families.FamilyTooling``: a baseline, hacks, a report), in place of
    its family's (a user's env class with hacks of its own, say)."""

    def __init__(self, runtime: Runtime | None = None, *, render_mode: str | None = None,
                 record_timings: bool = False, **settings: Any):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode must be one of {self.metadata['render_modes']} or None")
        if runtime is None:
            self._runtime_key, runtime = runtime_for(type(self), settings)
        else:
            if settings:
                raise ConfigError(f"{type(self).__name__}: give a runtime or settings, not both "
                                  f"({', '.join(settings)})")
            self._runtime_key = hold_runtime(runtime)
        self.runtime = runtime
        self._limits = runtime.limits
        self.render_mode = render_mode
        self.record_timings = record_timings
        self.reward_range = runtime.reward_range
        self.observation_space = runtime.observation_space
        self.action_space = runtime.action_space
        self.episode_id = ""
        self.last_reward: Reward | None = None
        self._closed = False
        self.task: Any = None
        self.turn = 0
        self._done = True
        self._started_at = 0.0
        self._transcript: list[str] = []
        self._messages: list[dict[str, Any]] = []
        self._tool_results: list[dict[str, Any]] = []
        self._episode_open = False
        self._failed_calls = 0

    def sibling(self) -> ToolEnv:
        """A new env of this class on this env's runtime, with its options (no episode of its own yet)."""
        env = type(self)(self.runtime, render_mode=self.render_mode, record_timings=self.record_timings)
        env.spec = self.spec
        return env

    @classmethod
    def build_runtime(cls, settings: EnvSettings, parts: Parts) -> Runtime:
        """The runtime of ``settings``: the family's tasks, toolbox, reward and chat format, its shared parts taken
        through ``parts`` (given back for it if this raises). Called once per class and settings in a process."""
        raise NotImplementedError(f"{cls.__name__} does not say how to build its runtime")

    # -- the runtime's parts, as an episode reads them ---------------------------------------------------------

    @property
    def tasks(self) -> TaskSource[Any]:
        return self.runtime.tasks

    @property
    def toolbox(self) -> Toolbox:
        return self.runtime.toolbox

    @property
    def chat_format(self) -> ChatFormat:
        return self.runtime.chat_format

    @property
    def parser(self) -> ActionParser:
        return self.runtime.parser  # type: ignore[return-value]

    @property
    def reward_model(self) -> RewardModel:
        return self.runtime.reward_model

    @property
    def limits(self) -> EpisodeLimits:
        return self._limits

    @property
    def max_turns(self) -> int:
        return self._limits.max_turns

    @property
    def answer_tag(self) -> str:
        return self.runtime.answer_tag

    # -- Gymnasium API ---------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode. ``options={"task": {...}}`` pins a task given in full, ``{"task_id": id}`` one of
        the dataset; otherwise the task is drawn with the env's seeded RNG (same seed, same task)."""
        self._check_open()
        super().reset(seed=seed)
        self.toolbox.start()
        task = self._choose_task(options)
        if self._has_episode_hooks():
            return self.toolbox.run_blocking(self._abegin(task))
        self._end_episode_quietly()
        self.episode_id = uuid.uuid4().hex
        return self._begin(task)

    async def areset(self, *, seed: int | None = None,
                     options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """``reset`` as a coroutine: connecting the toolbox never blocks the caller's loop."""
        self._check_open()
        super().reset(seed=seed)
        task = self._choose_task(options)
        await self.toolbox.astart()
        return await self._abegin(task)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """One turn: parse ``action``, run its tool calls, return ``(obs, reward, terminated, truncated, info)``."""
        self._check_can_step(action)
        return self.toolbox.run_blocking(self.astep(action))

    async def astep(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """``step`` as a coroutine; every tool call of the response is in flight at once."""
        return await self.continue_turn(self.open_turn(action))

    def open_turn(self, action: str) -> OpenTurn:
        """The first half of a step, which runs nothing: ``action`` read, and what the step does next decided
        (end the episode, or run the bound calls). ``continue_turn`` does the rest; ``EnvBatch`` runs the calls of
        many envs' turns together and closes each with ``close_turn``."""
        self._check_can_step(action)
        turn = self.turn + 1  # committed with the turn's record: a cancelled step leaves no trace in the episode
        # (a server that keeps state, a phone, may have acted on the calls it got)
        started = time.perf_counter()
        parsed, notes = self._read_action(action)
        info: dict[str, Any] = self._base_info(turn)
        info["tool_calls"] = [{"name": call.name, "arguments": call.arguments} for call in parsed.tool_calls]
        info["parse_errors"] = list(parsed.errors)
        ending = self._ending(turn, parsed, notes)
        if ending is not None:
            if ending[2] != "max_episode_seconds":
                self._pay_process_reward(info, turn, action, parsed, calls=0, errors=0)
            return OpenTurn(turn, action, parsed, notes, info, started, [], ending)
        return OpenTurn(turn, action, parsed, notes, info, started, self._bind_arguments(parsed.tool_calls))

    async def continue_turn(self, turn: OpenTurn) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """The rest of the step ``open_turn`` began: the episode's end, or the turn's calls run and recorded."""
        if turn.ending is not None:
            answer, terminated, reason = turn.ending
            return await self._finish(turn.turn, turn.action, answer, turn.info,
                                      {"role": "assistant", "content": turn.action}, terminated=terminated,
                                      reason=reason)
        return self.close_turn(turn, await self.run_tool_calls(turn.calls) if turn.calls else [])

    def steps_in_halves(self) -> bool:
        """Whether ``astep`` is this class's: ``open_turn``, the calls, ``close_turn`` (not replaced by a subclass or
        on the instance), so that ``EnvBatch`` may step the env through the halves."""
        return type(self).astep is ToolEnv.astep and "astep" not in self.__dict__

    def runs_calls_together(self, calls: Sequence[ToolCall]) -> bool:
        """Whether ``run_tool_calls`` runs ``calls`` all at once through the tool filter (its default), so that
        another caller may start them so (``EnvBatch`` merges them with other envs' calls, no task per env)."""
        default = type(self).run_tool_calls is ToolEnv.run_tool_calls and "run_tool_calls" not in self.__dict__
        return default and (len(calls) <= 1 or not self.calls_in_order)

    def _read_action(self, action: str) -> tuple[ParsedAction, list[str]]:
        """``action`` parsed (its first ``max_action_chars`` only), and the notes for the model about it."""
        limit = self._limits.max_action_chars
        if len(action) <= limit:
            return self.parser.parse(action), []
        note = f"Your response was {len(action):,} characters long; only the first {limit:,} were read."
        return self.parser.parse(action[:limit]), [note]

    def _ending(self, turn: int, parsed: ParsedAction, notes: list[str]) -> tuple[str | None, bool, str | None] | None:
        """``(answer, terminated, truncation reason)`` when this turn ends the episode (an answer, the turn limit,
        the episode's wall clock); ``None`` otherwise, with an answer's problem added to ``notes``."""
        max_turns = self.max_turns
        problem = self.answer_problem(parsed.answer) if parsed.answer is not None else None
        if parsed.answer is not None and (problem is None or turn >= max_turns):
            return parsed.answer, True, None
        if problem is not None:
            notes.append(problem)
        if turn >= max_turns:
            return None, False, "max_turns"
        budget = self._limits.max_episode_seconds
        if budget is not None and time.monotonic() - self._started_at > budget:
            return None, False, "max_episode_seconds"
        return None

    def close_turn(self, turn: OpenTurn, results: list[ToolResult]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """The second half of a step whose calls ran: ``results`` (one per call, in order) recorded, and the
        observation the model reads next."""
        action, parsed, info = turn.action, turn.parsed, turn.info
        results = [self._clip_result(r) for r in results]
        feedback = self._feedback(turn.notes + parsed.errors, parsed)
        ids = [tool_call_id(turn.turn, position) for position in range(len(results))]
        obs = clip_text(self.chat_format.observation(action, results, feedback, call_ids=ids),
                        self.runtime.max_observation_chars, "observation")
        new_messages = turn_messages(action, parsed.tool_calls, ids, results, feedback)
        self._record_turn(turn.turn, action, obs, new_messages, turn.calls, results, info)
        if self.record_timings:
            info["tool_latency_s"] = [r.latency_s for r in results]
            info["step_seconds"] = time.perf_counter() - turn.started
        if self.runtime.process_reward is None:
            return obs, 0.0, False, False, info
        paid = self._pay_process_reward(info, turn.turn, action, parsed, calls=len(results),
                                        errors=sum(r.is_error for r in results))
        return obs, paid, False, False, info

    def _record_turn(self, turn: int, action: str, obs: str, new_messages: list[dict[str, Any]],
                     calls: list[ToolCall], results: list[ToolResult], info: dict[str, Any]) -> None:
        """The turn's messages and tool results (of ``calls`` as they reached the servers), in the episode and in
        ``info``."""
        tool_results = [{"name": r.name, "arguments": self._shown_arguments(c.arguments), "text": r.text,
                         "is_error": r.is_error, "server": r.server} for c, r in zip(calls, results)]
        self._record(turn, action, obs, new_messages)
        self._tool_results += tool_results  # the reward gets copies; these dicts are the step's own info
        self._failed_calls += sum(r.failure is not None for r in results)
        info["messages"] = [m.copy() for m in new_messages]
        info["tool_results"] = tool_results

    def _feedback(self, lines: list[str], parsed: ParsedAction) -> str | None:
        """What the env tells the model beside the tools' results: ``lines``, or how to act when the response held
        neither a call nor an answer; ``None`` for nothing."""
        if parsed.is_empty and not parsed.errors:
            lines = [*lines, self.invalid_action_feedback()]
        return clip_text("\n".join(lines), MAX_FEEDBACK_CHARS, "feedback") if lines else None

    async def atruncate(self, reason: str, action: str | None = None) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """End the running episode as truncated by a budget the env cannot see (a trainer's token budget).

        ``action``, when given, is the model's last response as the trainer kept it (cut): it is recorded but
        neither parsed nor run. The episode is scored as one without an answer and ``info["truncation_reason"]``
        is ``reason``; the return value is that of a truncating ``step``."""
        self._check_can_step("" if action is None else action)
        turn = self.turn + (0 if action is None else 1)
        info: dict[str, Any] = self._base_info(turn)
        info["tool_calls"], info["parse_errors"] = [], []
        assistant = None if action is None else {"role": "assistant", "content": action}
        return await self._finish(turn, action, None, info, assistant, terminated=False, reason=reason)

    def render(self) -> str | None:
        """With ``render_mode="ansi"``: the transcript so far (prompt, responses and observations)."""
        return self.transcript if self.render_mode == "ansi" else None

    def close(self) -> None:
        """End a running episode (``aclose_episode``) and give back this env's hold on its runtime (the last env to
        close a runtime closes it: its toolbox's servers stop unless another runtime holds them). Idempotent."""
        if not self._closed:
            self._closed = True
            try:
                self._end_episode_quietly()
            finally:
                SHARED.release(self._runtime_key)
        super().close()

    async def aclose(self) -> None:
        """``close`` from a coroutine: a running episode is released (``aclose_episode``) on the toolbox's loop,
        so the caller's loop is never blocked on it (a server closing one session while it serves others).
        Idempotent."""
        if not self._closed and self._episode_open and self._has_episode_hooks():
            try:
                await self.toolbox.run_async(self._aend_episode())
            except RuntimeError:  # the toolbox is closed: nothing left to release through it
                self._episode_open = False
        self.close()

    def _end_episode_quietly(self) -> None:
        """``_aend_episode`` from blocking code (closing the env, resetting mid-episode)."""
        if self._episode_open and self._has_episode_hooks():
            try:
                self.toolbox.run_blocking(self._aend_episode())
            except Exception:  # noqa: BLE001 - the toolbox itself is gone: nothing left to release through it
                pass
        self._episode_open = False

    def abort(self, reason: str) -> dict[str, Any]:
        """End the episode after an internal failure (so a batch goes on); the ``info`` of that last step.
        ``EnvBatch`` releases what ``aopen_episode`` made right after; otherwise the env's next reset or close
        does."""
        self._done = True
        self._messages.append({"role": "system", "content": f"episode aborted: {reason}"})
        info = self._base_info(self.turn)
        info["error"] = reason
        return info

    # -- episode bookkeeping ---------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """True before the first reset and after the episode ended."""
        return self._done

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The whole episode as chat messages (a copy)."""
        return [dict(m) for m in self._messages]

    @property
    def transcript(self) -> str:
        """``prompt + response_1 + obs_1 + ...``: the whole episode as text."""
        return "".join(self._transcript)

    def _choose_task(self, options: dict[str, Any] | None) -> Any:
        options = options or {}
        if "task" in options:
            if not isinstance(options["task"], Mapping):
                raise ValueError("options['task'] must be a dict describing the task")
            return self.task_from_dict(options["task"])
        if "task_id" in options:
            return self.tasks.by_id(str(options["task_id"]))
        return self.tasks[int(self.np_random.integers(len(self.tasks)))]

    @property
    def tool_specs(self) -> list[ToolSpec]:
        """The tools as the model sees them for the current task: the toolbox's catalog, filtered by
        ``tools_allowed``/``tools_denied``, without the arguments the env binds (``bound_arguments``). What
        ``info["tools"]`` holds and what a policy should send."""
        return self._specs_for(self.task)

    def _specs_for(self, task: Any) -> list[ToolSpec]:
        hidden = set(self.bound_arguments(task)) if task is not None else set()
        if self.runtime.episode_argument:
            hidden.add(self.runtime.episode_argument)
        return list(self.runtime.model_specs(frozenset(hidden)))

    def _bind_arguments(self, calls: list[ToolCall], task: Any = None) -> list[ToolCall]:
        """``calls`` as they reach the servers: the bound arguments of ``task`` (default: the current one) and the
        episode argument set where the tool's schema declares them; a call to a tool that keeps state per episode
        (its ``_meta`` says so), or given the episode argument, carries the episode id (sent in the request's
        ``_meta``) and has it as its affinity (a replicated server sends it to the replica holding that state)."""
        if not calls:
            return []
        episode_argument = self.runtime.episode_argument
        bound = self.bound_arguments(task if task is not None else self.task) if self._binds_arguments() else {}
        if episode_argument:
            bound[episode_argument] = self.episode_id
        spec_of = self.toolbox.spec
        out = []
        for call in calls:
            spec = spec_of(call.name)
            declared = (spec.input_schema.get("properties") or {}) if spec is not None and bound else {}
            own = {key: value for key, value in bound.items() if key in declared} if declared else {}
            if (spec is None or not spec.episode_state) and episode_argument not in own:
                out.append(ToolCall(call.name, {**call.arguments, **own}, call.call_id, call.affinity) if own else call)
                continue
            out.append(ToolCall(call.name, {**call.arguments, **own}, call.call_id, self.episode_id, self.episode_id))
        return out

    def _binds_arguments(self) -> bool:
        return type(self).bound_arguments is not ToolEnv.bound_arguments

    def _shown_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """A call's arguments as ``info`` records them: without the episode id, which would make ``info`` differ
        between two runs of the same seed and actions."""
        episode_argument = self.runtime.episode_argument
        if episode_argument in arguments:
            return {k: v for k, v in arguments.items() if k != episode_argument}
        return arguments

    def _has_episode_hooks(self) -> bool:
        cls = type(self)
        return cls.aopen_episode is not ToolEnv.aopen_episode or cls.aclose_episode is not ToolEnv.aclose_episode

    async def _abegin(self, task: Any) -> tuple[str, dict[str, Any]]:
        await self._aend_episode()
        self.episode_id = uuid.uuid4().hex
        self._episode_open = True
        try:
            await self.aopen_episode(task)
        except BaseException:
            self._episode_open = False
            raise
        return self._begin(task)

    async def _aend_episode(self) -> None:
        """``aclose_episode`` once per episode; a failure to release is not the episode's: it never loses the
        trajectory or fails a reset, and servers bound what is left behind."""
        if self._episode_open:
            self._episode_open = False
            try:
                await self.aclose_episode()
            except Exception:  # noqa: BLE001 - best effort, see the docstring
                pass

    async def call_episode_tool(self, name: str, arguments: Mapping[str, Any], task: Any = None) -> ToolResult:
        """Call the tool ``name`` as the env (not the model) does: any tool of the servers, those hidden from the
        model included, with the episode argument and ``task``'s bound arguments (default: the current task's)
        set. For the episode hooks and for rewards that ask a server for their verdict
        (``RewardInput.call_tool``)."""
        return (await self.toolbox.acall_many(self._bind_arguments([ToolCall(name, dict(arguments))], task)))[0]

    def _begin(self, task: Any) -> tuple[str, dict[str, Any]]:
        specs = self._specs_for(task)
        self.runtime.check_prompt_tools(self.prompt_tools, {spec.name for spec in specs}, type(self).__name__)
        tools = [spec.openai_schema() for spec in specs]
        messages = self.chat_format.prompt_messages(self.initial_messages(task, specs), tools)
        prompt = messages[-1]["content"]
        if len(prompt) > self.limits.max_prompt_chars:
            raise ConfigError(f"the task prompt has {len(prompt):,} characters, over max_prompt_chars="
                              f"{self.limits.max_prompt_chars:,}")
        self.task, self.turn, self._done = task, 0, False
        self.last_reward = None
        self._started_at = time.monotonic()
        self._messages = [dict(m) for m in messages]
        self._tool_results = []
        self._failed_calls = 0
        self._transcript = [prompt]
        info = self._base_info(0)
        info["task"] = self.task_to_dict(task)
        info["messages"] = [dict(m) for m in messages]
        info["tools"] = tools if self.chat_format.shows_tool_schemas else []
        return prompt, info

    def _base_info(self, turn: int) -> dict[str, Any]:
        return {"dataset": self.runtime.tasks.name, "task_id": getattr(self.task, "task_id", None), "turn": turn}

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the env is closed; make a new one")

    def _check_can_step(self, action: Any) -> None:
        if self._done:
            raise EpisodeOver("the episode is over (or was never started): call reset() before step()")
        if not isinstance(action, str):
            raise TypeError(f"an action is the model's response text (str), got {type(action).__name__}")

    def _clip_result(self, result: ToolResult) -> ToolResult:
        text = without_lone_surrogates(result.text)
        limit = self._limits.max_tool_response_chars
        if len(text) <= limit and text is result.text:
            return result
        text = clip_text(text, limit, "tool response")
        return ToolResult(result.name, text, result.is_error, result.latency_s, result.server, result.call_id,
                          result.failure)

    def _record(self, turn: int, action: str, obs: str, new_messages: list[dict[str, Any]]) -> None:
        self.turn = turn
        self._transcript += [action, obs]
        self._messages += new_messages

    async def _finish(self, turn: int, action: str | None, answer: str | None, info: dict[str, Any],
                      assistant: dict[str, Any] | None, *, terminated: bool,
                      reason: str | None) -> tuple[str, float, bool, bool, dict[str, Any]]:
        reward = await self._score(answer, action or "", assistant)
        self.last_reward = reward
        self._done = True
        await self._aend_episode()
        if assistant is not None:
            self._record(turn, action or "", "", [assistant])
        info["messages"] = [] if assistant is None else [dict(assistant)]
        info["tool_results"] = []
        info["answer"] = answer
        info["reward_parts"] = dict(reward.parts)
        info["reward_reason"] = reward.reason
        if self._failed_calls:  # the episode saw a deadline or a dead server: its reward may be biased
            info["failed_tool_calls"] = self._failed_calls
        if reason is not None:
            info["truncation_reason"] = reason
        for key, value in reward.info.items():
            info.setdefault(key, value)
        return "", float(reward.value) + info.get("process_reward", 0.0), terminated, not terminated, info

    async def _score(self, answer: str | None, response: str, last: dict[str, Any] | None) -> Reward:
        """The reward of the episode ending with the assistant message ``last`` (not yet recorded)."""
        messages = self.messages + ([dict(last)] if last is not None else [])
        item = RewardInput(task=self.task, answer=answer, response=response, messages=messages,
                           tool_results=[dict(r) for r in self._tool_results], call_tool=self.call_episode_tool)
        return await self.runtime.score(item)

    def _pay_process_reward(self, info: dict[str, Any], turn: int, action: str, parsed: ParsedAction, *,
                            calls: int, errors: int) -> float:
        """The turn's process reward (0.0 when off), recorded in ``info``."""
        process_reward = self.runtime.process_reward
        if process_reward is None:
            return 0.0
        answered = parsed.answer is not None and bool(parsed.answer.strip())
        record = Turn(turn, action, calls, errors, len(parsed.errors), answered)
        paid, scores, reason = process_reward.score(record)
        info["process_reward"], info["process_reward_parts"] = paid, scores
        if reason is not None:
            info["process_reward_reason"] = reason
        return paid

    # -- family hooks ----------------------------------------------------------------------------------------

    async def aopen_episode(self, task: Any) -> None:
        """Prepare the servers for a new episode of ``task`` before its prompt is built (``episode_id`` is already
        the new one): the Android family creates the episode's phone here. Default: nothing. An exception fails
        the reset."""

    async def aclose_episode(self) -> None:
        """Release what ``aopen_episode`` made: called once per episode, after its reward is scored, or when the
        env is reset or closed before the episode ended. Default: nothing."""

    async def run_tool_calls(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        """Run one response's (bound) calls; results in order. Default: through the tool filter, all in flight at
        once, or one by one for a family whose calls act on one shared state in order (``calls_in_order``)."""
        if not self.calls_in_order or len(calls) <= 1:
            return await self.runtime.tool_filter.call(self.toolbox, calls)
        results: list[ToolResult] = []
        for call in calls:
            results += await self.runtime.tool_filter.call(self.toolbox, [call])
        return results

    def task_from_dict(self, data: Mapping[str, Any]) -> Any:
        """Build a task from ``options["task"]``; ``ValueError`` says what is missing."""
        raise NotImplementedError

    def bound_arguments(self, task: Any) -> dict[str, Any]:
        """Tool arguments the env, not the model, fills in for ``task`` (the SQL family binds ``db_id``, so a
        model reaches only its own task's database). They are left out of the schemas the model sees
        (``tool_specs``, ``info["tools"]``) and set on every call of a tool whose schema declares them, replacing
        whatever the model wrote. Default: none."""
        return {}

    def task_to_dict(self, task: Any) -> dict[str, Any]:
        """A fresh JSON-ready dict describing ``task`` (for ``info["task"]`` and trajectory files)."""
        return task.to_dict()

    def initial_messages(self, task: Any, tools: list[ToolSpec]) -> list[dict[str, Any]]:
        """The chat messages that open an episode; the last one is the user prompt (the first observation)."""
        raise NotImplementedError

    def answer_problem(self, answer: str) -> str | None:
        """Why a final answer cannot be read (a travel plan that does not parse), or ``None``. A readable answer
        ends the episode; an unreadable one is told to the model as feedback and the episode goes on, except on
        the last turn, where it ends the episode and is scored as it is. Default: every answer is readable."""
        return None

    def invalid_action_feedback(self) -> str:
        """What the model is told when a response neither calls a tool nor answers: the chat format's words,
        naming the tools the model sees."""
        return self.runtime.invalid_action_feedback()
