"""``EnvBatch``: step many envs in one call, with every tool call of the batch in flight at once.

All envs of a batch that share a toolbox are stepped together on the toolbox's loop, handed over in one thread
hop; there the toolbox merges their calls to a batched tool into one MCP request per server. Results align
one-to-one with the inputs whatever the order of completion, and one env's failure never takes the others down:
an unexpected error ends that env's episode as truncated, with the error in ``info["error"]``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, NamedTuple

import gymnasium as gym

from rlfactory_envs.kernel.env import EpisodeOver, OpenTurn, ToolEnv
from rlfactory_envs.kernel.gc_pause import automatic_gc_paused
from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.tool_call import ToolResult


class StepResult(NamedTuple):
    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


class EnvBatch:
    """A fixed list of ``ToolEnv``s stepped together. ``None`` as an action leaves that env alone.

    ``pause_gc`` (default true) pauses automatic garbage collection while a step is in flight (see
    ``gc_pause``): full collections of a large heap in the middle of a step cost more than the step itself.
    """

    def __init__(self, envs: Sequence[ToolEnv], pause_gc: bool = True):
        self.pause_gc = pause_gc
        if not envs:
            raise ValueError("an EnvBatch needs at least one env")
        self.envs = [getattr(env, "unwrapped", env) for env in envs]
        for env in self.envs:
            if not isinstance(env, ToolEnv):
                raise TypeError(f"EnvBatch steps ToolEnv instances, got {type(env).__name__}")

    @classmethod
    def make(cls, env_id: str, n: int, pause_gc: bool = True, **kwargs: Any) -> EnvBatch:
        """``n`` envs of ``gym.make(env_id, **kwargs)``, all on its one runtime (made once: the others cost a few
        microseconds each)."""
        if n < 1:
            raise ValueError(f"an EnvBatch needs at least one env, got n={n}")
        first = gym.make(env_id, **kwargs).unwrapped
        return cls([first] + [first.sibling() for _ in range(n - 1)], pause_gc=pause_gc)

    def __len__(self) -> int:
        return len(self.envs)

    async def areset(self, seeds: Sequence[int | None] | None = None,
                     options: Sequence[dict[str, Any] | None] | None = None) -> list[tuple[str, dict[str, Any]]]:
        """Reset every env (``seeds[i]``, ``options[i]`` when given)."""
        seeds = list(seeds) if seeds is not None else [None] * len(self)
        options = list(options) if options is not None else [None] * len(self)
        if len(seeds) != len(self) or len(options) != len(self):
            raise ValueError("seeds and options must have one entry per env")
        return list(await asyncio.gather(*(env.areset(seed=s, options=o)
                                           for env, s, o in zip(self.envs, seeds, options))))

    async def astep(self, actions: Sequence[str | None]) -> list[StepResult | None]:
        """Step env ``i`` with ``actions[i]``; ``None`` skips it (its result is ``None``)."""
        if len(actions) != len(self):
            raise ValueError(f"got {len(actions)} actions for {len(self)} envs")
        groups = self._groups(actions)
        results: list[StepResult | None] = [None] * len(self)
        with automatic_gc_paused(self.pause_gc):
            await asyncio.gather(*(self._step_group(members, actions, results) for members in groups.values()))
        return results

    def _groups(self, actions: Sequence[str | None]) -> dict[int, list[int]]:
        """The positions of the envs to step, by toolbox; ``EpisodeOver`` or ``TypeError`` for a bad action."""
        groups: dict[int, list[int]] = {}
        for i, (env, action) in enumerate(zip(self.envs, actions)):
            if action is None:
                continue
            if env.done:
                raise EpisodeOver(f"env {i} of the batch has ended: reset it or pass None as its action")
            if not isinstance(action, str):
                raise TypeError(f"action {i} must be str or None, got {type(action).__name__}")
            groups.setdefault(id(env.toolbox), []).append(i)
        return groups

    async def _step_group(self, members: list[int], actions: Sequence[str | None],
                          results: list[StepResult | None]) -> None:
        toolbox = self.envs[members[0]].toolbox
        envs = [self.envs[i] for i in members]
        try:
            outcomes = await toolbox.run_async(_step_together(toolbox, envs, [actions[i] for i in members]))
        except RuntimeError as exc:  # the toolbox was closed under the step
            outcomes = [exc] * len(members)
        for i, outcome in zip(members, outcomes):
            results[i] = self._as_result(self.envs[i], outcome)

    @staticmethod
    def _as_result(env: ToolEnv, outcome: Any) -> StepResult:
        if isinstance(outcome, BaseException):
            info = env.abort(f"{type(outcome).__name__}: {outcome}")
            return StepResult("", float(env.reward_range[0]), False, True, info)
        return StepResult(*outcome)

    def reset(self, seeds: Sequence[int | None] | None = None,
              options: Sequence[dict[str, Any] | None] | None = None) -> list[tuple[str, dict[str, Any]]]:
        return asyncio.run(self.areset(seeds, options))

    def step(self, actions: Sequence[str | None]) -> list[StepResult | None]:
        return asyncio.run(self.astep(actions))

    def close(self) -> None:
        for env in self.envs:
            env.close()


async def _step_together(toolbox: Toolbox, envs: list[ToolEnv], actions: list[str]) -> list[Any]:
    """On the toolbox's loop: each env's step, as a step tuple or the exception that ended it. The turns' calls are
    started together with no task per env (a turn that ends the episode, or an env that steps or runs its calls its
    own way, goes on as a task of its own); what a failed step's episode held is released."""
    closing = _Closing(len(envs))
    later: dict[int, Coroutine[Any, Any, Any]] = {}
    for position, (env, action) in enumerate(zip(envs, actions)):
        try:
            if not env.steps_in_halves():
                later[position] = env.astep(action)
                continue
            turn = env.open_turn(action)
            if turn.ending is not None or not env.runs_calls_together(turn.calls):
                later[position] = env.continue_turn(turn)
            elif turn.calls:
                env.runtime.tool_filter.start(toolbox, turn.calls, closing.expect(position, env, turn))
            else:
                closing.outcomes[position] = env.close_turn(turn, [])
        except Exception as exc:  # noqa: BLE001 - one env's failure is its own
            closing.outcomes[position] = exc
    closing.release()
    for position, outcome in zip(later, await asyncio.gather(*later.values(), return_exceptions=True)):
        closing.outcomes[position] = outcome
    await closing.all_closed
    failed = [env for env, outcome in zip(envs, closing.outcomes) if isinstance(outcome, BaseException)]
    await asyncio.gather(*(env._aend_episode() for env in failed))  # release what the episode held
    return closing.outcomes


class _Closing:
    """The turns of one batch step whose calls run together: each closed as its results come (its outcome the step
    tuple, or the exception), and ``all_closed`` done once ``release`` was called and every expected turn closed."""

    def __init__(self, count: int):
        self.outcomes: list[Any] = [None] * count
        self._open = 1  # until ``release``: every turn is started
        self.all_closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def expect(self, position: int, env: ToolEnv, turn: OpenTurn) -> Callable[[list[ToolResult]], None]:
        """What the turn's results are handed to."""
        self._open += 1
        return functools.partial(self._close, position, env, turn)

    def _close(self, position: int, env: ToolEnv, turn: OpenTurn, results: list[ToolResult]) -> None:
        try:
            self.outcomes[position] = env.close_turn(turn, results)
        except Exception as exc:  # noqa: BLE001 - one env's failure is its own
            self.outcomes[position] = exc
        self.release()

    def release(self) -> None:
        self._open -= 1
        if not self._open:
            self.all_closed.set_result(None)
