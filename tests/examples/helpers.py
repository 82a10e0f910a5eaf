"""What the example tests share: run an example as a reader would, with this checkout's `rlf` first on PATH."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import REPO_ROOT
from tests.server_process import server_process

EXAMPLES = REPO_ROOT / "examples"
VENV_BIN = Path(sys.executable).parent  # the interpreter running the tests, and the `rlf` installed beside it


def script_env(**overrides: str) -> dict[str, str]:
    """The environment an example script runs in: this venv's bin folder first on PATH (the scripts call `rlf`)."""
    assert (VENV_BIN / "rlf").exists(), f"no rlf beside {sys.executable}: install the project (pip install -e .)"
    return {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", **overrides}


def run_example(args: list[str], cwd: Path, timeout_s: float = 60, expect_ok: bool = True,
                **env: str) -> subprocess.CompletedProcess:
    """Run ``args`` (e.g. ``["bash", "examples/x.sh"]``; paths under examples/ are made absolute) in ``cwd`` with
    ``env`` added to the environment; unless ``expect_ok`` is false, assert that it exits 0."""
    args = [str(EXAMPLES / arg[len("examples/"):]) if arg.startswith("examples/") else arg for arg in args]
    done = subprocess.run(args, cwd=cwd, env=script_env(**env), capture_output=True, text=True, timeout=timeout_s,
                          check=False)
    assert done.returncode == 0 or not expect_ok, f"{args} exited with {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


@contextmanager
def rlf_serve(server: str, *args: str) -> Iterator[str]:
    """``rlf serve SERVER ARGS --transport http --port 0`` (the real command); yields the MCP URL its start message
    gives, then stops the server."""
    with server_process([str(VENV_BIN / "rlf"), "serve", server, *args, "--transport", "http", "--port", "0"]) as process:
        yield process.url()
