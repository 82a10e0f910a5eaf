"""``rlf view RUN [RUN ...]``: the trajectory and reward viewer, in the browser; ``--export report.html`` writes it
as one self-contained file instead of serving it."""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import time
from pathlib import Path

from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.families import FamilyCommand
from rlfactory_envs.view.access import is_loopback_host
from rlfactory_envs.view.runs import open_run
from rlfactory_envs.view.viewer_data import NamedRun, named_runs

TOKEN_VARIABLE = "RLF_VIEW_AUTH_TOKEN"
DEFAULT_PORT = 8765
SWITCH_INTERVAL_S = 0.0005
"""How long the indexing thread may hold the GIL while a request waits: every read and write of a request waits that
long again (a page opened as 100,000 episodes began indexing drew its first rows after 1.3 s at Python's default,
5 ms; after 0.7 s at 0.5 ms)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help="a trajectory file (rlf rollout --out, an adapter's trajectory log), a folder of them "
                        "(one run), or an rlf audit --json report; several to switch between and compare")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any free)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1; another needs --auth-token)")
    parser.add_argument("--auth-token", default=None,
                        help=f"token a browser must present (the printed address carries it); default "
                        f"${TOKEN_VARIABLE}; required beyond loopback")
    parser.add_argument("--export", metavar="HTML", help="write the viewer as one self-contained HTML file and exit")
    parser.add_argument("--export-episodes", type=int, default=200, metavar="N",
                        help="episode pages per run the export holds (default 200; the table holds every episode)")


def run(args: argparse.Namespace) -> int:
    """Index the runs, then export them or serve them until interrupted."""
    runs = named_runs([(Path(path), open_run(path)) for path in args.runs])
    for named in runs:
        named.run.start()
    if args.export:
        return export(runs, Path(args.export), args.export_episodes)
    return serve(runs, args.host, args.port, auth_token(args.auth_token, args.host))


def auth_token(given: str | None, host: str) -> str | None:
    """The token to require: ``--auth-token``, else the environment variable; ``ConfigError`` when ``host`` is
    beyond loopback and there is none."""
    token = given or os.environ.get(TOKEN_VARIABLE) or None
    if token is None and not is_loopback_host(host):
        raise ConfigError(f"rlf view --host {host!r} listens beyond this machine: give --auth-token TOKEN (or set "
                          f"{TOKEN_VARIABLE}), e.g. --auth-token {secrets.token_urlsafe(16)}")
    return token


def export(runs: list[NamedRun], out: Path, max_episodes: int) -> int:
    from rlfactory_envs.view.export import export_html

    started = time.perf_counter()
    for named in runs:
        named.run.wait()
    held = export_html(runs, out, max_episodes=max(0, max_episodes))
    size = out.stat().st_size / 2**20
    pages = ", ".join(f"{name}: {count}" for name, count in held.items())
    print(f"wrote {out} ({size:.1f} MB, {time.perf_counter() - started:.1f} s); episode pages held: {pages}")
    return 0


def serve(runs: list[NamedRun], host: str, port: int, token: str | None) -> int:
    """Serve the viewer until interrupted, printing its address once the port is open."""
    import uvicorn

    from rlfactory_envs.view.server import build_app

    sys.setswitchinterval(SWITCH_INTERVAL_S)
    app = build_app(runs, token=token, loopback=is_loopback_host(host))
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", limit_concurrency=64,
                            h11_max_incomplete_event_size=64 * 1024)
    server = uvicorn.Server(config)
    sockets = [config.bind_socket()]
    sockets[0].listen(config.backlog)  # a connection made as soon as the address is printed waits, not refused
    bound = sockets[0].getsockname()[1]
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    query = f"?token={token}" if token else ""
    print(f"rlf view: {len(runs)} run(s) at http://{shown}:{bound}/{query} (Ctrl-C stops)", flush=True)
    server.run(sockets=sockets)
    return 0


COMMAND = FamilyCommand(name="view", help="see trajectories and rewards in the browser (or --export an HTML file)",
                        add_arguments=add_arguments, run=run)

