"""``rlf serve env ID --protocol openenv``: an rlf env behind OpenEnv's HTTP/WebSocket API (openenv-core 0.3).

``WS /ws`` is the session protocol openenv-core's ``EnvClient`` speaks: one env per connection, frames
``{"type": "reset"|"step"|"state"|"close", "data": ...}`` answered ``{"type": "observation"|"state"|"error",
"data": ...}``; an error carries ``message`` and OpenEnv's ``code`` (``INVALID_JSON``, ``UNKNOWN_TYPE``,
``VALIDATION_ERROR``, ``EXECUTION_ERROR``, ``CAPACITY_REACHED``) and costs only that frame. A connection over
``--max-sessions`` gets ``CAPACITY_REACHED`` and is closed; a frame over ``--max-request-bytes`` closes its
connection (1009); a dead client is found by WebSocket pings and its session closed.

HTTP: ``GET /health``, ``/metadata``, ``/schema``, ``/openapi.json``, ``POST /mcp`` (``tools/list``) as
openenv-core serves them, and ``GET /rlf/stats`` (sessions, toolbox counters, threads, file descriptors). ``POST /reset`` and ``/step`` keep state, unlike openenv-core's (which makes a fresh env
for every request): a reset opens an episode (its ``episode_id``, given or made, is in the observation's ``info``),
and ``POST /step {"action": {"response": TEXT}, "episode_id": ID}`` and ``GET /state?episode_id=ID`` continue it.
Those episodes count against ``--max-sessions`` like connections and are closed when idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from rlfactory_envs.kernel.env import EpisodeOver
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.service import openenv_wire as wire
from rlfactory_envs.service.episodes import Episode, EpisodeTable, SessionLimitReached, StepTimeout
from rlfactory_envs.service.http_json import (RequestError, dump_json, error_response, json_response, load_json,
                                              read_json, type_name)

CAPACITY_REACHED = "CAPACITY_REACHED"
REFUSAL_GRACE_S = 5.0
BAD_REQUEST = (ValueError, KeyError, TypeError, ConfigError, wire.FrameError)
"""What a reset or step raises on a request that cannot be served as asked (a bad option, an unknown task id)."""


class OpenEnvService:
    """Answers OpenEnv's requests for the sessions of one ``EpisodeTable``."""

    def __init__(self, table: EpisodeTable):
        self.table = table
        self.timeout_s = table.limits.step_timeout_s

    # -- one frame ---------------------------------------------------------------------------------------------

    async def answer(self, episode: Episode, raw: str | bytes) -> dict[str, Any] | None:
        """The reply to one frame of a session, or ``None`` for ``close``."""
        try:
            message = load_json(raw)
        except (ValueError, RecursionError) as exc:
            return _error(f"Invalid JSON: {' '.join(str(exc).split())[:200]}", "INVALID_JSON")
        if not isinstance(message, dict):
            return _error(f"a frame is a JSON object {{\"type\": ..., \"data\": ...}}, got {type_name(message)}",
                          "VALIDATION_ERROR")
        kind = message.get("type")
        if kind == "close":
            return None
        if kind == "state":
            return {"type": "state", "data": episode.state()}
        if kind not in ("reset", "step"):
            return _error(f"Unknown message type: {kind!r} (reset, step, state or close)", "UNKNOWN_TYPE")
        try:
            data = await (self._reset(episode, message.get("data")) if kind == "reset"
                          else self._step(episode, message.get("data")))
        except BAD_REQUEST as exc:
            return _error(_message(exc), "VALIDATION_ERROR")
        except (EpisodeOver, StepTimeout) as exc:
            return _error(str(exc), "EXECUTION_ERROR")
        except Exception as exc:  # noqa: BLE001 - an env's failure is this frame's answer, never the server's end
            return _error(f"{type(exc).__name__}: {exc}", "EXECUTION_ERROR")
        return {"type": "observation", "data": data}

    async def _reset(self, episode: Episode, data: Any) -> dict[str, Any]:
        seed, options, episode_id = wire.reset_arguments(data)
        prompt, info = await episode.reset(self.timeout_s, seed, options)
        episode.client_episode_id = episode_id
        return wire.reset_reply(prompt, info)

    async def _step(self, episode: Episode, data: Any) -> dict[str, Any]:
        return wire.step_reply(*await episode.step(self.timeout_s, wire.step_action(data)))

    # -- WebSocket ---------------------------------------------------------------------------------------------

    async def websocket(self, socket: WebSocket) -> None:
        """One session: its env lives as long as the connection."""
        await socket.accept()
        try:
            session_id, episode = self.table.open()
        except SessionLimitReached as exc:
            await self._refuse(socket, _error(str(exc), CAPACITY_REACHED, active_sessions=exc.active,
                                              max_sessions=exc.limit))
            return
        try:
            await self._serve(socket, episode)
        finally:
            await self.table.close(session_id)

    @staticmethod
    async def _refuse(socket: WebSocket, error: dict[str, Any]) -> None:
        """Say ``error``, and again to the client's first frame (within a few seconds), then close (1013): a
        client that sends its reset right after connecting reads the error, not a closed connection."""
        await _send(socket, error)
        with contextlib.suppress(WebSocketDisconnect, asyncio.TimeoutError):
            if (await asyncio.wait_for(socket.receive(), REFUSAL_GRACE_S))["type"] != "websocket.disconnect":
                await _send(socket, error)
        with contextlib.suppress(RuntimeError):
            await socket.close(1013)

    async def _serve(self, socket: WebSocket, episode: Episode) -> None:
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                message = await socket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                if episode.closed:
                    idle = self.table.limits.idle_timeout_s
                    await _send(socket, _error(f"the session was closed after {idle:g} s without a request "
                                               "(--idle-timeout-s); connect again", "SESSION_ERROR"))
                    await socket.close()
                    return
                episode.last_active = time.monotonic()
                reply = await self.answer(episode, message.get("text") or message.get("bytes") or b"")
                if reply is None:
                    await socket.close()
                    return
                await _send(socket, reply)

    # -- HTTP --------------------------------------------------------------------------------------------------

    async def http_reset(self, request: Request) -> Response:
        payload = await read_json(request, self.table.limits.max_request_bytes, empty={})
        try:
            seed, options, episode_id = wire.reset_arguments(payload)
            episode = self.table.get(episode_id) if episode_id else None
            if episode is None:
                episode_id, episode = self.table.open(episode_id)
            prompt, info = await episode.reset(self.timeout_s, seed, options)
        except SessionLimitReached as exc:
            raise RequestError(503, str(exc), {"Retry-After": "1"}) from None
        except BAD_REQUEST as exc:
            raise RequestError(422, _message(exc)) from None
        episode.client_episode_id = episode_id
        return json_response(wire.reset_reply(prompt, {**info, "episode_id": episode_id}))

    async def http_step(self, request: Request) -> Response:
        payload = await read_json(request, self.table.limits.max_request_bytes)
        if not isinstance(payload, dict) or "action" not in payload:
            raise RequestError(422, "the body is {\"action\": {\"response\": TEXT}, \"episode_id\": ID} (ID from "
                                    "the reset's observation info)")
        episode = self._http_episode(payload.get("episode_id"))
        try:
            return json_response(await self._step(episode, payload["action"]))
        except BAD_REQUEST as exc:
            raise RequestError(422, _message(exc)) from None
        except (EpisodeOver, StepTimeout) as exc:
            raise RequestError(409 if isinstance(exc, EpisodeOver) else 504, str(exc)) from None

    async def http_state(self, request: Request) -> Response:
        episode_id = request.query_params.get("episode_id")
        if not episode_id:
            return json_response({"episode_id": None, "step_count": 0})
        return json_response(self._http_episode(episode_id).state())

    def _http_episode(self, episode_id: Any) -> Episode:
        if not isinstance(episode_id, str) or not episode_id:
            raise RequestError(422, "give the episode_id a POST /reset returned (each HTTP episode is kept by its "
                                    "id; or use the WebSocket /ws, one episode per connection)")
        episode = self.table.get(episode_id)
        if episode is None:
            raise RequestError(404, f"no episode {episode_id!r}: it was never reset here, or it was closed after "
                                    f"{self.table.limits.idle_timeout_s:g} s idle; POST /reset first")
        return episode

    async def mcp(self, request: Request) -> Response:
        """MCP JSON-RPC over HTTP, as far as a served env has it: ``tools/list`` (the tools the model sees)."""
        try:
            payload = await read_json(request, self.table.limits.max_request_bytes)
        except RequestError as exc:
            return json_response(_rpc_error(None, -32700, str(exc)))
        if not isinstance(payload, dict) or not isinstance(payload.get("method"), str):
            return json_response(_rpc_error(payload.get("id") if isinstance(payload, dict) else None, -32600,
                                            "Invalid Request: a JSON-RPC 2.0 object with a method"))
        if payload["method"] != "tools/list":
            return json_response(_rpc_error(payload.get("id"), -32601, f"Method not found: {payload['method']} "
                                            "(this server lists tools; the tools run inside steps)"))
        tools = [{"name": s.name, "description": s.description, "inputSchema": s.input_schema}
                 for s in self.table.served.prototype.tool_specs]
        return json_response({"jsonrpc": "2.0", "id": payload.get("id"), "result": {"tools": tools}})

    def metadata(self) -> dict[str, Any]:
        served = self.table.served
        return {"name": served.env_id, "description": served.description, "version": served.version,
                "author": "rlfactory-envs", "documentation_url": None, "readme_content": None}


def _message(exc: BaseException) -> str:
    text = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    return " ".join(str(text).split())


def _error(message: str, code: str, **more: Any) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code, **more}}


def _rpc_error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


async def _send(socket: WebSocket, reply: dict[str, Any]) -> None:
    await socket.send_text(dump_json(reply).decode())


def build_app(service: OpenEnvService) -> Starlette:
    """The ASGI app of ``service``: the routes above; HTTP errors as ``{"detail": ...}``."""

    def route(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestError as exc:
                return error_response(exc)
        return endpoint

    def constant(make: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            return json_response(make())
        return endpoint

    served = service.table.served
    schemas = {"action": wire.ACTION_SCHEMA, "observation": wire.OBSERVATION_SCHEMA, "state": wire.STATE_SCHEMA}
    openapi = wire.openapi_document(f"rlf env {served.env_id} (OpenEnv API)", served.description)
    routes = [
        Route("/health", constant(lambda: {"status": "healthy"})),
        Route("/metadata", constant(service.metadata)),
        Route("/schema", constant(lambda: schemas)),
        Route("/openapi.json", constant(lambda: openapi)),
        Route("/reset", route(service.http_reset), methods=["POST"]),
        Route("/step", route(service.http_step), methods=["POST"]),
        Route("/state", route(service.http_state)),
        Route("/mcp", route(service.mcp), methods=["POST"]),
        Route("/rlf/stats", constant(service.table.stats)),
        WebSocketRoute("/ws", service.websocket),
    ]
    return Starlette(routes=routes, lifespan=service.table.lifespan)
