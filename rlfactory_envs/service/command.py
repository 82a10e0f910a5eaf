"""``rlf serve env ID_OR_SPEC --protocol openenv|ors``: the command that serves an env to trainers.

    rlf serve env rlf/Search-NQ-v0 --protocol openenv --port 8000
    rlf serve env my_env.yaml --protocol ors --auth-token "$TOKEN" --set max_turns=6

The env is built once (``--set``/``--env-kwargs`` as for ``rlf rollout``); a bad id, spec or setting ends the
command with one line before anything listens. The start line names the URL (``at http://HOST:PORT``).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import resource
import sys
from collections.abc import Sequence
from typing import Any

import uvicorn

from rlfactory_envs.command_errors import DEBUG_HELP, run_command
from rlfactory_envs.command_options import env_kwargs_from_options, positive_float, positive_int
from rlfactory_envs.service import openenv, ors
from rlfactory_envs.service.access import TOKEN_VARIABLE, TokenGuard, auth_token
from rlfactory_envs.service.episodes import MIB, EpisodeTable, ServedEnv, ServiceLimits
from rlfactory_tool_servers.http_guard import is_loopback
from rlfactory_tool_servers.launch import LOG_FORMAT, LOG_LEVELS, AnnouncingServer, http_url

PROTOCOLS = {"openenv": (openenv.OpenEnvService, openenv.build_app), "ors": (ors.OrsService, ors.build_app)}
"""Each protocol's service (it answers the protocol for an ``EpisodeTable``) and the ASGI app of a service."""
PROTOCOL_NAMES = {"openenv": "OpenEnv (HTTP + WebSocket /ws)", "ors": "the Open Reward Standard"}


def options_parser(prog: str) -> argparse.ArgumentParser:
    defaults = ServiceLimits()
    parser = argparse.ArgumentParser(
        prog=prog, allow_abbrev=False,
        description="Serve an rlf env to trainers that take environments as services: OpenEnv's HTTP/WebSocket API "
                    "(TRL, torchforge, SkyRL, Unsloth, ...: openenv-core's EnvClient) or the Open Reward Standard "
                    "(the openreward client, TRL's OpenRewardSpec). One env per session, every session on one "
                    "runtime: the tool calls of sessions that step together are merged.")
    parser.add_argument("env", metavar="ID_OR_SPEC", help="a registered id (see `rlf list`) or an env spec file")
    parser.add_argument("--protocol", choices=sorted(PROTOCOLS), required=True,
                        help="openenv: OpenEnv's API; ors: the Open Reward Standard")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="env keyword argument (JSON value or string), e.g. --set max_turns=6; repeatable")
    parser.add_argument("--env-kwargs", metavar="JSON", help="env keyword arguments as one JSON object")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1, loopback only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    parser.add_argument("--auth-token", default=None,
                        help=f"require this token on every request (default: ${TOKEN_VARIABLE} if set): "
                             "Authorization: Bearer TOKEN, X-API-Key: TOKEN, or http://rlf:TOKEN@HOST:PORT")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="warning",
                        help="warning (default): the start line and problems; info: also the access log")
    limits = parser.add_argument_group("limits")
    limits.add_argument("--max-sessions", type=positive_int, default=defaults.max_sessions, metavar="N",
                        help=f"sessions open at once (default {defaults.max_sessions}); one more is refused "
                             "(OpenEnv: CAPACITY_REACHED; ORS: 503)")
    limits.add_argument("--idle-timeout-s", type=positive_float, default=defaults.idle_timeout_s, metavar="SECONDS",
                        help=f"a session without a request this long is closed (default {defaults.idle_timeout_s:g})")
    limits.add_argument("--max-request-bytes", type=positive_int, default=defaults.max_request_bytes,
                        metavar="BYTES", help=f"largest request body or WebSocket frame (default "
                                              f"{defaults.max_request_bytes // MIB} MiB; over it: 413, or the "
                                              "connection is closed)")
    limits.add_argument("--step-timeout-s", type=positive_float, default=defaults.step_timeout_s, metavar="SECONDS",
                        help=f"a reset or step slower than this is cancelled (default {defaults.step_timeout_s:g})")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "rlf serve env") -> int:
    """Serve until stopped; 2 on a user's mistake (one line on stderr)."""
    args = options_parser(prog).parse_args(list(sys.argv[1:] if argv is None else argv))
    return run_command(prog, lambda: serve(args, prog), debug=args.debug)


def serve(args: argparse.Namespace, prog: str) -> int:
    """Build the env, then serve it until stopped."""
    kwargs = env_kwargs_from_options(args.env, args.set, args.env_kwargs)
    limits = ServiceLimits(max_sessions=args.max_sessions, idle_timeout_s=args.idle_timeout_s,
                           max_request_bytes=args.max_request_bytes, step_timeout_s=args.step_timeout_s)
    logging.basicConfig(level=args.log_level.upper(), format=LOG_FORMAT, stream=sys.stderr, force=True)
    served = ServedEnv.open(args.env, kwargs)
    try:
        app = build(args.protocol, EpisodeTable(served, limits))
        token = auth_token(args.auth_token)
        if token is not None:
            app = TokenGuard(app, token)
        elif not is_loopback(args.host):
            print(f"{prog}: WARNING: listening on {args.host} with no --auth-token: anyone who can reach this port "
                  f"can play the env. Set --auth-token (or {TOKEN_VARIABLE}), or bind to 127.0.0.1.",
                  file=sys.stderr, flush=True)
        run(app, args, limits, lambda port: announce(prog, args, served, port))
    finally:
        served.close()
    return 0


def build(protocol: str, table: EpisodeTable) -> Any:
    """The ASGI app serving ``table``'s env over ``protocol``."""
    service_class, build_app = PROTOCOLS[protocol]
    return build_app(service_class(table))


def run(app: Any, args: argparse.Namespace, limits: ServiceLimits, on_listening: Any) -> None:
    """Serve ``app`` with uvicorn until stopped; file descriptors raised to the hard limit first (a session is a
    connection)."""
    _raise_open_files()
    _settle_garbage_collector()
    config = uvicorn_config(app, args.host, args.port, limits, args.log_level)
    AnnouncingServer(config, on_listening).run()


def uvicorn_config(app: Any, host: str, port: int, limits: ServiceLimits, log_level: str = "warning",
                   ) -> uvicorn.Config:
    """How a door is served: frames bounded by ``max_request_bytes``, dead WebSocket clients found by pings every
    20 s, a listen backlog for a burst of ``max_sessions`` connections. WebSockets by the ``websockets`` library's
    sans-I/O protocol, which parses frames as they arrive with no task of its own per connection (the legacy one's
    reader and keepalive tasks cost about a third of a step's server CPU)."""
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, log_config=None,
                          ws="websockets-sansio",
                          access_log=log_level in ("info", "debug"), ws_max_size=limits.max_request_bytes,
                          ws_ping_interval=20.0, ws_ping_timeout=20.0, ws_per_message_deflate=False,
                          backlog=min(max(2048, limits.max_sessions), 65535), timeout_keep_alive=60)


def announce(prog: str, args: argparse.Namespace, served: ServedEnv, port: int) -> None:
    if args.log_level == "error":
        return
    given = f" (env kwargs: {json.dumps(served.kwargs, sort_keys=True, default=str)})" if served.kwargs else ""
    print(f"{prog}: serving {served.env_id} over {PROTOCOL_NAMES[args.protocol]} at "
          f"{http_url(args.host, port, '')}{given}", file=sys.stderr, flush=True)


def _settle_garbage_collector() -> None:
    """What is built before serving (modules, the env's runtime and tasks) moved out of the cyclic collector's
    sight, and a young collection every 20,000 new objects rather than 700: a step's garbage is freed by reference
    counting, and thousands of sessions' live objects made each collection cost a sixth of the server's CPU."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, *gc.get_threshold()[1:])


def _raise_open_files() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 1 << 20, hard))
