"""The doors under test: a served env in this process (its table and toolbox at hand), or ``rlf serve env`` run as a
user runs it, in a subprocess."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.server_process import server_process

SERVE_URL_RE = re.compile(r"rlf serve env: serving \S+ over .+ at (http://\S+)")
"""The URL in ``rlf serve env``'s start line."""
RLF_PYTHON = os.environ.get("RLF_PYTHON", sys.executable)
"""The interpreter with rlfactory-envs installed (the ORS client's tests run in a venv of their own)."""


@contextmanager
def serve_command(ref: str, protocol: str, *args: str) -> Iterator[str]:
    """``rlf serve env REF --protocol PROTOCOL ARGS --port 0`` in a subprocess; yields its URL, then stops it."""
    command = [RLF_PYTHON, "-m", "rlfactory_envs.cli", "serve", "env", ref, "--protocol", protocol, *args,
               "--port", "0"]
    with server_process(command) as server:
        yield server.wait_for(SERVE_URL_RE, 120).group(1)


@contextmanager
def serving(ref: str, protocol: str = "openenv", env_kwargs: dict[str, Any] | None = None,
            token: str | None = None, **limits: Any) -> Iterator[tuple[str, Any]]:
    """The door of ``ref`` served on a thread of this process; yields its URL and its ``EpisodeTable``."""
    from rlfactory_envs.service.access import TokenGuard
    from rlfactory_envs.service.background import BackgroundDoor
    from rlfactory_envs.service.episodes import ServiceLimits

    door = BackgroundDoor(ref, protocol, env_kwargs, ServiceLimits(**limits),
                          wrap=(lambda app: TokenGuard(app, token)) if token else None)
    try:
        yield door.url, door.table
    finally:
        door.close()
