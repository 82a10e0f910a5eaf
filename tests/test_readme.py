"""The README's "Your own environment in 5 minutes" runs as written: its files are examples/custom_env/, its Python
block plays the env, its shell block checks the spec and writes verl data."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_DIR = REPO_ROOT / "examples" / "custom_env"
BLOCK_RE = re.compile(r"<!-- example: (\S+) -->\n```[a-z]*\n(.*?)```", re.DOTALL)


def blocks(page: str = "README.md") -> dict[str, str]:
    """The ``<!-- example: NAME -->`` blocks of ``page`` (a path from the repository root), by name."""
    return dict(BLOCK_RE.findall((REPO_ROOT / page).read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", ["calc_server.py", "questions.jsonl", "rewards.py", "env.yaml"])
def test_the_readme_shows_the_example_files_as_they_are(name):
    assert blocks()[name] == (EXAMPLE_DIR / name).read_text(encoding="utf-8")


def test_the_readme_python_block_runs():
    done = subprocess.run([sys.executable, "-c", blocks()["python"]], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_readme_shell_block_runs(tmp_path):
    commands = [line for line in blocks()["shell"].splitlines() if line.strip() and not line.startswith("#")]
    assert commands, "the shell block has no commands"
    for command in commands:
        words = shlex.split(command.split("  #")[0])
        words = [sys.executable, "-m", "rlfactory_envs.cli", *words[1:]] if words[0] == "rlf" else \
            [sys.executable, *words[1:]] if words[0] == "python" else words
        words = [str(REPO_ROOT / word) if word.startswith("examples/") else word for word in words]
        done = subprocess.run(words, cwd=tmp_path, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, (command, done.stderr)
    rows = pq.read_table(tmp_path / "data" / "train.parquet").to_pylist()
    assert len(rows) == 3 and rows[0]["extra_info"]["env_id"] == "rlf/MCP-v0"
