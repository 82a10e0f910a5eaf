"""``rlf serve env ID --protocol ors``: an rlf env behind the Open Reward Standard, as the ``openreward`` client
(0.1) and TRL's ``OpenRewardSpec`` speak it.

Discovery: ``GET /list_environments``, ``GET /{env}/tools``, ``/{env}/splits``, ``POST /{env}/tasks``,
``/num_tasks``, ``/task``, ``/task_range``. A session: ``POST /create_session`` (SSE, the session id),
``POST /create`` (``X-Session-ID``; a ``task_spec`` or a ``split`` and ``index``: the env is reset on that task),
``GET /{env}/prompt``, ``/messages``, ``/task_tools``, ``POST /{env}/call`` (SSE: the tool output), ``POST /ping``
(keeps it open; one idle ``--idle-timeout-s`` is closed), ``POST /delete``; ``GET /rlf/stats`` as for OpenEnv. The paths without ``/{env}`` answer the
same (the ORS server redirects them to its first environment). Errors are ``{"detail": ...}``: 400 a bad request,
404 an unknown environment or session, 413 a body over ``--max-request-bytes``, 429 a session sent more calls than
wait at once, 503 (``Retry-After``) over ``--max-sessions``. See ``ors_wire`` for how an env reads as ORS.

ORS sends one tool call per request; behind the door the calls of different sessions still meet: every ``/call``
steps its session's env on this server's one loop, and the calls that arrive together reach the shared toolbox in
one hand-over, where calls to a batched tool (search, SQL) become one MCP request per server.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from rlfactory_envs.kernel.env import EpisodeOver
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.service import ors_wire as wire
from rlfactory_envs.service.episodes import Episode, EpisodeTable, SessionLimitReached, TooManyWaiting
from rlfactory_envs.service.http_json import RequestError, error_response, json_response, read_json, type_name

MAX_LISTED = 1000
"""Tasks one request lists at most: a bigger split is read with ``num_tasks`` and ``task``/``task_range``."""
LINGER_S = 60.0
"""How long a call's result is kept after it finished, for a client that lost the stream and asks again."""
HEARTBEAT_S = 10.0


class OrsService:
    """Answers ORS requests for the sessions of one ``EpisodeTable``."""

    def __init__(self, table: EpisodeTable):
        self.table = table
        self.served = table.served
        self._calls: dict[str, asyncio.Task[str]] = {}

    # -- discovery -------------------------------------------------------------------------------------------

    def check_env(self, request: Request) -> None:
        name = request.path_params.get("env_name")
        if name is not None and name.lower() != self.served.name:
            raise RequestError(404, f"unknown environment {name!r}; this server serves {self.served.name!r}")

    async def tasks(self, start: int | None = None, stop: int | None = None) -> list[dict[str, Any]]:
        """The task dicts of ``tasks[start:stop]``, built on a worker thread (a family may build a task slowly: an
        Android task makes its setup); 400 past ``MAX_LISTED``."""
        env = self.served.prototype
        indices = range(len(env.tasks))[start:stop]
        if len(indices) > MAX_LISTED:
            raise RequestError(400, f"{len(indices):,} tasks asked for, over {MAX_LISTED:,} a request: read them "
                                    "with num_tasks and task_range (or get_task) a part at a time")
        return await asyncio.to_thread(lambda: [env.task_to_dict(env.tasks[i]) for i in indices])

    async def split_of(self, request: Request) -> dict[str, Any]:
        body = await self.body(request)
        if body.get("split") != wire.SPLIT:
            raise RequestError(400, f"Invalid split {body.get('split')!r}: this env has one, {wire.SPLIT!r}")
        return body

    async def body(self, request: Request) -> dict[str, Any]:
        payload = await read_json(request, self.table.limits.max_request_bytes, empty={})
        if not isinstance(payload, dict):
            raise RequestError(400, f"the body must be a JSON object, got {type_name(payload)}")
        return payload

    async def task_range(self, request: Request) -> Response:
        body = await self.split_of(request)
        start, stop = body.get("start"), body.get("stop")
        if any(v is not None and (isinstance(v, bool) or not isinstance(v, int)) for v in (start, stop)):
            raise RequestError(400, "start and stop must be whole numbers or null")
        return json_response({"tasks": await self.tasks(start, stop), "env_name": self.served.name})

    async def task(self, request: Request) -> Response:
        body = await self.split_of(request)
        return json_response({"task": await self.task_at(body.get("index")), "env_name": self.served.name})

    async def task_at(self, index: Any) -> dict[str, Any]:
        tasks = self.served.prototype.tasks
        if isinstance(index, bool) or not isinstance(index, int) or not -len(tasks) <= index < len(tasks):
            raise RequestError(400, f"Invalid index {index!r}: the split has {len(tasks)} tasks")
        return (await self.tasks(index, index + 1 or None))[0]

    # -- sessions --------------------------------------------------------------------------------------------

    def episode(self, request: Request) -> tuple[str, Episode]:
        sid = session_id(request)
        episode = self.table.get(sid)
        if episode is None:
            raise RequestError(404, "Active environment not found: create the session first, or it was closed "
                                    f"after {self.table.limits.idle_timeout_s:g} s without a request")
        return sid, episode

    async def create(self, request: Request) -> Response:
        sid, body = session_id(request), await self.body(request)
        task = await self.task_of(body)
        if self.table.get(sid) is not None:
            raise RequestError(400, "Session already exists")
        try:
            _, episode = self.table.open(sid)
        except SessionLimitReached as exc:
            raise RequestError(503, str(exc), {"Retry-After": "2"}) from None
        try:
            await episode.reset(self.table.limits.step_timeout_s, None, {"task": task})
        except Exception as exc:  # noqa: BLE001 - a task the env cannot play: this request's answer
            await self.table.close(sid)
            if isinstance(exc, (ValueError, KeyError, TypeError, ConfigError)):
                raise RequestError(400, f"the task cannot be played: {exc}") from None
            raise RequestError(500, f"the reset failed: {type(exc).__name__}: {exc}") from None
        return json_response({"sid": sid})

    async def task_of(self, body: dict[str, Any]) -> dict[str, Any]:
        """The task a ``/create`` body names: its ``task_spec``, or the task at ``index`` of ``split``."""
        if body.get("toolset_name") is not None:
            raise RequestError(400, f"unknown toolset {body['toolset_name']!r}: an rlf env has its own tools only")
        if body.get("env_name") not in (None, self.served.name):
            raise RequestError(404, f"unknown environment {body['env_name']!r}; this server serves "
                                    f"{self.served.name!r}")
        spec, split, index = body.get("task_spec"), body.get("split"), body.get("index")
        if (spec is not None) == (split is not None or index is not None):
            raise RequestError(400, "Provide either task_spec or both split and index, not both/neither")
        if spec is not None:
            if not isinstance(spec, dict):
                raise RequestError(400, f"task_spec must be an object (a task of the env), got {type_name(spec)}")
            return spec
        if split != wire.SPLIT:
            raise RequestError(400, f"Invalid split {split!r}: this env has one, {wire.SPLIT!r}")
        return await self.task_at(index)

    async def delete(self, request: Request) -> Response:
        sid = session_id(request)
        await self.table.close(sid)
        return json_response({"sid": sid})

    async def ping(self, request: Request) -> Response:
        self.episode(request)
        return json_response({"status": "ok"})

    # -- a call ----------------------------------------------------------------------------------------------

    async def call(self, request: Request) -> Response:
        """``POST /call``: the call's output as server-sent events (a ``task_id``, then the JSON in ``end``); a
        ``task_id`` given back streams that call's output again."""
        _, episode = self.episode(request)
        body = await self.body(request)
        if body.get("task_id") is not None:
            task = self._calls.get(str(body["task_id"]))
            if task is None:
                return _sse_once(("error", "unknown task_id"))
            return StreamingResponse(_stream(str(body["task_id"]), task), media_type="text/event-stream")
        name, arguments = body.get("name"), body.get("input", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise RequestError(400, "the body is {\"name\": TOOL, \"input\": {ARGUMENTS}}")
        task_id = uuid.uuid4().hex
        task = asyncio.ensure_future(self.run_call(episode, name, arguments))
        self._calls[task_id] = task
        task.add_done_callback(lambda _: asyncio.get_running_loop().call_later(LINGER_S, self._calls.pop, task_id,
                                                                               None))
        return StreamingResponse(_stream(task_id, task), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def run_call(self, episode: Episode, name: str, arguments: dict[str, Any]) -> str:
        """The JSON of ORS's ``RunToolOutput`` for one call: one turn of the env."""
        env = episode.env
        if env.done:
            return json.dumps(wire.tool_error("the episode is over; no more calls are run", "episode_finished"))
        if not wire.is_known_tool(env, name):
            names = [spec.name for spec in env.tool_specs] + [wire.terminal_tool_name(env)]
            return json.dumps(wire.tool_error(f"{name!r} is not a valid tool; the tools are {', '.join(names)}",
                                              "not_found"))
        timeout = self.table.limits.step_timeout_s
        try:
            _, reward, terminated, truncated, info = await episode.step(timeout, wire.action_text(env, name, arguments))
            if name == wire.terminal_tool_name(env) and not (terminated or truncated):
                feedback = wire.tool_output(reward, terminated, truncated, info)["output"]["blocks"]
                _, reward, terminated, truncated, info = await episode.truncate(timeout, wire.UNREAD_ANSWER)
                info["feedback"] = [block["text"] for block in feedback]
        except EpisodeOver:
            return json.dumps(wire.tool_error("the episode is over; no more calls are run", "episode_finished"))
        return json.dumps(wire.tool_output(reward, terminated, truncated, info), ensure_ascii=False, default=str)


def session_id(request: Request) -> str:
    sid = request.headers.get("x-session-id", "").strip()
    if not sid:
        raise RequestError(400, "X-Session-ID header is required")
    if len(sid) > 255:
        raise RequestError(400, "X-Session-ID is longer than 255 characters")
    return sid


async def _stream(task_id: str, task: asyncio.Task[str]) -> AsyncIterator[bytes]:
    yield wire.sse_events(("task_id", task_id))
    while not task.done():
        done, _ = await asyncio.wait({task}, timeout=HEARTBEAT_S)
        if not done:
            yield b": ping\r\n\r\n"
    try:
        yield wire.sse_events(("end", task.result()))
    except Exception as exc:  # noqa: BLE001 - the call failed (a timeout, a full session): the client's ToolFailed
        yield wire.sse_events(("error", " ".join(f"{type(exc).__name__}: {exc}".split())))


def _sse_once(*events: tuple[str, str]) -> Response:
    return Response(wire.sse_events(*events), media_type="text/event-stream")


async def _new_session(request: Request) -> Response:
    return _sse_once(("task_id", uuid.uuid4().hex), ("end", ""))


def build_app(service: OrsService) -> Starlette:
    """The ASGI app of ``service``: every environment route with and without its ``/{env}`` prefix."""

    def handler(answer: Callable[[Request], Any], env_scoped: bool = False) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            try:
                if env_scoped:
                    service.check_env(request)
                result = await answer(request)
                return result if isinstance(result, Response) else json_response(result)
            except RequestError as exc:
                return error_response(exc)
            except TooManyWaiting as exc:
                return error_response(RequestError(429, str(exc), {"Retry-After": "1"}))
        return endpoint

    async def value(make: Callable[[], Any]) -> Any:
        return make()

    served, env = service.served, service.served.prototype
    scoped: list[tuple[str, Callable[[Request], Any], str]] = [
        ("/tools", lambda r: value(lambda: wire.list_tools(env)), "GET"),
        ("/splits", lambda r: value(lambda: [{"name": wire.SPLIT, "type": "train"}]), "GET"),
        ("/tasks", service.task_range, "POST"),
        ("/num_tasks", lambda r: _then(service.split_of(r), lambda _: {"num_tasks": len(env.tasks)}), "POST"),
        ("/task", service.task, "POST"),
        ("/task_range", service.task_range, "POST"),
        ("/task_tools", lambda r: value(lambda: wire.list_tools(service.episode(r)[1].env)), "GET"),
        ("/prompt", lambda r: value(lambda: wire.text_blocks(service.episode(r)[1].opening[-1]["content"])), "GET"),
        ("/messages", lambda r: value(lambda: wire.messages(service.episode(r)[1].opening)), "GET"),
        ("/call", service.call, "POST"),
        ("/score_group", lambda r: value(_no_score_group), "POST"),
    ]
    root: list[tuple[str, Callable[[Request], Any], str]] = [
        ("/health", lambda r: value(lambda: {"status": "ok"}), "GET"),
        ("/version", lambda r: value(lambda: {"version": served.version, "build_sha": None}), "GET"),
        ("/list_environments", lambda r: value(lambda: [served.name]), "GET"),
        ("/create_session", _new_session, "POST"),
        ("/delete_session", service.delete, "POST"),
        ("/create", service.create, "POST"),
        ("/delete", service.delete, "POST"),
        ("/ping", service.ping, "POST"),
        ("/rlf/stats", lambda r: value(service.table.stats), "GET"),
    ]
    routes = [Route(path, handler(answer), methods=[method]) for path, answer, method in root]
    for path, answer, method in scoped:
        routes += [Route(path, handler(answer, True), methods=[method]),
                   Route("/{env_name}" + path, handler(answer, True), methods=[method])]
    return Starlette(routes=routes, lifespan=service.table.lifespan)


async def _then(first: Any, make: Callable[[Any], Any]) -> Any:
    return make(await first)


def _no_score_group() -> Any:
    raise RequestError(404, "this environment does not implement score_group (each session's reward is its own)")
