"""Shared test fixtures: where the real reference data lives, and ready-made envs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def shared_file(relative: str) -> Path:
    """A file of ../shared/data, or a skip that says why the test cannot run."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"reference data {path} is absent (it ships beside the repository in ../shared/data)")
    return path


def sleep_server_entry(**tuning) -> dict:
    """The sleep/fault-injection server as a real stdio subprocess."""
    return {"command": sys.executable, "args": ["-m", "tool_servers.sleep"], **tuning}
