"""What one process shares: a part per key (``SharedParts``: built once, lent, closed or kept idle when the last
holder leaves) and a runtime per env class and settings (``runtime_for``, ``ToolEnv``'s runtime)."""

from __future__ import annotations

import threading
import time

import gymnasium as gym
import pytest

import rlfactory_envs  # noqa: F401
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.shared import SharedParts

ENV_ID = "rlf/MCP-v0"


class Part:
    def __init__(self, name: str):
        self.name, self.closed = name, False

    def close(self) -> None:
        self.closed = True


def test_a_part_is_built_once_for_concurrent_holders_and_closed_when_the_last_leaves():
    parts, built = SharedParts(), []

    def build():
        time.sleep(0.05)
        built.append(Part("toolbox"))
        return built[-1]

    got = []
    threads = [threading.Thread(target=lambda: got.append(parts.acquire("k", build, close_when_idle=True)))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 1 and all(part is built[0] for part in got) and parts.holders("k") == 8
    for _ in range(7):
        parts.release("k")
    assert not built[0].closed
    parts.release("k")
    assert built[0].closed and parts.holders("k") == 0


def test_idle_parts_are_kept_up_to_the_bound_and_the_least_recent_is_closed():
    parts = SharedParts(max_idle=2)
    made = {key: parts.acquire(key, lambda key=key: Part(key)) for key in "abc"}
    for key in "abc":
        parts.release(key)  # a, b, c idle in that order: a is pushed out
    assert made["a"].closed and not made["b"].closed and not made["c"].closed
    assert parts.acquire("b", lambda: Part("new")) is made["b"]  # kept: no rebuild
    assert parts.acquire("a", lambda: Part("a2")) is not made["a"]


def test_a_failed_build_reaches_every_waiter_and_is_not_kept():
    parts, release_build, calls = SharedParts(), threading.Event(), []

    def failing():
        calls.append(1)
        release_build.wait(5)
        raise OSError("server did not start")

    errors = []

    def acquire():
        try:
            parts.acquire("k", failing, close_when_idle=True)
        except OSError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=acquire) for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(0.05)
    release_build.set()
    for thread in threads:
        thread.join()
    assert len(errors) == 4 and calls == [1] and parts.holders("k") == 0
    again = parts.acquire("k", lambda: Part("second"), close_when_idle=True)
    assert again.name == "second" and parts.holders("k") == 1


def test_a_waiter_of_a_failed_build_leaves_a_new_build_of_its_key_alone():
    """The failed entry is gone before its waiters wake: one of them must not take a holder off the next build."""
    parts, failing_started, fail = SharedParts(), threading.Event(), threading.Event()

    def failing():
        failing_started.set()
        fail.wait(5)
        raise OSError("no")

    waiter_errors = []
    builder = threading.Thread(target=lambda: pytest.raises(OSError, parts.acquire, "k", failing,
                                                            close_when_idle=True))
    builder.start()
    failing_started.wait(5)
    waiter = threading.Thread(target=lambda: waiter_errors.append(
        pytest.raises(OSError, parts.acquire, "k", failing, close_when_idle=True)))
    waiter.start()
    time.sleep(0.05)
    fail.set()
    builder.join()
    second = parts.acquire("k", lambda: Part("second"), close_when_idle=True)  # maybe before the waiter wakes
    waiter.join()
    assert parts.holders("k") == 1 and not second.closed


def test_equal_settings_share_a_runtime_and_settings_that_differ_in_a_limit_share_its_parts():
    first, second, other = (gym.make(ENV_ID).unwrapped, gym.make(ENV_ID).unwrapped,
                            gym.make(ENV_ID, max_turns=7).unwrapped)
    try:
        assert first.runtime is second.runtime and other.runtime is not first.runtime
        assert other.tasks is first.tasks and other.toolbox is first.toolbox and other.max_turns == 7
    finally:
        for env in (first, second, other):
            env.close()


def test_the_toolbox_stops_when_the_last_env_on_it_closes(monkeypatch):
    parts = SharedParts()  # the process's own may hold a runtime on the same toolbox (an earlier test's lease)
    for module in ("rlfactory_envs.kernel.runtime", "rlfactory_envs.kernel.env"):
        monkeypatch.setattr(f"{module}.SHARED", parts)
    first, second = gym.make(ENV_ID, max_turns=3).unwrapped, gym.make(ENV_ID, max_turns=3).unwrapped
    first.reset(seed=0)
    toolbox = first.toolbox
    first.close()
    assert toolbox.started
    second.close()
    assert second.runtime.closed and not toolbox.started


def test_a_closed_runtime_is_refused_and_settings_are_not_a_variant():
    env = gym.make(ENV_ID, max_turns=2).unwrapped
    runtime = env.runtime
    with pytest.raises(ConfigError, match="settings"):
        runtime.variant(settings=runtime.settings)
    env.close()
    with pytest.raises(ConfigError, match="closed"):
        type(env)(runtime)


def test_an_unknown_setting_names_the_registered_id_and_the_setting_meant():
    with pytest.raises(ConfigError, match=r"^rlf/MCP-v0: unknown setting 'max_turnz' \(did you mean 'max_turns'\?\); "
                                          r"its settings are "):
        gym.make(ENV_ID, max_turnz=3)
    with pytest.raises(ConfigError, match=r"unknown setting 'zzz'; its settings are "):  # nothing near: no guess
        gym.make(ENV_ID, zzz=3)


def test_a_near_miss_id_is_named_with_the_id_meant():
    from rlfactory_envs import make_env

    with pytest.raises(ConfigError, match=r"^unknown env 'rlf/search-nq-V0' \(did you mean 'rlf/Search-NQ-v0'\?\): "):
        make_env("rlf/search-nq-V0")


def test_a_batch_of_no_envs_is_refused():
    from rlfactory_envs import EnvBatch

    with pytest.raises(ValueError, match="at least one env, got n=0"):
        EnvBatch.make(ENV_ID, 0)
