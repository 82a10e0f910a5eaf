"""``rlf/Travel-v0``: TravelPlanner as a multi-turn environment. The agent gathers information with the sandbox's
tools (the ``travel`` MCP server: flights, distances, accommodations, restaurants, attractions, cities, a
notebook) and submits the plan, scored by the benchmark's official commonsense and hard constraints
(``rlfactory_reward_models.travel``).

Data, by precedence: ``data_path=`` / ``database_dir=`` / ``flights_path=``, then the ``RLF_TRAVEL_DATA`` /
``RLF_TRAVEL_DATABASE`` / ``RLF_TRAVEL_FLIGHTS`` environment variables, then the embedded synthetic sample.
``data_path``: TravelPlanner's queries (the released validation/test files, JSONL/JSON/CSV/parquet, or
``std_travelplanner.jsonl``); ``database_dir``: its ``database/`` folder; ``flights_path``: the full
``clean_Flights_2022.csv`` or a reference-information JSONL (``train_ref_info.jsonl``), default
``database_dir/flights/clean_Flights_2022.csv`` when present. ``options={"task": query_dict}`` pins a query given
in full.

The answer is the plan, ``<answer>[{"days": 1, "current_city": ..., ...}, ...]</answer>``, as JSON, a Python
literal or repairable JSON. A plan that cannot be read is told to the model and the episode goes on (on the last
turn it ends and scores 0 with the reason). ``info["travel_eval"]`` holds the whole verdict, keyed by the official
constraint names; ``reward`` picks the scalar: ``final_pass``, ``pass_rate``, another part of the verdict
(``delivered``, ``commonsense_pass``, ``hard_pass``), or weights over them and the other rewards every family takes
(``rlfactory_envs.kernel.reward_setting``), e.g. ``{"final_pass": 0.5, "pass_rate": 0.5}``. Plans are read strictly
by default (``strict=True``: exact names, only the benchmark's modes on each day's route and date, exactly the
trip's days; rlfactory_envs/travel/README.md lists each departure): the official reading (``strict=False``, what
``rlf eval-plans`` reproduces) pays plans made of name fragments (``"Ca, Rockford"``) or made-up legs ("Teleport
from A to B"), which a policy learns to write instead of looking anything up.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from rlfactory_envs.kernel.chat_template import settings_chat_format
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.config import bundled_server_config
from rlfactory_envs.kernel.mcp.toolbox import ToolSpec
from rlfactory_envs.kernel.reward_setting import FamilyRewards, build_reward
from rlfactory_envs.kernel.runtime import Parts, Runtime
from rlfactory_envs.kernel.settings import BundledServing, EnvSettings, EpisodeLimits, RewardScoring
from rlfactory_envs.travel.family import FAMILY, SAMPLE_DATABASE_DIR
from rlfactory_envs.travel.prompt import travel_prompt
from rlfactory_envs.travel.query import TravelQuery
from rlfactory_envs.travel.reference_plans import reference_plans
from rlfactory_envs.travel.tasks import load_travel_tasks
from rlfactory_reward_models.travel.plan_text import parse_plan
from rlfactory_reward_models.travel.reward import PARTS, TravelPlanReward
from rlfactory_tool_servers.travel.store import TravelSandbox, open_sandbox
from rlfactory_tool_servers.travel.tools import ENV_TOOLS


def travel_server_config(database_dir: str, flights_path: str | None = None, *,
                         transport: Literal["inprocess", "stdio"] = "inprocess",
                         tuning: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``mcpServers`` document for the bundled travel server over a sandbox folder (and flights file)."""
    args = ["--database-dir", str(database_dir)] + (["--flights-path", str(flights_path)] if flights_path else [])
    return bundled_server_config("travel", "rlfactory_tool_servers.travel", args, transport=transport, tuning=tuning)


def travel_rewards(sandbox: TravelSandbox, strict: bool) -> FamilyRewards:
    """The travel family's rewards: the official final pass by default, the verdict's other parts by name (one
    verdict per episode, however many are weighted); a judge reads the query and the plan."""
    verdict = TravelPlanReward(sandbox, reward="final_pass", strict=strict)
    named = {"final_pass": (verdict, None), **{part: (verdict, part) for part in PARTS if part != "final_pass"}}
    return FamilyRewards(default=verdict, named=named, judge_template="plan")


class TravelScoring(RewardScoring):
    """``reward`` picks the scalar of the official verdict (``final_pass`` by default); ``strict`` (default) reads
    the plan strictly (exact names, the benchmark's modes on each day's route and date, exactly the trip's days)
    instead of as the official evaluator does."""

    reward: Any = "final_pass"
    strict: bool = True


class TravelSettings(EnvSettings):
    """``rlf/Travel-v0``'s settings: the queries, the sandbox's database folder and flights (the embedded sample
    by default)."""

    data_path: str | None = None
    database_dir: str | None = None
    flights_path: str | None = None
    limits: EpisodeLimits = EpisodeLimits(max_turns=12, max_tool_calls=16, max_tool_response_chars=16_384)
    serving: BundledServing = BundledServing()
    scoring: TravelScoring = TravelScoring()


@dataclasses.dataclass(eq=False, kw_only=True)
class TravelRuntime(Runtime):
    sandbox: TravelSandbox

    @functools.cached_property
    def reference_plans(self) -> Mapping[str, tuple[str, list[Any]]]:
        """``{task_id: (query text, plan)}`` for the tasks with a known reference plan (``reference_plans``)."""
        return reference_plans(self.tasks)


class TravelEnv(ToolEnv):
    """TravelPlanner with its sandbox tools; see the module docstring for every setting."""

    settings_model = TravelSettings
    family = FAMILY
    prompt_tools = ("search_flights", "distance_matrix", "search_accommodations", "search_restaurants",
                    "search_attractions", "search_cities", "notebook_write", "notebook_read")
    runtime: TravelRuntime

    @classmethod
    def build_runtime(cls, settings: TravelSettings, parts: Parts) -> TravelRuntime:
        data_path = settings.data_path
        database_dir = settings.database_dir
        flights_path = settings.flights_path
        if data_path is not None and database_dir is None:
            raise ConfigError("data_path= needs database_dir= too: TravelPlanner's database/ folder (accommodations/, "
                              "attractions/, restaurants/, ...)")
        database_dir = str(Path(database_dir or SAMPLE_DATABASE_DIR).resolve())
        sandbox = open_sandbox(database_dir, flights_path)
        serving, scoring = settings.serving, settings.scoring
        servers = serving.tool_servers or travel_server_config(
            database_dir, flights_path and str(Path(flights_path).resolve()), transport=serving.transport)
        return TravelRuntime(settings=settings, parts=parts, sandbox=sandbox, hidden_tools=ENV_TOOLS,
                             tasks=parts.tasks(load_travel_tasks, data_path, database_dir),
                             toolbox=parts.toolbox(servers),
                             chat_format=settings_chat_format(settings),
                             reward_model=build_reward(scoring.reward, scoring.judge,
                                                       travel_rewards(sandbox, scoring.strict)))

    def task_from_dict(self, data: Mapping[str, Any]) -> TravelQuery:
        return TravelQuery.from_dict(data)

    async def aclose_episode(self) -> None:
        await self.call_episode_tool("notebook_close", {})

    def initial_messages(self, task: TravelQuery, tools: list[ToolSpec]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": travel_prompt(task)}]

    def answer_problem(self, answer: str) -> str | None:
        _, why = parse_plan(answer)
        return None if why is None else f"Your plan could not be read: {why}. Give it again inside <answer></answer>."
