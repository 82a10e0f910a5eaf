"""Shared test fixtures: where the real reference data lives, and ready-made envs."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn
from hypothesis import settings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

# CI (.ci/run sets RLF_HYPOTHESIS_PROFILE=ci) draws the same examples on every run, so a verdict never depends on
# luck; a developer's run explores new ones each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("RLF_HYPOTHESIS_PROFILE", "default"))

# Generated SQL test suites (and any other cache) go to a folder of this run, never into the user's ~/.cache.
os.environ.setdefault("RLF_CACHE_DIR", tempfile.mkdtemp(prefix="rlf-test-cache-"))

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
    return {"command": sys.executable, "args": ["-m", "rlfactory_tool_servers.sleep"], **tuning}


@contextmanager
def openai_endpoint(handle: Callable[[Request], Awaitable[JSONResponse]]) -> Iterator[str]:
    """A scripted OpenAI-compatible chat endpoint on loopback (real HTTP): ``handle`` answers every
    ``POST /v1/chat/completions``. Yields the base URL (``http://127.0.0.1:PORT/v1``)."""
    app = Starlette(routes=[Route("/v1/chat/completions", handle, methods=["POST"])])
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(10)


def chat_completion(message: dict) -> dict:
    """An OpenAI chat-completion response body carrying the assistant ``message``."""
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "scripted",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def http_tool_server(module: str, *args: str, log: Path, timeout_s: float = 30.0) -> Iterator[str]:
    """``python -m module args --transport http`` on a free loopback port; yields its MCP URL, then stops it."""
    port = free_port()
    with log.open("w") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", module, *args, "--transport", "http", "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                raise AssertionError(f"server exited with {process.returncode}:\n{log.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"server not listening on port {port} after {timeout_s} s:\n"
                                         f"{log.read_text()}") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
