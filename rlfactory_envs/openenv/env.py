"""``rlf/OpenEnv-v0``: a running OpenEnv server played as an rlf env.

    env = make_env("rlf/OpenEnv-v0", base_url="http://127.0.0.1:8000")   # or RLF_OPENENV_URL
    env = make_env("rlf/OpenEnv-v0")   # no server given: the embedded sample (``SAMPLE_ENV`` behind our own door)

Each env holds one session of the server (its WebSocket, ``session``), opened on the first reset. The model's raw
response is the action: the text goes into the server's action field (``action_field``, by default the one
required string field of the action schema the server's ``/schema`` gives). The server's observation becomes text:
its ``observation_field`` (by default the first string field of the observation schema), or the observation as
JSON; after a step it is written as the chat format's user turn (``ChatFormat.observation``), so the transcript
reads as every rlf env's. A server whose observation says ``truncated`` (an rlf env behind ``rlf serve env``) ends
the episode truncated, with its ``truncation_reason``.

Tasks are seeds: ``num_tasks`` tasks, task ``i`` resets the server with ``seed=i`` (and ``reset_kwargs``), so
``reset(seed=s)`` draws the same task, and ``options={"task": {"seed": 7}}`` pins one. The server's ``done`` ends
the episode as terminated; ``max_turns`` truncates it. Rewards keep rlf's semantics: 0.0 before the end, then the
episode's return (the sum of the server's step rewards); each step's own reward is in ``info["server_reward"]``.
A frame the server refuses (``VALIDATION_ERROR``, ``EXECUTION_ERROR``) is told to the model as the observation;
a server that cannot be reached raises ``ConnectionError`` (a failure outside the model).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import pydantic

from rlfactory_envs.kernel.chat_format import Qwen3ChatFormat
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.config import McpConfig
from rlfactory_envs.kernel.mcp.toolbox import Toolbox, ToolSpec
from rlfactory_envs.kernel.runtime import Parts, Runtime
from rlfactory_envs.kernel.settings import EnvSettings, EpisodeLimits
from rlfactory_envs.kernel.task_source import TaskSource
from rlfactory_envs.openenv.session import OpenEnvSession, ServerRefused
from rlfactory_envs.service.background import BackgroundDoor
from rlfactory_reward_models.base import Reward, RewardInput, RewardModelBase

NOT_OBSERVED = ("done", "reward", "metadata")
SAMPLE_ENV = "rlf/MCP-v0"
"""What plays when no ``base_url`` is given: the generic env's embedded arithmetic sample, served over OpenEnv by
``rlf serve env``'s door on a thread of this process (stopped when the last env playing it closes)."""


class OpenEnvSettings(EnvSettings):
    limits: EpisodeLimits = EpisodeLimits(max_turns=8)
    base_url: str = ""
    """The OpenEnv server (``http://HOST:PORT``; a token as ``http://user:TOKEN@HOST:PORT``)."""
    action_field: str | None = None
    observation_field: str | None = None
    num_tasks: int = pydantic.Field(1000, ge=1)
    reset_kwargs: dict[str, Any] = {}
    """Sent with every reset beside the seed (a server's own reset parameters)."""
    reward_range: tuple[float, float] = (-math.inf, math.inf)
    connect_timeout_s: float = 10.0
    message_timeout_s: float = 60.0


@dataclass(frozen=True)
class SeedTask:
    task_id: str
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "seed": self.seed}


class ServerReward(RewardModelBase):
    """The episode's return as the server paid it (``OpenEnvEnv`` scores, this only states the range)."""

    def __init__(self, reward_range: tuple[float, float]):
        self.reward_range = reward_range

    async def score(self, item: RewardInput) -> Reward:
        return Reward(0.0, {}, "rewards come from the OpenEnv server")


@dataclass(eq=False)
class OpenEnvRuntime(Runtime):
    base_url: str = ""
    action_field: str = ""
    observation_field: str | None = None


class OpenEnvEnv(ToolEnv):
    """An OpenEnv server's session as an rlf env (see the module docstring). Its toolbox has no servers: it is the
    loop every session's WebSocket lives on, whatever loop or thread the env is called from."""

    settings_model = OpenEnvSettings

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        settings = self.runtime.settings
        self._session = OpenEnvSession(self.runtime.base_url, settings.connect_timeout_s, settings.message_timeout_s)
        self._opening = ""
        self._return = 0.0

    @classmethod
    def build_runtime(cls, settings: OpenEnvSettings, parts: Parts) -> OpenEnvRuntime:
        if not settings.base_url:  # the embedded sample: an rlf env behind our own door, on a thread of this process
            sample = parts.part(("openenv-sample", SAMPLE_ENV), lambda: BackgroundDoor(SAMPLE_ENV, env_kwargs={"max_turns": 1000}),
                                close_when_idle=True)
            settings = settings.model_copy(update={"base_url": sample.url})
        action_field, observation_field = read_schema(settings)
        tasks = TaskSource([SeedTask(f"seed-{i}", i) for i in range(settings.num_tasks)], settings.base_url)
        no_tools = parts.part(("toolbox", "none"), lambda: Toolbox(McpConfig(servers={})), close_when_idle=True)
        return OpenEnvRuntime(settings=settings, tasks=tasks, toolbox=no_tools,
                              reward_model=ServerReward(settings.reward_range),
                              chat_format=Qwen3ChatFormat(settings.enable_thinking), parts=parts,
                              base_url=settings.base_url, action_field=action_field,
                              observation_field=observation_field)

    # -- the episode -----------------------------------------------------------------------------------------

    async def aopen_episode(self, task: SeedTask) -> None:
        data = {**self.runtime.settings.reset_kwargs, "seed": task.seed}
        reply = await self.toolbox.run_async(self._session.request("reset", data))
        self._opening, self._return = self._text(reply.get("observation")), 0.0

    def initial_messages(self, task: SeedTask, tools: list[ToolSpec]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": self._opening}]

    async def astep(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Send the response as the server's action; the server's observation as the text to append."""
        self._check_can_step(action)
        turn, limit = self.turn + 1, self.limits.max_action_chars
        payload = {self.runtime.action_field: action[:limit]}
        try:
            reply = await self.toolbox.run_async(self._session.request("step", payload))
            observation = reply.get("observation")
            text, reward, done = self._text(observation), _number(reply.get("reward")), bool(reply.get("done"))
            cut = done and isinstance(observation, Mapping) and observation.get("truncated") is True
        except ServerRefused as exc:
            text, reward, done, cut = f"The environment refused the action: {exc}", 0.0, False, False
        self._return += reward
        info = {**self._base_info(turn), "tool_calls": [], "parse_errors": [], "tool_results": [],
                "server_reward": reward}
        assistant = {"role": "assistant", "content": action}
        if done or turn >= self.max_turns:
            reason = observation.get("truncation_reason") if cut else "max_turns"
            return self._end(turn, action, assistant, info, terminated=done and not cut, reason=reason)
        user = {"role": "user", "content": text}
        obs = self.chat_format.observation(action, [], text)
        self._record(turn, action, obs, [assistant, user])
        info["messages"] = [assistant, dict(user)]
        return obs, 0.0, False, False, info

    def _end(self, turn: int, action: str, assistant: dict[str, Any], info: dict[str, Any], *,
             terminated: bool, reason: str | None) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._done = True
        self.last_reward = Reward(self._return, {"server_return": self._return}, None)
        self._record(turn, action, "", [assistant])
        info.update(messages=[dict(assistant)], answer=None, reward_parts={"server_return": self._return},
                    reward_reason=None)
        if not terminated:
            info["truncation_reason"] = reason or "server"
        self._episode_open = False
        return "", self._return, terminated, not terminated, info

    def _text(self, observation: Any) -> str:
        field = self.runtime.observation_field
        if isinstance(observation, Mapping) and field and isinstance(observation.get(field), str):
            return observation[field]
        shown = {k: v for k, v in observation.items() if k not in NOT_OBSERVED} \
            if isinstance(observation, Mapping) else observation
        return json.dumps(shown, ensure_ascii=False, default=str)

    def close(self) -> None:
        if not self._closed and self._session is not None and self.toolbox.started:
            try:
                self.toolbox.run_blocking(self._session.close())
            except RuntimeError:  # the toolbox loop is gone: so is the connection
                pass
        super().close()

    # -- tasks -----------------------------------------------------------------------------------------------

    def task_from_dict(self, data: Mapping[str, Any]) -> SeedTask:
        seed = data.get("seed")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError("an OpenEnv task is {\"seed\": N}, N a whole number >= 0")
        return SeedTask(str(data.get("task_id", f"seed-{seed}")), seed)


def read_schema(settings: OpenEnvSettings) -> tuple[str, str | None]:
    """The action field and observation field: the settings', else read from the server's ``/schema``."""
    try:
        reply = httpx.get(settings.base_url.rstrip("/") + "/schema", timeout=settings.connect_timeout_s)
        reply.raise_for_status()
        schema = reply.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise ConfigError(f"rlf/OpenEnv-v0: cannot read {settings.base_url}/schema ({exc}); is an OpenEnv server "
                          "running there?") from None
    action = schema.get("action") or {}
    properties = action.get("properties") or {}
    strings = [name for name in action.get("required") or () if (properties.get(name) or {}).get("type") == "string"]
    action_field = settings.action_field or (strings[0] if len(strings) == 1 else None)
    if action_field is None:
        raise ConfigError(f"rlf/OpenEnv-v0: the server's action has no single required string field "
                          f"({', '.join(properties) or 'none'}); name the one the model's text goes in with "
                          "action_field=...")
    observed = (schema.get("observation") or {}).get("properties") or {}
    texts = [name for name, field in observed.items() if name not in NOT_OBSERVED and field.get("type") == "string"]
    return action_field, settings.observation_field or (texts[0] if texts else None)


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0
