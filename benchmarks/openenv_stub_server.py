"""An environment server built with openenv-core itself (``Environment``, ``Action``/``Observation``/``State``,
``create_app``), as its example envs are: guess a secret number between 1 and 100 drawn from the reset's seed; each
guess is told higher, lower or right (reward 1.0, done). ``python benchmarks/openenv_stub_server.py [--max-sessions N]`` prints
``listening on PORT`` once it serves. The side of ``rlf bench --only env_service`` that is OpenEnv's own server also
runs it (``--echo``: a stub that echoes the message, the bench's comparable env)."""

from __future__ import annotations

import argparse
import random
import socket
import sys
import uuid

import uvicorn
from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class GuessAction(Action):
    message: str


class GuessObservation(Observation):
    feedback: str = ""


class GuessEnvironment(Environment[GuessAction, GuessObservation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._secret, self._state = 50, State(episode_id=str(uuid.uuid4()), step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs) -> GuessObservation:
        self._secret = random.Random(seed).randint(1, 100)
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return GuessObservation(feedback="Guess my number between 1 and 100. Answer with the number only.")

    def step(self, action: GuessAction, timeout_s: float | None = None, **kwargs) -> GuessObservation:
        self._state.step_count += 1
        digits = "".join(ch for ch in action.message if ch.isdigit())[:4]
        if not digits:
            return GuessObservation(feedback="That is not a number.", reward=0.0)
        guess = int(digits)
        if guess == self._secret:
            return GuessObservation(feedback="Right!", reward=1.0, done=True)
        return GuessObservation(feedback="Higher." if guess < self._secret else "Lower.", reward=0.0)

    @property
    def state(self) -> State:
        return self._state


class EchoEnvironment(GuessEnvironment):
    """The bench's stub: the message back, reward 0.0, never done."""

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs) -> GuessObservation:
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return GuessObservation(feedback="ready")

    def step(self, action: GuessAction, timeout_s: float | None = None, **kwargs) -> GuessObservation:
        self._state.step_count += 1
        return GuessObservation(feedback=action.message, reward=0.0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-sessions", type=int, default=64)
    parser.add_argument("--echo", action="store_true")
    args = parser.parse_args()
    env = EchoEnvironment if args.echo else GuessEnvironment
    app = create_app(env, GuessAction, GuessObservation, env_name="guess", max_concurrent_envs=args.max_sessions)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(f"listening on {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", ws_per_message_deflate=False, backlog=4096)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
