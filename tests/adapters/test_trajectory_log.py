"""The adapters' trajectory log: which episodes it keeps, that a stuck writer never holds up the trainer, and that
``rlf view`` reads what it writes (a real env's episode, through the same lease the trainers use)."""

from __future__ import annotations

import os
import threading

from rlfactory_adapters import trajectory_log
from rlfactory_adapters.env_lease import lease_env
from rlfactory_adapters.trajectory_log import TrajectoryLog, log_episode
from rlfactory_envs.view.runs import open_run
from rlfactory_envs.view.viewer_data import NamedRun, episode


def test_keeps_every_nth_step_up_to_a_cap_or_every_nth_episode(tmp_path):
    log = TrajectoryLog(tmp_path / "log.jsonl", every=5, max_per_step=2)
    kept = [(step, log.wants(step)) for step in (0, 0, 0, 3, 5, 10, 10, 10)]
    assert [step for step, wanted in kept if wanted] == [0, 0, 5, 10, 10]
    unknown = TrajectoryLog(tmp_path / "other.jsonl", every=3)
    assert [unknown.wants(None) for _ in range(7)] == [True, False, False, True, False, False, True]


def test_a_stuck_writer_drops_records_instead_of_blocking(tmp_path):
    fifo = tmp_path / "stuck"
    os.mkfifo(fifo)  # nobody reads it: the writer thread blocks opening it
    log = TrajectoryLog(fifo, queue_records=2)
    done = threading.Event()

    def flood() -> None:
        for n in range(10):
            log.log({"n": n})
        done.set()

    threading.Thread(target=flood, daemon=True).start()
    assert done.wait(5), "log() blocked"
    assert log.dropped == 8
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # let the writer go, then stop it
    log.close(timeout=5)
    os.close(reader)


def test_rlf_view_reads_what_a_trainer_logged(tmp_path, monkeypatch):
    monkeypatch.setenv(trajectory_log.FOLDER_VARIABLE, str(tmp_path / "log"))
    monkeypatch.setenv(trajectory_log.EVERY_VARIABLE, "2")
    monkeypatch.setattr(trajectory_log, "_LOG", None)
    for step in (0, 1, 2):
        with lease_env("rlf/Search-NQ-v0") as env:
            env.reset(options={"task_id": "rlf-sample-051"})
            env.step('<tool_call>{"name": "search", "arguments": {"query": "ysolde harn ombrecht rebels"}}</tool_call>')
            _, reward, terminated, truncated, info = env.step("<answer>Battle of Corrow Pass</answer>")
            log_episode(env, "rlf/Search-NQ-v0", reward=reward, terminated=terminated, truncated=truncated,
                        answer=info["answer"], step=step, trainer="verl")
    trajectory_log.process_log().close()
    run = open_run(tmp_path / "log")
    run.start()
    assert run.wait(30) and not run.bad
    columns = run.store.columns()
    assert columns["step"].tolist() == [0, 2] and columns["reward"].tolist() == [1.0, 1.0]
    page = episode(NamedRun("log", tmp_path / "log", run), 1)
    assert [call["name"] for turn in page["turns"] for call in turn["calls"]] == ["search"]
    assert page["header"]["train_step"] == 2 and page["reward"]["parts"]["exact_match"] == 1.0
