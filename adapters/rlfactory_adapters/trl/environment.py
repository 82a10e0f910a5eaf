"""One rollout of an rlf env as TRL's ``GRPOTrainer(environment_factory=...)`` plays it.

TRL's contract (trl 1.16, ``GRPOTrainer``'s ``environment_factory``): an instance per rollout; ``reset(**row)``
before generation (a string it returns is appended to the prompt's last message); each public method is a tool the
model may call (TRL parses the model's calls with the tokenizer's response schema, calls the methods, and renders
their results with the chat template, masked out of the loss); the rollout ends when a response calls no tool.

Here an rlf env keeps its own semantics under that loop:
- the tools are the env's (``tool_methods``: the schemas the env shows); the calls of one response (TRL gathers a
  response's async calls at once) are one turn of the env: written back in the env's chat format
  (``ChatFormat.render_call``) and stepped together, so ``max_turns``, the tool-call limit and the env's
  feedback are the env's own;
- the response without a call ends the rollout: ``_finish`` steps it into the env (its answer is scored) and, when
  the env does not end on it (no answer it reads) or TRL stopped the loop itself (the completion budget, the
  tool-calling iterations), ends the episode truncated, scored as one without an answer;
- an episode the env ended earlier (an ending action, the turn limit) keeps its reward; a later call is told the
  episode is over and runs nothing;
- the reward is the env's (``RlfEnvSpec.reward_funcs``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.tool_call import ToolCall

TRAINER_CUT = "trainer_cut"
"""Truncation reason of an episode TRL stopped with tool calls unanswered (completion budget, iterations)."""
NO_ANSWER = "final_response_unread"
"""Truncation reason of an episode whose final response held no answer the env reads."""
OVER = "The episode is over; this call was not run."


class RlfEnvironment:
    """One rollout slot of an rlf env (subclassed per env with its tools as methods: ``RlfEnvSpec``)."""

    def __init__(self, env: ToolEnv):
        self._env = env
        self._pending: list[tuple[ToolCall, asyncio.Future[str]]] = []
        self.reward: float | None = None
        self.info: dict[str, Any] = {}

    # -- TRL's contract --------------------------------------------------------------------------------------

    def reset(self, rlf_task: str | None = None, seed: int | None = None, **row: Any) -> str | None:
        """Start an episode on the row's task (``rlf_task``, a task dict as JSON, from ``RlfEnvSpec``'s dataset):
        nothing is returned, the row's prompt is the env's. Without one (no dataset), a task is drawn and the
        prompt returned for TRL to append to its empty user message."""
        options = {"task": json.loads(rlf_task)} if rlf_task else None
        prompt, info = self._env.reset(seed=seed, options=options)
        self.reward, self.info, self._pending = None, {}, []
        if options is not None:
            return None
        if len(info["messages"]) > 1:
            raise ConfigError(f"{self._env.spec.id if self._env.spec else type(self._env).__name__} opens with "
                              f"{len(info['messages'])} messages, which TRL cannot take from reset(): give the "
                              "trainer train_dataset=RlfEnvSpec(...).train_dataset")
        return prompt

    # -- tool calls ------------------------------------------------------------------------------------------

    async def _call(self, name: str, arguments: dict[str, Any]) -> str:
        """One tool call of the model's response: stepped with the others of its response (those started in this
        loop iteration), its own result back."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = loop.create_future()
        self._pending.append((ToolCall(name, dict(arguments)), future))
        if len(self._pending) == 1:
            loop.call_soon(lambda: loop.create_task(self._step_pending()))
        return await future

    async def _step_pending(self) -> None:
        pending, self._pending = self._pending, []
        try:
            texts = await self._turn([call for call, _ in pending])
        except Exception as exc:  # noqa: BLE001 - TRL shows a failed call as {"error": ...}
            for _, future in pending:
                future.set_exception(exc)
            return
        for (_, future), text in zip(pending, texts):
            future.set_result(text)

    async def _turn(self, calls: list[ToolCall]) -> list[str]:
        """The env's turn for ``calls``; each call's result text (the env's feedback after the last)."""
        env = self._env
        if env.done:
            return [OVER] * len(calls)
        response = "\n".join(env.chat_format.render_call(call) for call in calls)
        _, reward, terminated, truncated, info = await env.astep(response)
        results = [result["text"] for result in info.get("tool_results", [])]
        notes = [m["content"] for m in info.get("messages", []) if m.get("role") == "user" and m.get("content")]
        if terminated or truncated:
            self._record(reward, info)
            notes.append("The episode is over.")
        texts = results + [""] * (len(calls) - len(results)) if len(results) <= len(calls) else results[:len(calls)]
        if notes:
            texts[-1] = "\n".join(filter(None, [texts[-1], *notes]))
        return texts

    # -- the end ---------------------------------------------------------------------------------------------

    async def _finish(self, completion: list[dict[str, Any]]) -> float:
        """End the episode with the rollout's last message (TRL's completion); its reward."""
        env = self._env
        if not env.done:
            last = completion[-1] if completion else {}
            text = last.get("content") if isinstance(last.get("content"), str) else ""
            if last.get("tool_calls") or last.get("role") != "assistant":
                self._record(*_reward_and_info(await env.atruncate(TRAINER_CUT, text)))
            else:
                step = await env.astep(text)
                if not env.done:
                    step = await env.atruncate(NO_ANSWER)
                self._record(*_reward_and_info(step))
        return float(self.reward if self.reward is not None else env.reward_range[0])

    def _record(self, reward: float, info: dict[str, Any]) -> None:
        self.reward, self.info = float(reward), info


def _reward_and_info(step: tuple[str, float, bool, bool, dict[str, Any]]) -> tuple[float, dict[str, Any]]:
    return step[1], step[4]
