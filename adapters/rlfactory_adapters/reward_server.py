"""``rlf serve reward``: an env's own reward over HTTP, as OpenRLHF's remote reward model.

    rlf serve reward --env rlf/Search-NQ-v0 --port 5000
    # OpenRLHF 0.11: --reward.remote_url http://127.0.0.1:5000/get_reward   (--remote_rm_url before 0.11)

The protocol is the one OpenRLHF 0.11.2's client speaks (``SingleTurnAgentExecutor._fetch_rewards_via_http``, the
same as its own ``openrlhf.cli.serve_rm``): ``POST`` (here ``/`` or ``/get_reward``) of ``{"query": [...],
"prompts": [...], "labels": [...]}``, one item per sample (OpenRLHF sends one per request, tries 5 times a
second apart on any failure, a 4xx included, each try within 180 s), answered ``{"rewards": [...], "scores": [...],
"extra_logs": {KEY: [...]}, "reasons": [...]}``. OpenRLHF reads ``rewards``, ``scores`` and ``extra_logs``: it
turns each ``extra_logs`` value (a list aligned with the items) into a per-sample metric and later merges the
samples' metrics by key, so every answer of a server has the same keys: ``answered`` (1.0 when the parser found
an answer) and the reward's parts (those the reward gives a response without an answer, learned from the first
item, or ``--reward-parts``), a part an item lacks as 0.0. ``reasons`` (ignored by OpenRLHF) says why a reward
is what it is when that is not obvious.

Item ``i``: ``labels[i]`` is the data row's label as ``prepare_data --trainer openrlhf`` writes it (``{"env_id",
"env_kwargs", "task"}``); its ``env_id`` must be the served env's, and its task one of the served env's tasks, field
for field (``task_id`` and all): a label is data a client sends, and a task carries what the reward runs (an SQL
task's gold query), so a task the server does not hold is refused unless it is started with ``--trust-labels``
(then such a task is scored, under the reward's own bounds). The response is what ``query[i]`` adds after
``prompts[i]``; it is scored as ``rlfactory_adapters.offline_score.ascore_response`` scores it (the last model
turn, the env's parser, the env's reward model), on one env built from ``--env``, ``--env-kwargs`` and ``--set``
(a label's ``env_kwargs`` are never used to build anything: a label that names others is logged once).
``rewards[i] == scores[i]``, the reward. A reward that fails or takes longer than ``--score-timeout-s`` scores
the low end of the reward's range, with the reason; a model's output never makes an error answer.

A bad request is a 4xx with ``{"error": "..."}``: 400 (not JSON, a key missing, lists of different lengths, a
value of the wrong type, a bad label, a label of another env or a task the server does not hold, a query that does
not start with its prompt), 401 (no ``Authorization: Bearer TOKEN`` with ``--auth-token``'s token, when the server
has one; the scheme's name in any letter case), 413 (over ``--max-request-bytes``, ``--max-items`` or
``--max-query-chars``), 503 (over ``--max-requests`` requests at once; OpenRLHF retries), 404 and 405. ``GET /``
describes the server. Items are scored at most ``--max-concurrency`` at a time over all requests, shared fairly
among clients (``fair_shares``: the client holding the fewest slots goes next, so one trainer's big request does
not starve another's), each within ``--score-timeout-s``.

A shared service: the server binds to 127.0.0.1 unless ``--host`` says otherwise, and says loudly at start when it
listens beyond loopback without a token (``--auth-token``, or ``RLF_REWARD_AUTH_TOKEN``); OpenRLHF sends no
header of its own, so a token needs a proxy or a trainer that sets it (see ``docs/deployment.md``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import sys
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from rlfactory_adapters.episode_label import EpisodeLabel
from rlfactory_adapters.reward_http import RequestError, RequestLog, decode, error_response, read_body
from rlfactory_adapters.fair_shares import FairShares
from rlfactory_adapters.offline_score import ascore_answer, final_answer
from rlfactory_envs.command_errors import DEBUG_HELP, run_command
from rlfactory_envs.command_options import env_kwargs_from_options, positive_float, positive_int
from rlfactory_envs.env_spec import make_env, resolve
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_reward_models.base import Reward
from rlfactory_tool_servers.http_guard import BearerTokenGuard, auth_token, is_loopback
from rlfactory_tool_servers.launch import LOG_FORMAT, LOG_LEVELS, AnnouncingServer, http_url

logger = logging.getLogger("rlfactory_adapters.reward_server")

KEYS = ("query", "prompts", "labels")
TOKEN_VARIABLE = "RLF_REWARD_AUTH_TOKEN"
ANSWERED = "answered"
MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """What one request and the server as a whole may take."""

    max_request_bytes: int = 32 * MIB
    max_items: int = 4096
    max_query_chars: int = MIB
    max_concurrency: int = 64
    """Items scored at once, over all requests."""
    max_requests: int = 1024
    """Requests in flight; one more is answered 503."""
    score_timeout_s: float = 60.0


@dataclass(frozen=True)
class Item:
    task: dict[str, Any]
    response: str


class RewardService:
    """Scores OpenRLHF's reward requests with one env's parser and reward model (the env is never reset, so its
    tool servers are never started)."""

    def __init__(self, env: ToolEnv, env_id: str, env_kwargs: Mapping[str, Any] | None = None,
                 limits: Limits | None = None, reward_parts: Sequence[str] | None = None, trust_labels: bool = False):
        self.env = env
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.limits = limits or Limits()
        self.low = float(env.reward_range[0])
        self._parts: tuple[str, ...] | None = None if reward_parts is None else \
            tuple(dict.fromkeys(p for p in reward_parts if p != ANSWERED))
        self._parts_lock = asyncio.Lock()
        self.trust_labels = trust_labels
        self._shares = FairShares(self.limits.max_concurrency)
        self._in_flight = 0
        self._logged_kwargs: set[str] = set()
        self._logged_parts: set[str] = set()

    # -- the request -----------------------------------------------------------------------------------------

    def items(self, payload: Any) -> list[Item]:
        """The items of a decoded request body; ``RequestError`` naming the first thing wrong."""
        if not isinstance(payload, dict):
            raise RequestError(400, f"the body must be a JSON object with the lists {', '.join(KEYS)}; got "
                                    f"{_json_type(payload)}")
        missing = [key for key in KEYS if key not in payload]
        if missing:
            raise RequestError(400, f"the body has no {' or '.join(repr(k) for k in missing)}: it must hold the "
                                    f"lists {', '.join(KEYS)} (one item per position)")
        for key in KEYS:
            if not isinstance(payload[key], list):
                raise RequestError(400, f"{key!r} must be a list, got {_json_type(payload[key])}")
        queries, prompts, labels = (payload[key] for key in KEYS)
        if not len(queries) == len(prompts) == len(labels):
            raise RequestError(400, f"query, prompts and labels must have the same length; got {len(queries)}, "
                                    f"{len(prompts)} and {len(labels)}")
        if len(queries) > self.limits.max_items:
            raise RequestError(413, f"{len(queries)} items in one request, over the limit of "
                                    f"{self.limits.max_items} (--max-items)")
        return [self._item(i, query, prompt, label) for i, (query, prompt, label)
                in enumerate(zip(queries, prompts, labels))]

    def _item(self, i: int, query: Any, prompt: Any, label: Any) -> Item:
        if not isinstance(query, str):
            raise RequestError(400, f"query[{i}] must be a string, got {_json_type(query)}")
        if not isinstance(prompt, str):
            raise RequestError(400, f"prompts[{i}] must be a string, got {_json_type(prompt)}")
        if len(query) > self.limits.max_query_chars:
            raise RequestError(413, f"query[{i}] has {len(query)} characters, over the limit of "
                                    f"{self.limits.max_query_chars} (--max-query-chars)")
        if not query.startswith(prompt):
            raise RequestError(400, f"query[{i}] does not start with prompts[{i}]: the response scored is what the "
                                    "query adds after its prompt")
        try:
            parsed = EpisodeLabel.parse(label)
        except ValueError as exc:
            raise RequestError(400, f"labels[{i}]: {exc}") from None
        if parsed.env_id != self.env_id:
            raise RequestError(400, f"labels[{i}] is a task of {parsed.env_id}, but this server scores "
                                    f"{self.env_id}; serve that env's reward with --env {parsed.env_id}")
        try:
            task = self.env.task_from_dict(parsed.task)
        except Exception as exc:  # noqa: BLE001 - whatever a family's task builder raises on a bad task
            raise RequestError(400, f"labels[{i}]: its task is not a task of {self.env_id} ({exc})") from None
        if not self.trust_labels and not self._holds(task):
            raise RequestError(400, f"labels[{i}]: its task (task_id {str(getattr(task, 'task_id', None))[:80]!r}) "
                                    f"is not one of this server's {self.env_id} tasks, or differs from it: the server "
                                    "scores the tasks of its own data (--set data_path=... for other data); start it "
                                    "with --trust-labels to score the tasks labels bring")
        self._note_kwargs(parsed.env_kwargs)
        return Item(parsed.task, query[len(prompt):])

    def _holds(self, task: Any) -> bool:
        """Whether ``task`` is one of the served env's tasks, every field equal."""
        try:
            return self.env.runtime.tasks.by_id(str(getattr(task, "task_id", ""))) == task
        except KeyError:
            return False

    def _note_kwargs(self, env_kwargs: Mapping[str, Any]) -> None:
        """Say once per set of kwargs that a label names env kwargs other than the served env's."""
        if dict(env_kwargs) == self.env_kwargs:
            return
        key = json.dumps(env_kwargs, sort_keys=True, default=str)
        if key in self._logged_kwargs or len(self._logged_kwargs) >= 64:
            return
        self._logged_kwargs.add(key)
        logger.warning("a label names the env kwargs %s, this server's env was built with %s: the labels' are not "
                       "used; give --env-kwargs/--set where they change the reward", key[:500],
                       json.dumps(self.env_kwargs, sort_keys=True, default=str)[:500])

    # -- scoring ---------------------------------------------------------------------------------------------

    async def score(self, items: Sequence[Item], client: Hashable = "local") -> dict[str, Any]:
        """The answer to a request of ``items`` from ``client`` (its address): rewards, scores, extra_logs (every key
        a list aligned with the items) and reasons."""
        parts = await self.part_names(items[0].task if items else None)
        results = await asyncio.gather(*(self._score_one(item, client) for item in items))
        rewards = [reward.value for reward, _, _ in results]
        extra_logs = {name: [_finite(reward.parts.get(name, 0.0)) for reward, _, _ in results] for name in parts}
        extra_logs[ANSWERED] = [1.0 if answered else 0.0 for _, answered, _ in results]
        self._note_parts(reward for reward, _, _ in results)
        failed = [(i, reward.reason) for i, (reward, _, failed) in enumerate(results) if failed]
        if failed:
            logger.warning("%d of %d rewards failed and score %s; item %d: %s", len(failed), len(items), self.low,
                           *failed[0])
        return {"rewards": rewards, "scores": list(rewards), "extra_logs": extra_logs,
                "reasons": [reward.reason for reward, _, _ in results]}

    async def part_names(self, task: Mapping[str, Any] | None) -> tuple[str, ...]:
        """The reward parts every answer reports: ``--reward-parts``, else those the reward gives ``task`` with a
        response without an answer (learned once; none until there is a task)."""
        if self._parts is None and task is not None:
            async with self._parts_lock:
                if self._parts is None:
                    probe, _, _ = await self._reward(task, "")
                    self._parts = tuple(name for name in probe.parts if name != ANSWERED)
                    logger.info("extra_logs keys: %s", ", ".join([*self._parts, ANSWERED]))
        return self._parts or ()

    async def _score_one(self, item: Item, client: Hashable) -> tuple[Reward, bool, bool]:
        """The item's reward, whether an answer was parsed, and whether the reward failed."""
        async with self._shares.slot(client):
            return await self._reward(item.task, item.response)

    async def _reward(self, task: Mapping[str, Any], response: str) -> tuple[Reward, bool, bool]:
        """``ascore_response``'s reward, whether the parser found an answer, and whether the reward failed (raised,
        which ``ascore_answer`` turns into the low end with the reason; took too long; gave no number)."""
        timeout = self.limits.score_timeout_s
        answered = False
        try:
            last, answer = final_answer(self.env, response)
            answered = answer is not None
            reward = await asyncio.wait_for(ascore_answer(self.env, task, last, answer), timeout)
        except asyncio.TimeoutError:
            why = f"the reward took longer than {timeout:g} s (--score-timeout-s)"
            return Reward(self.low, {}, why), answered, True
        except Exception as exc:  # noqa: BLE001 - the parser's or the task's failure: still the model's score
            return Reward(self.low, {}, f"scoring failed: {exc!r}"), answered, True
        if not math.isfinite(reward.value):
            return Reward(self.low, {}, f"the reward model returned {reward.value}"), answered, True
        return reward, answered, bool(reward.info.get("reward_failed"))

    def _note_parts(self, rewards: Any) -> None:
        known = set(self._parts or ())
        for reward in rewards:
            for name in reward.parts:
                if name not in known and name != ANSWERED and name not in self._logged_parts:
                    self._logged_parts.add(name)
                    logger.warning("the reward part %r is not reported (every answer must have the same extra_logs "
                                   "keys: %s); name the parts to report with --reward-parts", name,
                                   ", ".join([*known, ANSWERED]))

    def describe(self) -> dict[str, Any]:
        """``GET /``: what this server scores and how to ask."""
        return {"server": "rlf serve reward", "env_id": self.env_id, "env_kwargs": self.env_kwargs,
                "reward_range": list(self.env.reward_range),
                "request": "POST / or /get_reward {\"query\": [str], \"prompts\": [str], \"labels\": [label]}",
                "answer": "{\"rewards\": [float], \"scores\": [float], \"extra_logs\": {key: [float]}, "
                          "\"reasons\": [str | null]}",
                "extra_logs": None if self._parts is None else [*self._parts, ANSWERED],
                "trust_labels": self.trust_labels, "limits": asdict(self.limits)}

    # -- HTTP ------------------------------------------------------------------------------------------------

    async def handle(self, request: Request) -> JSONResponse:
        """A ``POST`` of OpenRLHF's client (or ``GET /``)."""
        if request.method in ("GET", "HEAD"):  # only / takes them
            return JSONResponse(self.describe())
        if self._in_flight >= self.limits.max_requests:
            busy = RequestError(503, f"{self._in_flight} requests in flight, the limit (--max-requests); try again",
                                {"Retry-After": "1"})
            return error_response(busy, request)
        self._in_flight += 1
        try:
            items = self.items(decode(await read_body(request, self.limits.max_request_bytes)))
            answer = await self.score(items, request.client.host if request.client else "local")
        except RequestError as exc:
            return error_response(exc, request)
        finally:
            self._in_flight -= 1
        rewards = answer["rewards"]
        request.state.log_detail = (f"{len(rewards)} items, mean reward "
                                    f"{sum(rewards) / len(rewards) if rewards else float('nan'):.3f}")
        return JSONResponse(answer)


def build_app(service: RewardService) -> Starlette:
    """The HTTP app: ``POST /`` and ``POST /get_reward`` score, ``GET /`` describes, errors are JSON."""
    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        message = {404: f"no such path {request.url.path}; POST to / or /get_reward",
                   405: f"{request.method} is not allowed here; POST to / or /get_reward"}.get(exc.status_code,
                                                                                               exc.detail)
        return error_response(RequestError(exc.status_code, message, exc.headers), request)

    routes = [Route("/", service.handle, methods=["GET", "POST"]),
              Route("/get_reward", service.handle, methods=["POST"])]
    return Starlette(routes=routes, exception_handlers={HTTPException: http_error},
                     middleware=[Middleware(RequestLog)])


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _finite(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0


# -- the command ---------------------------------------------------------------------------------------------


def options_parser(prog: str) -> argparse.ArgumentParser:
    defaults = Limits()
    parser = argparse.ArgumentParser(
        prog=prog, allow_abbrev=False,
        description="Serve an rlf env's own reward over HTTP for OpenRLHF's remote reward model "
                    "(--reward.remote_url http://HOST:PORT/get_reward; --remote_rm_url before 0.11): POST / or "
                    "/get_reward with {\"query\": [...], \"prompts\": [...], \"labels\": [...]}, labels as "
                    "`python -m rlfactory_adapters.prepare_data --trainer openrlhf` writes them.")
    parser.add_argument("--env", required=True, help="the env whose reward to serve: a registered id (see `rlf list`) "
                        "or an env spec file (.yaml/.json)")
    parser.add_argument("--env-kwargs", metavar="JSON",
                        help="env keyword arguments as one JSON object (the labels' own are not used)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="env keyword argument (JSON value or string), e.g. --set db_dir=data/spider; repeatable")
    parser.add_argument("--reward-parts", metavar="NAME[,NAME...]",
                        help="the reward parts every answer reports in extra_logs (default: those the reward gives a "
                             "response without an answer, learned from the first request)")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1, loopback only)")
    parser.add_argument("--auth-token", default=None,
                        help=f"require Authorization: Bearer TOKEN on every request, else 401 (default: "
                             f"${TOKEN_VARIABLE} if set)")
    parser.add_argument("--trust-labels", action="store_true",
                        help="score tasks the labels bring that are not the served env's own (by default such a "
                             "label is a 400: its task carries what the reward runs, such as an SQL gold query)")
    parser.add_argument("--port", type=int, metavar="PORT", default=5000,
                        help="port (default 5000, OpenRLHF's serve_rm's; 0 picks a free one)")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="warning",
                        help="warning (default): the start message and problems; info: also one line per request; "
                             "debug: also uvicorn's own; error: errors only, no start message")
    limits = parser.add_argument_group("limits")
    limits.add_argument("--max-request-bytes", type=positive_int, metavar="BYTES", default=defaults.max_request_bytes,
                        help=f"largest request body (default {defaults.max_request_bytes // MIB} MiB; over it: 413)")
    limits.add_argument("--max-items", type=positive_int, metavar="N", default=defaults.max_items,
                        help=f"most items in one request (default {defaults.max_items}; over it: 413)")
    limits.add_argument("--max-query-chars", type=positive_int, metavar="CHARS", default=defaults.max_query_chars,
                        help=f"longest query, prompt and response (default {defaults.max_query_chars}; over it: 413)")
    limits.add_argument("--max-concurrency", type=positive_int, metavar="N", default=defaults.max_concurrency,
                        help=f"items scored at once over all requests (default {defaults.max_concurrency})")
    limits.add_argument("--max-requests", type=positive_int, metavar="N", default=defaults.max_requests,
                        help=f"requests in flight at once (default {defaults.max_requests}; over it: 503)")
    limits.add_argument("--score-timeout-s", type=positive_float, metavar="SECONDS", default=defaults.score_timeout_s,
                        help=f"a reward slower than this scores the low end (default {defaults.score_timeout_s:g})")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "python -m rlfactory_adapters.reward_server") -> int:
    """Serve until stopped; 2 on a user's mistake (one line on stderr)."""
    args = options_parser(prog).parse_args(list(sys.argv[1:] if argv is None else argv))
    return run_command(prog, lambda: serve(args, prog), debug=args.debug)


def serve(args: argparse.Namespace, prog: str) -> int:
    """Build the env ``args`` name (a bad id or setting raises ``ConfigError``), then serve its reward."""
    env_kwargs = env_kwargs_from_options(args.env, args.set, args.env_kwargs)
    env_id = resolve(args.env, env_kwargs).env_id
    limits = Limits(max_request_bytes=args.max_request_bytes, max_items=args.max_items,
                    max_query_chars=args.max_query_chars, max_concurrency=args.max_concurrency,
                    max_requests=args.max_requests, score_timeout_s=args.score_timeout_s)
    parts = None if args.reward_parts is None else [p.strip() for p in args.reward_parts.split(",") if p.strip()]
    logging.basicConfig(level=args.log_level.upper(), format=LOG_FORMAT, stream=sys.stderr, force=True)
    env = make_env(env_id, **env_kwargs)
    try:
        service = RewardService(env, env_id, env_kwargs, limits, parts, trust_labels=args.trust_labels)
        token = auth_token(args.auth_token, TOKEN_VARIABLE)
        app: Any = build_app(service) if token is None else BearerTokenGuard(build_app(service), token)
        if token is None and not is_loopback(args.host) and args.log_level != "error":
            print(f"{prog}: WARNING: listening on {args.host} with no --auth-token: anyone who can reach this port "
                  f"can have rewards computed (and a label's task run). Set --auth-token (or ${TOKEN_VARIABLE}), or "
                  "bind to 127.0.0.1 behind a proxy that adds it.", file=sys.stderr, flush=True)
        config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level,
                                log_config=None, access_log=args.log_level == "debug", lifespan="off")

        def announce(port: int) -> None:
            if args.log_level != "error":
                given = f"; env kwargs: {json.dumps(env_kwargs, sort_keys=True)}" if env_kwargs else ""
                print(f"{prog}: serving the reward of {env_id} at {http_url(args.host, port, '')} (POST / or "
                      f"/get_reward, OpenRLHF --reward.remote_url){given}", file=sys.stderr, flush=True)

        AnnouncingServer(config, announce).run()
    finally:
        env.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
