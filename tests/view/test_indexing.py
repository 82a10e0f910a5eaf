"""Reading trajectory files: what is indexed, what is reported as an unreadable line and why, what is refused in
one line, audit reports and folders as runs, text search, an episode's page, and who may read the server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.view import run_index
from rlfactory_envs.view.episode_page import episode_view
from rlfactory_envs.view.runs import open_run
from rlfactory_envs.view.server import build_app
from rlfactory_envs.view.text_search import RunSearch
from rlfactory_envs.view.viewer_data import NamedRun, run_columns
from tests.view.viewer import rlf_command


def episode(task_id: str, reward: float, **extra) -> dict:
    return {"env_id": "rlf/Search-NQ-v0", "seed": 0, "dataset": "d", "task": {"task_id": task_id, "question": "q"},
            "messages": [], "transcript": "", "reward": reward, "reward_parts": {"exact_match": reward},
            "answer": "a", "terminated": True, "truncated": False, "turns": 1, "tool_calls": 0, "tool_errors": 0,
            **extra}


def indexed(path: Path):
    run = open_run(path)
    run.start()
    assert run.wait(30)
    return run


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def test_bad_lines_are_reported_and_skipped(tmp_path):
    good = [json.dumps(episode(f"t{i}", float(i % 2))) for i in range(3)]
    path = write_lines(tmp_path / "run.jsonl", [
        good[0], "", "not json at all", good[1], "[1, 2]", json.dumps({"env_id": "x"}),
        json.dumps(episode("t9", 1.0, turns=-1)), json.dumps({**episode("t8", 1.0), "reward": "1"}), good[2],
        good[0][:80]])
    run = indexed(path)
    columns = run.store.columns()
    assert [run.store.labels["task"].texts[c] for c in columns["task"]] == ["t0", "t1", "t2"]
    assert columns["line"].tolist() == [0, 3, 8]
    reasons = {bad.line: bad.reason for bad in run.bad}
    assert sorted(reasons) == [3, 5, 6, 7, 8, 10]
    assert reasons[3].startswith("not JSON") and reasons[10].startswith("not JSON, or cut short")
    assert "reward" in reasons[6] and "turns" in reasons[7] and "reward" in reasons[8]
    assert run.record(2)["task"]["task_id"] == "t2"


def test_lines_across_blocks_and_too_long_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(run_index, "BLOCK_BYTES", 64)
    monkeypatch.setattr(run_index, "MAX_LINE_BYTES", 1000)
    lines = [json.dumps(episode(f"t{i}", 1.0)) for i in range(4)]
    lines.insert(2, json.dumps(episode("huge", 1.0, transcript="x" * 5000)))
    run = indexed(write_lines(tmp_path / "run.jsonl", lines))
    assert [run.store.labels["task"].texts[c] for c in run.store.columns()["task"]] == ["t0", "t1", "t2", "t3"]
    assert [(bad.line, bad.reason) for bad in run.bad] == [(3, "longer than 0 MB; skipped unread")]
    assert run.record(3)["task"]["task_id"] == "t3"


def test_what_is_not_a_run_is_refused_in_one_line(tmp_path):
    csv = tmp_path / "scores.csv"
    csv.write_text("task,reward\nq1,1\n", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    for given, says in ((csv, "is not a trajectory file"), (tmp_path / "missing.jsonl", "no such file"),
                        (tmp_path / "empty", "no .jsonl file")):
        with pytest.raises(ConfigError, match=says):
            open_run(given)
    done = subprocess.run([*rlf_command(), "view", str(csv)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "is not a trajectory file" in done.stderr and "rlf rollout --out" in done.stderr
    done = subprocess.run([*rlf_command(), "view", str(csv), "--host", "0.0.0.0"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2


def test_beyond_loopback_needs_a_token():
    from rlfactory_envs.view.command import auth_token

    with pytest.raises(ConfigError, match="--auth-token"):
        auth_token(None, "0.0.0.0")
    assert auth_token(None, "127.0.0.1") is None
    assert auth_token("secret", "0.0.0.0") == "secret"


def test_audit_report_and_folder_runs(tmp_path):
    report = {"env_id": "rlf/Search-NQ-v0", "dataset": "d", "tasks": 2, "passed": False, "summary": "FAIL: x",
              "failing_hacks": ["blank"], "hacks": [
                  {"name": "control", "control": True, "verdict": "ok", "tried": 2, "earned": 2, "rate": 1.0,
                   "earning_examples": [], "not_earning_examples": [], "error_examples": []},
                  {"name": "blank", "control": False, "verdict": "FAIL", "tried": 2, "earned": 1, "rate": 0.5,
                   "earning_examples": [{"task_id": "q1", "reward": 1.0, "parts": {"em": 1.0}, "answer": ""}],
                   "not_earning_examples": [{"task_id": "q2", "reward": 0.0, "parts": {}, "answer": ""}],
                   "error_examples": []}]}
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(report, indent=2), encoding="utf-8")
    run = indexed(path)
    payload = run_columns(NamedRun("audit.json", path, run))
    assert payload["rows"] == 2 and payload["labels"]["reason"] == ["earned", "did not earn"]
    assert payload["labels"]["template"] == ["blank"] and run.summary()["failing_hacks"] == ["blank"]

    folder = tmp_path / "log"
    folder.mkdir()
    write_lines(folder / "a.jsonl", [json.dumps(episode("a1", 1.0))])
    write_lines(folder / "b.jsonl", [json.dumps(episode("b1", 0.0)), json.dumps(episode("b2", 0.0))])
    run = indexed(folder)
    assert run.store.columns()["src"].tolist() == [0, 1, 1]
    assert run.record(2)["task"]["task_id"] == "b2"


def test_text_search_ignores_case_and_reads_json_escapes(tmp_path):
    lines = [json.dumps(episode("t0", 1.0, answer='say "Hello"')), json.dumps(episode("t1", 1.0, answer="HELLO")),
             json.dumps(episode("t2", 0.0, answer="bye"))]
    run = indexed(write_lines(tmp_path / "run.jsonl", lines))
    search = RunSearch(run)
    assert search.search("hello", 10).rows == [0, 1]
    assert search.search('"hello"', 10).rows == [0]
    assert search.search("nowhere", 10).rows == []
    assert not search.search("bye", -1).complete


def test_episode_page_turns_and_verdicts():
    record = episode("t0", 1.0, messages=[
        {"role": "user", "content": "question"},
        {"role": "assistant", "content": "<tool_call>search</tool_call>"},
        {"role": "tool", "name": "search", "content": "passages"},
        {"role": "user", "content": "a note"},
        {"role": "assistant", "content": "<answer>a</answer>"}],
        steps=[{"tool_calls": [{"name": "search", "arguments": {"query": "q"}, "is_error": False, "latency_s": 0.01}],
                "process_reward": 0.1},
               {"tool_calls": [], "reward_reason": "exact match"}],
        reward_info={"travel_eval": {"final_pass": True, "commonsense": {"valid_cost": False, "valid_room": None},
                                     "total_cost": 12.5}, "judge": {"reply": "x" * 200}})
    page = episode_view(record)
    assert [m["text"] for m in page["prompt"]] == ["question"]
    first, second = page["turns"]
    assert first["calls"] == [{"name": "search", "arguments": {"query": "q"}, "is_error": False, "latency_s": 0.01,
                               "result": "passages"}]
    assert first["notes"] == [{"role": "user", "text": "a note"}] and first["process_reward"] == 0.1
    assert second["calls"] == [] and page["reward"]["reason"] == "exact match"
    sections = {s["title"]: s for s in page["reward"]["sections"]}
    assert sections["travel_eval"]["checks"] == [["final_pass", True]]
    assert sections["travel_eval"]["fields"] == [["total_cost", 12.5]]
    assert sections["travel_eval › commonsense"]["checks"] == [["valid_cost", False], ["valid_room", None]]
    assert sections["judge"]["texts"] == [["reply", "x" * 200]]
    assert episode_view({"unreadable": "why"}) == {"kind": "unreadable", "why": "why"}


def test_server_access_and_bad_requests(tmp_path):
    run = indexed(write_lines(tmp_path / "run.jsonl", [json.dumps(episode("t0", 1.0))]))
    runs = [NamedRun("run.jsonl", tmp_path / "run.jsonl", run)]
    local = TestClient(build_app(runs, token=None, loopback=True), base_url="http://127.0.0.1:8765")
    assert local.get("/api/runs").json()[0]["rows"] == 1
    assert local.get("/api/episode?run=0&row=5").status_code == 400
    assert local.get("/api/episode?run=x&row=0").json() == {"error": "run must be an integer, got 'x'"}
    assert local.get("/api/search?run=0&q=" + "x" * 300).status_code == 400
    assert local.get("/assets/../server.py").status_code == 404
    rebound = TestClient(build_app(runs, token=None, loopback=True), base_url="http://attacker.example")
    assert rebound.get("/api/runs").status_code == 403

    guarded = TestClient(build_app(runs, token="s3cret", loopback=False), base_url="http://10.0.0.5:8765")
    assert guarded.get("/api/runs").status_code == 401
    assert guarded.get("/api/runs", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert guarded.get("/api/runs", headers={"Authorization": "bearer s3cret"}).status_code == 200
    login = guarded.get("/?token=s3cret", follow_redirects=False)
    assert login.status_code == 303 and "HttpOnly" in login.headers["set-cookie"]
    assert guarded.get("/api/runs").status_code == 200  # the client keeps the cookie
