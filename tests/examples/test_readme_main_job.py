"""The README's main job (its first code block) writes its trajectories under runs/, which git ignores, as do the
files the example scripts write."""

from __future__ import annotations

import json
import re
import shlex
import subprocess

import pytest

from tests.conftest import REPO_ROOT
from tests.examples.helpers import run_example


def main_job_commands() -> list[str]:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"```bash\n(.*?)```", readme, re.DOTALL).group(1)
    [line] = [line for line in first_block.splitlines() if "rlf rollout" in line]
    return [command.strip() for command in line.split("&&")]


def test_the_readme_main_job_writes_its_trajectories_under_runs(tmp_path):
    commands = [c for c in main_job_commands() if not c.startswith(("python3 -m venv", ".venv/bin/pip"))]
    assert commands[-1].startswith(".venv/bin/rlf rollout"), commands
    for command in commands:  # the checkout's venv is already set up: run the rest in a fresh folder
        words = shlex.split(command)
        words[0] = "rlf" if words[0] == ".venv/bin/rlf" else words[0]
        run_example(words, cwd=tmp_path)
    out = shlex.split(commands[-1])[shlex.split(commands[-1]).index("--out") + 1]
    assert out.startswith("runs/")
    records = [json.loads(line) for line in (tmp_path / out).read_text().splitlines()]
    assert len(records) == 60 and sum(r["reward"] for r in records) > 0  # every question of the sample, once
    assert [r["task_id"] for r in records] == [f"rlf-sample-{i:03d}" for i in range(60)]


@pytest.mark.parametrize("path", ["runs/trajectories.jsonl", "trajectories.jsonl", "trajectories_http.jsonl",
                                  "eval_Qwen3-4B.jsonl", "eval_summary.json"])
def test_git_ignores_what_the_readme_and_the_examples_write(path):
    if not (REPO_ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    done = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=REPO_ROOT, check=False)
    assert done.returncode == 0, f"git does not ignore {path}"
