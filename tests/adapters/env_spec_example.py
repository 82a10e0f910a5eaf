"""What both adapters' env-spec tests expect of the README's example spec (examples/custom_env/env.yaml)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO_ROOT

SPEC = REPO_ROOT / "examples" / "custom_env" / "env.yaml"


def expected_env_kwargs(folder: Path) -> dict:
    """The settings a row of the spec copied into ``folder`` carries: the spec's own, its paths made absolute."""
    return {
        "tool_servers": {"mcpServers": {"calc": {"command": "python", "args": ["calc_server.py"],
                                                 "cwd": str(folder)}}},
        "data_path": str(folder / "questions.jsonl"),
        "reward": "rewards:numeric_match",
        "max_turns": 4,
        "python_path": [str(folder)],
    }
