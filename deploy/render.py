"""Write a supervisord config that runs N replicas of one tool server as plain processes on this host, and the
``mcpServers`` document that reaches every replica on every host (an entry with ``urls``).

    python deploy/render.py --server search --replicas 4 --base-port 8101 --hosts tools-1,tools-2 --out DIR \\
        -- --corpus /data/wiki-18.jsonl --index-dir /data/idx/bm25

writes ``DIR/supervisord.conf`` (copy it to each host) and ``DIR/mcp_servers.replicas.json`` (for the trainer),
and makes ``DIR/logs/``. Arguments after ``--`` are the server's own options. Replica ``k`` listens on port
``base_port + k``: supervisord's ``numprocs_start`` is the base port and each process's ``process_num`` its port
(supervisord does no arithmetic in its config), so the processes are named ``rlf-search_8101`` and so on. The
bearer token is read from ``RLF_MCP_AUTH_TOKEN`` in supervisord's environment (``environment=`` below: supervisord
refuses to start when it is unset, so a replica never listens without one); the JSON carries ``--token`` (default:
``$RLF_MCP_AUTH_TOKEN``, else a placeholder to replace).

``deploy/supervisord.conf`` and ``deploy/mcp_servers.replicas.json`` are this script's output for the arguments
on the conf's first line (``tests/test_deploy.py`` checks that they agree).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

TOKEN_VARIABLE = "RLF_MCP_AUTH_TOKEN"
TOKEN_PLACEHOLDER = "CHANGE-ME"
CONF_NAME = "supervisord.conf"
JSON_NAME = "mcp_servers.replicas.json"

CONF_TEMPLATE = """\
; written by: python deploy/render.py {argv}
; Run: RLF_MCP_AUTH_TOKEN=... supervisord -c {conf_name}   (then: supervisorctl -c {conf_name} status)
; {replicas} replicas of `{server}` on ports {first_port}-{last_port}; logs in logs/ beside this file.

[unix_http_server]
file=%(here)s/supervisor.sock
chmod=0700

[supervisorctl]
serverurl=unix://%(here)s/supervisor.sock

[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface

[supervisord]
logfile=%(here)s/logs/supervisord.log
pidfile=%(here)s/supervisord.pid
childlogdir=%(here)s/logs
nodaemon={nodaemon}

[program:{program}]
; process_num runs from numprocs_start: it is the replica's port
command={command} --transport http --host {bind} --port %(process_num)d{allowed_hosts} --log-level warning
process_name=%(program_name)s_%(process_num)d
numprocs={replicas}
numprocs_start={base_port}
; the token comes from supervisord's own environment; unset, supervisord refuses to start
environment={token_variable}="%(ENV_{token_variable})s"
autostart=true
autorestart=true
startsecs=2
startretries=10
stopsignal=TERM
stopwaitsecs=10
stopasgroup=true
killasgroup=true
stdout_logfile=%(here)s/logs/%(program_name)s_%(process_num)d.out.log
stderr_logfile=%(here)s/logs/%(program_name)s_%(process_num)d.err.log
stdout_logfile_maxbytes=10MB
stderr_logfile_maxbytes=10MB
"""


def default_rlf() -> str:
    """The ``rlf`` script beside this interpreter (a venv's bin/), else ``rlf`` (found on supervisord's PATH)."""
    beside = Path(sys.executable).with_name("rlf")
    return str(beside) if beside.is_file() else "rlf"


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python deploy/render.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", default="search", help="the tool server (`rlf serve NAME`): search, sql, travel, "
                        "android, ...")
    parser.add_argument("--replicas", type=int, default=4, help="server processes on each host (default 4)")
    parser.add_argument("--base-port", type=int, default=8101, help="the first replica's port (default 8101)")
    parser.add_argument("--bind", default="0.0.0.0", help="address the replicas listen on (default 0.0.0.0)")
    parser.add_argument("--hosts", default="127.0.0.1",
                        help="comma-separated names clients reach the hosts by (they become the URLs, and "
                             "--allowed-hosts when --bind is not loopback)")
    parser.add_argument("--rlf", default=None, help="the rlf command (default: the one beside this Python)")
    parser.add_argument("--command", default=None,
                        help="the server command instead of `RLF serve SERVER` (shell words; e.g. "
                             "'python -m rlfactory_tool_servers.faulty')")
    parser.add_argument("--token", default=None,
                        help=f"the bearer token written into the JSON (default: ${TOKEN_VARIABLE}, else "
                             f"{TOKEN_PLACEHOLDER!r})")
    parser.add_argument("--timeout-s", type=float, default=30.0, help="the toolbox's deadline per request")
    parser.add_argument("--nodaemon", action="store_true", help="supervisord stays in the foreground")
    parser.add_argument("--out", default=".", help="output folder (default: here)")
    own, extra = (list(argv), []) if "--" not in argv else (list(argv[:argv.index("--")]),
                                                            list(argv[argv.index("--") + 1:]))
    args = parser.parse_args(own)
    if args.replicas < 1 or not (0 < args.base_port and args.base_port + args.replicas <= 65536):
        parser.error("--replicas must be at least 1 and the ports within 1-65535")
    args.server_args = extra
    args.argv = list(argv)
    return args


def render_conf(args: argparse.Namespace) -> str:
    hosts = [host for host in args.hosts.split(",") if host]
    loopback = args.bind in ("127.0.0.1", "localhost", "::1")
    command = shlex.split(args.command) if args.command else [args.rlf or default_rlf(), "serve", args.server]
    return CONF_TEMPLATE.format(
        argv=shlex.join(args.argv), conf_name=CONF_NAME, replicas=args.replicas, server=args.server,
        first_port=args.base_port, last_port=args.base_port + args.replicas - 1, program=f"rlf-{args.server}",
        command=shlex.join([*command, *args.server_args]).replace("%", "%%"), bind=args.bind,
        allowed_hosts="" if loopback else f" --allowed-hosts {','.join(hosts)}", base_port=args.base_port,
        token_variable=TOKEN_VARIABLE, nodaemon=str(args.nodaemon).lower())


def render_servers(args: argparse.Namespace) -> dict:
    token = args.token or os.environ.get(TOKEN_VARIABLE) or TOKEN_PLACEHOLDER
    urls = [f"http://{host}:{port}/mcp" for host in args.hosts.split(",") if host
            for port in range(args.base_port, args.base_port + args.replicas)]
    entry = {"urls": urls, "headers": {"Authorization": f"Bearer {token}"}, "timeout_s": args.timeout_s}
    return {"mcpServers": {args.server: entry}}


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    (out / CONF_NAME).write_text(render_conf(args), encoding="utf-8")
    (out / JSON_NAME).write_text(json.dumps(render_servers(args), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out / CONF_NAME} and {out / JSON_NAME}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
