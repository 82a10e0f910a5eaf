"""The ``rlf`` command: ``rollout`` (the main job), ``audit`` (known reward hacks against an env's reward), ``serve``
(a tool server), ``bench``, ``list``, and the commands the families bring (``Family.commands``: the search family's
``index``, which builds a search index over a corpus or describes one, and the travel family's ``eval-plans``,
TravelPlanner's official scoring of a submission file)."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlfactory_envs.command_errors import DEBUG_HELP, run_command
from rlfactory_envs.command_options import env_kwargs_from_options, json_object, positive_int, unit_interval
from rlfactory_envs.env_spec import make_env, resolve
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.families import FamilyCommand, discover_servers, tooling_of
from rlfactory_envs.registry import ENVIRONMENTS, FAMILIES
from rlfactory_envs.rollout.model_free import ReferencePolicy, ReplayPolicy
from rlfactory_envs.rollout.chat_request import TOOL_MODES
from rlfactory_envs.rollout.policy import OpenAIChatPolicy
from rlfactory_envs.rollout.runner import run_rollouts
from rlfactory_envs.rollout.task_plan import TASK_ORDERS
from rlfactory_envs.view.command import COMMAND as VIEW

SERVER_PACKAGE = "rlfactory_tool_servers"
ENV_SERVER = "rlfactory_envs.service.command"
"""``rlf serve env``: an env over OpenEnv's API or the Open Reward Standard, for trainers that take services."""
REWARD_SERVER = "rlfactory_adapters.reward_server"
"""``rlf serve reward``: an env's reward over HTTP for OpenRLHF; imported by name (the core never imports the
adapters)."""


def rollout(args: argparse.Namespace) -> int:
    """Run the episodes; 1 when some failed for a reason outside the model, or when every episode's reward (or a
    term of it: a judge) failed (the summary names why), else 0."""
    kwargs = env_kwargs_from_options(args.env_id, args.set, args.env_kwargs)  # a bad setting fails before any output is opened
    factory = policy_factory(args)
    out_path = Path(args.out) if args.out else None
    if out_path is not None:
        out_path.parent.mkdir(parents=True, exist_ok=True)
    out = out_path.open("w", encoding="utf-8") if out_path else None
    try:
        summary, _ = asyncio.run(run_rollouts(args.env_id, factory, args.n, order=args.order, repeat=args.repeat,
                                              batch_size=args.batch_size, seed=args.seed, env_kwargs=kwargs,
                                              out=out, progress=not args.no_progress))
    finally:
        if out is not None:
            out.close()
    print(summary.table())
    if out_path:
        print(f"trajectories: {out_path}")
    if args.summary_json:
        Path(args.summary_json).write_text(json.dumps(summary.__dict__, indent=2) + "\n", encoding="utf-8")
    if summary.failed:
        print(f"rlf rollout: {summary.failed} of {summary.episodes} episodes failed for a reason outside the model "
              f"(see 'failed because' above)", file=sys.stderr)
        return 1
    if summary.rewards_unusable:
        print(f"rlf rollout: {summary.rewards_unusable}: the rewards cannot be used", file=sys.stderr)
        return 1
    return 0


def policy_factory(args: argparse.Namespace) -> Callable[[Any], Any]:
    """A factory of the policy ``--policy`` names (default: ``replay`` with ``--replay``, else ``scripted``), given
    the rollout's first env; ``ConfigError`` for an option it lacks."""
    policy = args.policy or ("replay" if args.replay else "scripted")
    if args.replay and policy != "replay":
        raise ConfigError(f"--replay goes with --policy replay, not --policy {policy}")
    if policy == "openai":
        return openai_factory(args)
    if policy == "reference":
        return lambda env: ReferencePolicy()
    if policy == "replay":
        if not args.replay:
            raise ConfigError("--policy replay needs --replay FILE (a trajectory file, or task_id/responses lines)")
        replayed = ReplayPolicy(args.replay)
        return lambda env: replayed
    return lambda env: tooling_of(env).baseline_policy(env)


def openai_factory(args: argparse.Namespace) -> Callable[[Any], Any]:
    """``--policy openai``'s factory, its options checked."""
    if not args.model:
        raise ConfigError("--policy openai needs --model (the served model name)")
    extra = json_object("--extra-body", args.extra_body, example='{"top_p": 0.95}')
    if args.repeat > 1 and args.temperature == 0:
        warnings.warn(f"--repeat {args.repeat} at --temperature 0 samples each task {args.repeat} times the same way; "
                      "pass --temperature 1.0 (or your sampling temperature) for pass@k", stacklevel=1)
    return lambda env: OpenAIChatPolicy(args.base_url, args.model, api_key=args.api_key, temperature=args.temperature,
                                        max_tokens=args.max_tokens, extra_body=extra, tool_mode=args.tool_mode)


def audit(args: argparse.Namespace) -> int:
    """Run the reward-hack battery on ``args.env_id``; 0 when it passes, 1 when a hack or the control fails."""
    from rlfactory_envs.audit import run_audit

    kwargs = env_kwargs_from_options(args.env_id, args.set, args.env_kwargs)
    report = run_audit(args.env_id, n_tasks=args.n, env_kwargs=kwargs, only=args.only, max_rate=args.max_rate,
                       min_control_rate=args.min_control_rate, batch_size=args.batch_size, seed=args.seed)
    print(report.table())
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    return 0 if report.passed else 1


def serve(args: argparse.Namespace, rest: list[str]) -> int:
    """Run a tool server; a family's embedded sample stands in for the data options the user gives none of.
    ``-h`` shows this command's help, or after a server's name the server's own."""
    from rlfactory_tool_servers.launch import serve as serve_server

    if args.server is None:
        if args.help:
            args.serve_parser.print_help()
            return 0
        args.serve_parser.error("name the server to run, e.g. `rlf serve search` (`rlf serve -h` lists them)")
    if args.server == "env":
        env_server = importlib.import_module(ENV_SERVER)
        return env_server.main([*rest, "--help"] if args.help else rest, prog="rlf serve env")
    if args.server == "reward":
        reward_server = importlib.import_module(REWARD_SERVER)
        return reward_server.main([*rest, "--help"] if args.help else rest, prog="rlf serve reward")
    package = importlib.import_module(f"{SERVER_PACKAGE}.{args.server}")
    samples = {option: value for family in FAMILIES
               for option, value in family.serve_defaults.get(args.server, {}).items()}
    serve_server(package, [*rest, "--help"] if args.help else rest, prog=f"rlf serve {args.server}", samples=samples)
    return 0


def bench(rest: list[str]) -> int:
    """Run ``benchmarks/env_bench.py`` of the source checkout this package is installed from, as a process of its
    own (the installed package never imports what it does not ship)."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "env_bench.py"
    if not script.is_file():
        raise ConfigError(f"rlf bench runs the benchmarks of a source checkout; there are none at {script} (install "
                          "the project with `pip install -e .` from a clone)")
    return subprocess.run([sys.executable, str(script), *rest]).returncode


def list_envs(refs: list[str]) -> int:
    """The registered ids with what they are; each env spec given is checked as ``make`` checks it (made, its tool
    servers started and their tools listed, its first task reset) and shown with the id and settings it resolves
    to. A spec that fails raises the error ``make`` raises (exit status 2)."""
    width = max(len(env_id) for env_id in ENVIRONMENTS)
    for env_id, entry in ENVIRONMENTS.items():
        print(f"{env_id:<{width}}  {entry.description}".rstrip())
    for ref in refs:
        spec = resolve(ref)
        print(f"{ref}: {spec.env_id} {json.dumps(spec.kwargs, sort_keys=True)}")
        print(f"{ref}: ok: {checked_env(ref)}")
    return 0


def checked_env(ref: str) -> str:
    """What the env ``ref`` names holds, in a few words, after making it and resetting its first task."""
    env = make_env(ref)
    try:
        env.reset(seed=0, options={"task_id": env.tasks[0].task_id})
        tools = [spec.name for spec in env.tool_specs]
        return (f"{len(env.tasks)} tasks in {env.tasks.name}, tools {', '.join(tools) or '(none)'}, reward range "
                f"{list(env.reward_range)}")
    finally:
        env.close()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlf", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument("--debug", action="store_true", help=DEBUG_HELP)

    ro = sub.add_parser("rollout", parents=[debug],
                        help="run episodes with a policy and write trajectories as JSONL")
    ro.add_argument("env_id", help="a registered id, e.g. rlf/Search-NQ-v0 (see `rlf list`), or an env spec file "
                    "(.yaml/.json)")
    ro.add_argument("--policy", choices=["scripted", "openai", "reference", "replay"], default=None,
                    help="scripted (default): the env's offline baseline; openai: an OpenAI-compatible chat endpoint; "
                    "reference: answers each task's reference answer (its ground truth), for any env, no model; "
                    "replay: replays the responses of --replay FILE")
    ro.add_argument("--replay", metavar="FILE", help="the file --policy replay replays: a trajectory file "
                    "(rlf rollout --out) or lines {\"task_id\": ..., \"responses\": [...]}")
    ro.add_argument("-n", type=positive_int, default=None,
                    help="tasks to play (default: every task of the dataset); with --order random, episodes")
    ro.add_argument("--order", choices=TASK_ORDERS, default="ordered",
                    help="ordered (default): the first N tasks in the dataset's order, each once; shuffled: N tasks "
                    "drawn without repeats, shuffled by --seed; random: each episode draws its task from its seed, "
                    "with replacement")
    ro.add_argument("--repeat", type=positive_int, default=1, metavar="K",
                    help="play each task K times in a row (samples for pass@k, GRPO-like groups; default 1)")
    ro.add_argument("--batch-size", type=positive_int, default=64, help="episodes stepped together (default 64)")
    ro.add_argument("--seed", type=int, default=0,
                    help="episode i is reset with seed+i; shuffles the tasks with --order shuffled (default 0)")
    ro.add_argument("--out", help="trajectories JSONL file")
    ro.add_argument("--summary-json", help="also write the summary as JSON here")
    ro.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="env keyword argument (JSON value or string), e.g. --set max_turns=6; repeatable")
    ro.add_argument("--env-kwargs", help="env keyword arguments as one JSON object")
    ro.add_argument("--base-url", default="http://127.0.0.1:8000/v1", help="OpenAI-compatible endpoint")
    ro.add_argument("--model", help="model name served at --base-url")
    ro.add_argument("--api-key", default="EMPTY")
    ro.add_argument("--temperature", type=float, default=0.0)
    ro.add_argument("--max-tokens", type=int, default=1024)
    ro.add_argument("--extra-body", help="JSON merged into each request (e.g. vLLM sampling options)")
    ro.add_argument("--tool-mode", choices=TOOL_MODES, default="native",
                    help="native (default): the history with structured tool_calls answered by tool messages with "
                    "their tool_call_id (any OpenAI-compatible server); text: the calls as the model's raw text and "
                    "the results as user messages, for a server without a tool parser")
    ro.add_argument("--no-progress", action="store_true", help="no progress bar")

    au = sub.add_parser("audit", parents=[debug], help="run known reward hacks against an env's reward; exit 1 when one earns "
                        "reward on more than --max-rate of the tasks, or the reference answer does not earn it")
    au.add_argument("env_id", help="a registered id (see `rlf list`) or an env spec file (.yaml/.json)")
    au.add_argument("-n", "--n", type=positive_int, default=50,
                    help="tasks every hack plays (default 50; at most the dataset's, each once)")
    au.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="env keyword argument (JSON value or string), e.g. --set strict=true; repeatable")
    au.add_argument("--env-kwargs", help="env keyword arguments as one JSON object")
    au.add_argument("--max-rate", type=unit_interval, default=0.02,
                    help="a hack fails when it earns reward on more than this share of tasks (default 0.02)")
    au.add_argument("--min-control-rate", type=unit_interval, default=0.9,
                    help="the reference answer must earn reward on at least this share of tasks (default 0.9)")
    au.add_argument("--only", nargs="+", action="extend", metavar="NAME",
                    help="run only these hacks (the control always runs)")
    au.add_argument("--json", metavar="PATH", help="also write the report as JSON here")
    au.add_argument("--batch-size", type=positive_int, default=64, help="episodes stepped together (default 64)")
    au.add_argument("--seed", type=int, default=0, help="shuffles which tasks are played (default 0)")

    # No -h of argparse's: `rlf serve NAME -h` must reach the server's own help (see serve).
    sv = sub.add_parser("serve", add_help=False,
                        help="run a tool server, an env for trainers (`rlf serve env`), or an env's reward server "
                             "(`rlf serve NAME -h` shows its options)",
                        description="Run a tool server: stdio by default, streamable HTTP with --transport http. "
                        "A family's server given none of its data options serves the family's embedded sample. "
                        "`rlf serve env ID --protocol openenv|ors` serves an env over OpenEnv's API or the Open "
                        "Reward Standard. "
                        "`rlf serve reward --env ID` serves an env's reward over HTTP for OpenRLHF's remote reward "
                        "model.")
    servers = [*discover_servers(SERVER_PACKAGE), "env", "reward"]
    sv.add_argument("server", nargs="?", choices=servers, metavar="NAME", help=f"one of {', '.join(servers)}")
    sv.add_argument("-h", "--help", action="store_true", help="show this help, or after NAME the server's options")
    sv.set_defaults(serve_parser=sv)

    sub.add_parser("bench", help="run the benchmarks (extra arguments go to the benchmark, see `rlf bench -h`)",
                   add_help=False)
    for command in [VIEW, *family_commands().values()]:
        command.add_arguments(sub.add_parser(command.name, parents=[debug], help=command.help))
    ls = sub.add_parser("list", parents=[debug], help="list the registered environment ids; check given env specs as "
                        "make does (servers started, data and reward loaded, first task reset)")
    ls.add_argument("specs", nargs="*", help="env spec files (or ids) to check and show")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args.command == "serve":
        return serve(args, rest)
    if args.command == "bench":
        return bench(rest)
    if rest:
        parser.error(f"unrecognised arguments: {' '.join(rest)}")
    commands = {**COMMANDS, VIEW.name: VIEW.run, **{name: command.run for name, command in family_commands().items()}}
    return run_command(f"rlf {args.command}", lambda: commands[args.command](args), debug=args.debug)


def family_commands() -> dict[str, FamilyCommand]:
    """The commands the families bring (``Family.commands``: search's ``index``, travel's ``eval-plans``), by name."""
    return {command.name: command for family in FAMILIES for command in family.loaded_commands()}


COMMANDS = {"rollout": rollout, "audit": audit, "list": lambda args: list_envs(args.specs)}


if __name__ == "__main__":
    sys.exit(main())
