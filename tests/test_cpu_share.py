"""The lock that lets timed tests run alone under pytest-xdist (``tests/cpu_share.py``); flock locks of separate
opens conflict within one process too, so threads stand in for workers, each with its own ``RunLock``."""

from __future__ import annotations

import threading
import time

from tests.cpu_share import RunLock, run_lock


def start(lock: RunLock, tests: list[tuple[str, bool]], order: list[str],
          go: dict[str, threading.Event]) -> threading.Thread:
    """A worker running ``tests`` (name, alone) in turn, each until its event is set."""
    def run() -> None:
        for position, (name, alone) in enumerate(tests):
            next_alone = position + 1 < len(tests) and tests[position + 1][1]
            with lock.held(alone, next_alone):
                order.append(f"{name} in")
                go[name].wait(5)
                order.append(f"{name} out")

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.2)  # it has taken the lock, or waits for it
    return thread


def events(*names: str) -> dict[str, threading.Event]:
    return {name: threading.Event() for name in names}


def release(go: dict[str, threading.Event], name: str) -> None:
    go[name].set()
    time.sleep(0.2)


def test_outside_xdist_nothing_is_locked(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert run_lock() is None


def test_shared_holders_run_together(tmp_path):
    order: list[str] = []
    go = events("a", "b")
    threads = [start(RunLock(tmp_path), [(name, False)], order, go) for name in "ab"]
    assert order == ["a in", "b in"]
    for name in "ab":
        release(go, name)
    assert all(not thread.join(5) and not thread.is_alive() for thread in threads)


def test_an_alone_test_waits_for_the_running_ones_and_goes_before_later_ones(tmp_path):
    order: list[str] = []
    go = events("first", "alone", "later")
    starts = [("first", False), ("alone", True), ("later", False)]
    threads = [start(RunLock(tmp_path), [test], order, go) for test in starts]
    assert order == ["first in"]
    release(go, "first")
    assert order == ["first in", "first out", "alone in"]
    release(go, "alone")
    release(go, "later")
    assert order == ["first in", "first out", "alone in", "alone out", "later in", "later out"]
    assert all(not thread.join(5) and not thread.is_alive() for thread in threads)


def test_alone_tests_in_a_row_keep_the_lock_and_let_it_go_after_the_last(tmp_path):
    order: list[str] = []
    go = events("alone 1", "alone 2", "own", "other")
    worker = start(RunLock(tmp_path), [("alone 1", True), ("alone 2", True), ("own", False)], order, go)
    other = start(RunLock(tmp_path), [("other", False)], order, go)
    release(go, "alone 1")
    assert order == ["alone 1 in", "alone 1 out", "alone 2 in"]  # the other worker did not get in between
    release(go, "alone 2")
    assert order[3:] in (["alone 2 out", "own in", "other in"], ["alone 2 out", "other in", "own in"])
    release(go, "own")
    release(go, "other")
    assert not worker.join(5) and not other.join(5) and not worker.is_alive() and not other.is_alive()
