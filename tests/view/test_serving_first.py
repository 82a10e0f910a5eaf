"""Requests before indexing: ``rlf view`` takes a connection as soon as it prints its address, the index waits
between blocks while a request is answered (never longer than ``MAX_PAUSE_S``), its thread runs at a lower priority,
and the first rows are visible before a whole chunk is indexed."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.request

import pytest
from starlette.testclient import TestClient

from rlfactory_envs.view import run_index
from rlfactory_envs.view.column_store import FIRST_CHUNK_ROWS
from rlfactory_envs.view.runs import open_run
from rlfactory_envs.view.server import build_app
from rlfactory_envs.view.viewer_data import NamedRun
from tests.view.test_indexing import episode, write_lines
from tests.view.viewer import viewer


def episodes_file(tmp_path, n: int):
    return write_lines(tmp_path / "run.jsonl", [json.dumps(episode(f"t{i}", float(i % 2))) for i in range(n)])


def test_the_printed_address_takes_a_connection_at_once(tmp_path):
    with viewer(episodes_file(tmp_path, 3)) as view:
        with urllib.request.urlopen(view.url, timeout=10) as page:  # refused before the socket listened this early
            assert page.status == 200


def test_indexing_waits_while_a_request_is_answered(tmp_path, monkeypatch):
    monkeypatch.setattr(run_index, "BLOCK_BYTES", 256)
    run = open_run(episodes_file(tmp_path, 50))
    with run.foreground.serving():
        run.start()
        time.sleep(0.2)
        assert run.bytes_done == 0  # the first block waits (MAX_PAUSE_S is 0.5 s)
    assert run.wait(10) and len(run.store) == 50


def test_a_client_asking_without_pause_slows_indexing_but_cannot_stop_it(tmp_path, monkeypatch):
    monkeypatch.setattr(run_index, "BLOCK_BYTES", 4096)
    monkeypatch.setattr(run_index, "MAX_PAUSE_S", 0.02)
    run = open_run(episodes_file(tmp_path, 200))
    with run.foreground.serving():
        run.start()
        assert run.wait(10) and len(run.store) == 200


def test_the_server_counts_its_quick_requests_not_its_searches(tmp_path):
    run = open_run(episodes_file(tmp_path, 3))
    run.start()
    assert run.wait(10)
    app = build_app([NamedRun("run.jsonl", tmp_path / "run.jsonl", run)], token=None, loopback=True)
    seen = []
    answer = run.foreground.serving

    def counted():
        seen.append(1)
        return answer()

    run.foreground.serving = counted
    client = TestClient(app, base_url="http://127.0.0.1:8765")
    quick = ("/api/runs", "/api/columns?run=0", "/api/episode?run=0&row=0", "/api/bad?run=0")
    for path in (*quick, "/api/search?run=0&q=t1"):
        assert client.get(path).status_code == 200
    assert len(seen) == len(quick)


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own niceness is Linux's")
def test_the_index_thread_runs_at_a_lower_priority():
    found = []

    def lowered():
        before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        run_index.yield_the_cpu()
        found.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) - before)

    own = os.getpriority(os.PRIO_PROCESS, 0)  # this thread's
    thread = threading.Thread(target=lowered)
    thread.start()
    thread.join()
    assert found == [min(run_index.INDEX_NICENESS, 19 - own)]
    assert os.getpriority(os.PRIO_PROCESS, 0) == own  # only the indexing thread's was lowered


def test_the_first_rows_show_before_a_whole_chunk(tmp_path, monkeypatch):
    run = open_run(episodes_file(tmp_path, FIRST_CHUNK_ROWS + 1))
    seen = []
    monkeypatch.setattr(run.store, "flush", lambda flush=run.store.flush: (seen.append(len(run.store)), flush()))
    run.start()
    assert run.wait(10)
    assert seen[:2] == [0, FIRST_CHUNK_ROWS]  # the early flush, then the final one
