"""``python -m rlfactory_adapters.prepare_data``: write a trainer's data file from an rlf env's tasks.

    python -m rlfactory_adapters.prepare_data --trainer verl --env rlf/Search-NQ-v0 --out data/search_nq/train.parquet
    python -m rlfactory_adapters.prepare_data --trainer openrlhf --env rlf/Search-NQ-v0 \\
        --out data/search_nq/train.jsonl \\
        --tokenizer Qwen/Qwen3-4B

``--env-kwargs`` (JSON) reaches ``gym.make`` here and, through the rows, in the trainer: e.g.
``'{"data_path": "nq_train.jsonl", "corpus_path": "wiki18.jsonl"}'``. Paths in it must be valid on the training
hosts as well.
"""

from __future__ import annotations

import argparse
import json

from rlfactory_adapters.task_rows import VERL_AGENT_NAME, task_rows, write_openrlhf_jsonl, write_verl_parquet
from rlfactory_envs.command_errors import DEBUG_HELP, run_command
from rlfactory_envs.kernel.errors import ConfigError, require_extra


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m rlfactory_adapters.prepare_data",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--trainer", choices=["verl", "openrlhf"], required=True)
    parser.add_argument("--env", required=True, help="an rlf/* id or an env spec file (.yaml/.json)")
    parser.add_argument("--out", required=True, help="the file to write (.parquet for verl, .jsonl for openrlhf)")
    parser.add_argument("--env-kwargs", default="{}", help="JSON object of gym.make kwargs")
    parser.add_argument("--limit", type=int, default=None, help="at most this many tasks")
    parser.add_argument("--start", type=int, default=0, help="the first task's position in the dataset")
    parser.add_argument("--split", default="train", help="verl: extra_info.split")
    parser.add_argument("--agent-name", default=VERL_AGENT_NAME, help="verl: the agent_name column")
    parser.add_argument("--tokenizer", default=None,
                        help="openrlhf: render each prompt with this tokenizer's chat template and the tool schemas")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return run_command("python -m rlfactory_adapters.prepare_data", lambda: prepare(args), debug=args.debug)


def prepare(args: argparse.Namespace) -> int:
    """Write the rows ``args`` ask for; ``ConfigError`` (or another user error) when the env cannot be made."""
    try:
        env_kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--env-kwargs is not valid JSON ({exc})") from None
    if not isinstance(env_kwargs, dict):
        raise ConfigError("--env-kwargs must be a JSON object")
    rows = task_rows(args.env, env_kwargs, limit=args.limit, start=args.start)
    if args.trainer == "verl":
        count = write_verl_parquet(rows, args.out, agent_name=args.agent_name, split=args.split)
    else:
        tokenizer = None
        if args.tokenizer:
            require_extra("transformers", "adapters", "--tokenizer")
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
        count = write_openrlhf_jsonl(rows, args.out, tokenizer)
    print(f"wrote {count} rows of {args.env} to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
