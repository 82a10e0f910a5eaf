"""``rlf/OpenEnv-v0`` against servers built with openenv-core: a guessing game on openenv-core's own server
(``benchmarks/openenv_stub_server.py``), which passes the env-semantics properties and plays with ``EnvBatch``; and an rlf env served
through our own OpenEnv door and played back as ``rlf/OpenEnv-v0``."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from rlfactory_envs import EnvBatch, make_env
from rlfactory_envs.kernel.errors import ConfigError
from tests.conftest import REPO_ROOT
from tests.server_process import server_process
from tests.service.conftest import serve_command

pytest.importorskip("openenv.core", reason="the OpenEnv server under test is built with openenv-core "
                                           "(pip install .[openenv])")

GUESS_SERVER = REPO_ROOT / "benchmarks" / "openenv_stub_server.py"


@pytest.fixture(scope="module")
def guess_url() -> Iterator[str]:
    with server_process([sys.executable, str(GUESS_SERVER), "--max-sessions", "256"]) as server:
        yield f"http://127.0.0.1:{server_stdout_port(server)}"


def server_stdout_port(server) -> int:
    line = server.process.stdout.readline()
    return int(re.search(r"listening on (\d+)", line).group(1))


def bisect(observation: str, state: dict) -> str:
    low, high = state.setdefault("range", [1, 100])
    if "Higher" in observation:
        low = state["guess"] + 1
    elif "Lower" in observation:
        high = state["guess"] - 1
    state["range"], state["guess"] = [low, high], (low + high) // 2
    return str(state["guess"])


def test_a_guessing_game_on_openenv_cores_server_plays_as_an_rlf_env(guess_url):
    env = make_env("rlf/OpenEnv-v0", base_url=guess_url, max_turns=10)
    obs, info = env.reset(options={"task": {"seed": 3}})
    assert obs.startswith("Guess my number") and info["tools"] == [] and info["task"] == {"task_id": "seed-3",
                                                                                           "seed": 3}
    state, rewards, done = {}, [], False
    while not done:
        obs, reward, terminated, truncated, info = env.step(bisect(obs, state))
        rewards.append(reward)
        done = terminated or truncated
    assert terminated and rewards[-1] == 1.0 and set(rewards[:-1]) <= {0.0}
    assert info["reward_parts"] == {"server_return": 1.0}
    again, _ = env.reset(seed=3)  # a seeded draw of one of the 1,000 tasks
    assert again == "Guess my number between 1 and 100. Answer with the number only."
    obs, reward, *_ = env.step("fifty?")
    assert "<|im_start|>user\nThat is not a number.<|im_end|>" in obs and reward == 0.0
    env.close()


def test_the_env_semantics_hold_on_an_openenv_server(guess_url):
    from rlfactory_envs.testing import check_env_semantics

    check_env_semantics("rlf/OpenEnv-v0", env_kwargs={"base_url": guess_url, "num_tasks": 20, "max_turns": 4})


def test_a_batch_of_sessions_plays_at_once(guess_url):
    batch = EnvBatch.make("rlf/OpenEnv-v0", 32, base_url=guess_url, max_turns=10)
    try:
        observations = asyncio.run(batch.areset(seeds=list(range(32))))
        states = [{} for _ in range(32)]
        actions = [bisect(obs, state) for (obs, _), state in zip(observations, states)]
        finished = [None] * 32
        for _ in range(10):
            results = asyncio.run(batch.astep(actions))
            actions = []
            for i, (result, state) in enumerate(zip(results, states)):
                if result is not None and (result.terminated or result.truncated):
                    finished[i] = result.reward
                feedback = result.info["messages"][-1]["content"] if result is not None and not result.terminated \
                    and not result.truncated else ""
                actions.append(None if finished[i] is not None else bisect(feedback, state))
            if all(f is not None for f in finished):
                break
        assert finished == [1.0] * 32  # bisection finds 1..100 in at most 7 guesses
    finally:
        batch.close()


def test_an_rlf_env_through_our_door_and_back_plays_the_same():
    with serve_command("rlf/Search-NQ-v0", "openenv", "--auth-token", "tk") as url:
        remote = make_env("rlf/OpenEnv-v0", base_url=url.replace("http://", "http://rlf:tk@"), max_turns=4)
        local = make_env("rlf/Search-NQ-v0")
        try:
            remote_obs, _ = remote.reset(seed=5)
            local_obs, info = local.reset(seed=remote.task.seed)  # the seed the door's env was reset with
            assert remote.runtime.action_field == "response" and remote_obs == local_obs
            answer = f"<answer>{info['task']['golden_answers'][0]}</answer>"
            step = '<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>'
            assert local.step(step)[0] in remote.step(step)[0]
            assert remote.step(answer)[1:3] == local.step(answer)[1:3] == (1.0, True)
        finally:
            remote.close()
            local.close()


def test_no_server_there_is_one_line_and_no_server_given_plays_the_embedded_sample():
    with pytest.raises(ConfigError, match="cannot read http://127.0.0.1:9/schema"):
        make_env("rlf/OpenEnv-v0", base_url="http://127.0.0.1:9")
    done = subprocess.run([sys.executable, "-m", "rlfactory_envs.cli", "rollout", "rlf/OpenEnv-v0", "-n", "1",
                           "--set", "base_url=http://127.0.0.1:9"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "cannot read http://127.0.0.1:9/schema" in done.stderr
    env = make_env("rlf/OpenEnv-v0")
    try:
        obs, _ = env.reset(seed=0)
        assert env.runtime.base_url.startswith("http://127.0.0.1:") and "How many" in obs
    finally:
        env.close()
