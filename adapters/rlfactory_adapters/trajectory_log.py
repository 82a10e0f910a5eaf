"""The trainer adapters' trajectory log: episodes played during training, written as the JSONL ``rlf rollout --out``
writes, for ``rlf view``.

Off unless ``RLF_TRAJECTORY_DIR`` names a folder (set it where the trainer's rollout workers run: for Ray, in the
job's ``runtime_env`` ``env_vars``). Each process then writes ``trajectories-<host>-<pid>.jsonl`` in it;
``rlf view FOLDER`` reads the folder as one run, and plots mean reward over the training steps.

- ``RLF_TRAJECTORY_EVERY`` (default 10): keep the episodes of every Nth training step. verl tells the step (the
  weights' version its rollout server reports); OpenRLHF does not, so there every Nth episode is kept.
- ``RLF_TRAJECTORY_MAX_PER_STEP`` (default 64): at most this many episodes per kept step, per process.

A line is an ``EpisodeRecord`` (``rlfactory_envs.rollout.runner``) plus ``train_step`` and ``trainer``; the
trainer's own token bookkeeping is not in it, and ``tool_errors`` and per-step details are not known here. The
trainer never waits for the log: ``log`` only puts the record on a bounded queue that a writer thread empties; when
the queue is full the record is dropped and counted, and the next line written says how many were
(``log_dropped``). A failure to build or write a record is logged once and never reaches the episode.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import socket
import threading
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

FOLDER_VARIABLE = "RLF_TRAJECTORY_DIR"
EVERY_VARIABLE = "RLF_TRAJECTORY_EVERY"
MAX_PER_STEP_VARIABLE = "RLF_TRAJECTORY_MAX_PER_STEP"
QUEUE_RECORDS = 256


class TrajectoryLog:
    """One process's log: which episodes to keep (``wants``), and a writer thread behind a bounded queue."""

    def __init__(self, path: Path, *, every: int = 10, max_per_step: int = 64, queue_records: int = QUEUE_RECORDS):
        self.path = path
        self.every = max(1, every)
        self.max_per_step = max(1, max_per_step)
        self.dropped = 0
        self.episodes = 0
        self._kept: dict[int, int] = {}
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(queue_records)
        self._writer = threading.Thread(target=self._write, name="rlf-trajectory-log", daemon=True)
        self._writer.start()

    def wants(self, step: int | None) -> bool:
        """Whether to keep the episode that just ended at training step ``step`` (``None``: unknown)."""
        self.episodes += 1
        if step is None:
            return (self.episodes - 1) % self.every == 0
        if step % self.every or self._kept.get(step, 0) >= self.max_per_step:
            return False
        self._kept[step] = self._kept.get(step, 0) + 1
        return True

    def log(self, record: dict[str, Any]) -> None:
        """Queue ``record`` for writing; drop it (and count it) when the queue is full."""
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued and stop the writer."""
        self._queue.put(None)
        self._writer.join(timeout)

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            while (record := self._queue.get()) is not None:
                try:
                    if self.dropped:
                        record["log_dropped"], self.dropped = self.dropped, 0
                    out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
                    out.flush()
                except (OSError, TypeError, ValueError) as exc:
                    logger.warning("rlf trajectory log: a record was not written to %s: %s", self.path, exc)


_LOG: TrajectoryLog | None = None
_LOCK = threading.Lock()


def process_log() -> TrajectoryLog | None:
    """This process's log, made on first use from the environment variables; ``None`` when it is off."""
    global _LOG
    folder = os.environ.get(FOLDER_VARIABLE)
    if not folder:
        return None
    with _LOCK:
        if _LOG is None:
            name = f"trajectories-{socket.gethostname()}-{os.getpid()}.jsonl"
            _LOG = TrajectoryLog(Path(folder) / name, every=int(os.environ.get(EVERY_VARIABLE, "10")),
                                 max_per_step=int(os.environ.get(MAX_PER_STEP_VARIABLE, "64")))
        return _LOG


def log_episode(env: Any, env_id: str, *, reward: float, terminated: bool, truncated: bool, answer: str | None,
                step: int | None, trainer: str) -> None:
    """Log the episode ``env`` just finished, when the log is on and wants it (call before the env is given
    back). Never raises."""
    log = process_log()
    if log is None or not log.wants(step):
        return
    try:
        log.log(episode_record(env, env_id, reward=reward, terminated=terminated, truncated=truncated, answer=answer,
                               step=step, trainer=trainer))
    except Exception:  # noqa: BLE001 - the log must never end an episode or a training step
        logger.exception("rlf trajectory log: the episode could not be recorded")


def episode_record(env: Any, env_id: str, *, reward: float, terminated: bool, truncated: bool, answer: str | None,
                   step: int | None, trainer: str) -> dict[str, Any]:
    """The episode of ``env`` as an ``EpisodeRecord``'s fields, with ``train_step`` and ``trainer``."""
    messages = [dict(m) for m in env.messages]
    last = env.last_reward
    return {"env_id": env_id, "seed": None, "dataset": getattr(env.tasks, "name", ""),
            "task": env.task_to_dict(env.task), "messages": messages, "transcript": env.transcript,
            "reward": float(reward), "reward_parts": dict(last.parts) if last is not None else {},
            "reward_reason": last.reason if last is not None else None, "answer": answer,
            "terminated": bool(terminated), "truncated": bool(truncated), "turns": env.turn,
            "tool_calls": sum(m.get("role") == "tool" for m in messages), "tool_errors": 0,
            "reward_info": dict(last.info) if last is not None else {}, "train_step": step, "trainer": trainer}
