"""The file for OpenRLHF's ``--train.agent_func_path``: every rlf/* env as an OpenRLHF multi-turn agent.

    --train.agent_func_path adapters/rlfactory_adapters/openrlhf/agent_func.py \
        --data.input_key prompt --data.label_key label

Each data row's ``label`` names the env and the task (``python -m rlfactory_adapters.prepare_data --trainer openrlhf``).
OpenRLHF's own ``MultiTurnAgentExecutor`` runs the loop and keeps the token bookkeeping token-in/token-out: the
model's ids as generated (``action_ranges``, rollout log-probabilities), each ``environment_feedback`` tokenised
on its own and appended (mask 0). This file supplies the agent:

- ``AgentInstance.reset`` leases a fresh env on the process's runtime for the label's env (``alease_env``), resets
  it on the label's task and returns the prompt rendered by the trainer's chat template from the env's first
  messages and tool schemas. OpenRLHF's dataset renders without tools, so the row's prompt is only shown in
  OpenRLHF's logs.
- ``AgentInstance.step`` passes the response to ``env.astep``; ``environment_feedback`` is the env's observation,
  which already carries the chat-template markup. ``rewards`` are the env's step rewards (OpenRLHF sums them),
  ``scores`` the episode's reward so far, ``done`` the env's ``terminated or truncated``.
- The budget is OpenRLHF's ``max_length`` (``--data.max_len``, prompt and response together). A response cut by
  it is recorded by the env but not run (``env.atruncate``); when an observation will not fit, the episode is
  ended there. Either way the episode is scored as one without an answer and ``extra_logs["length_cut"]`` is 1.
- An env whose chat format has stop sequences (rlf/Search-NQ-SearchR1-v0: ``</search>``, ``</answer>``) gets them
  as vLLM stop strings, kept in the output, on a per-sample copy of the shared ``sampling_params``
  (``ExactTextEngine``): the model stops right after its query instead of writing the ``<information>`` itself.
- ``AgentExecutor`` binds each instance to its sample (tokenizer, budget, engine) and gives the env back when the
  sample ends, however it ends. The executor tokenises through ``DeltaTokenizer``: the same ids as
  the trainer's tokenizer, each observation tokenised once (tiktoken where provably equal).
- With ``RLF_TRAJECTORY_DIR`` set, every Nth episode is also written for ``rlf view``
  (``rlfactory_adapters.trajectory_log``; OpenRLHF tells the agent no training step).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import torch
from openrlhf.utils.agent import AgentExecutorBase, AgentInstanceBase, MultiTurnAgentExecutor

from rlfactory_adapters.chat_prompt import prompt_text, template_kwargs_for, with_model_template
from rlfactory_adapters.episode_label import EpisodeLabel
from rlfactory_adapters.openrlhf.sample_run import SampleRun
from rlfactory_adapters.trajectory_log import log_episode

logger = logging.getLogger(__name__)

LENGTH_CUT_REASON = "response_length"
"""``info["truncation_reason"]`` of an episode ended by the trainer's token budget (as in the verl adapter)."""

EXTRA_LOG_KEYS = ("num_turns", "tool_calls", "answered", "truncated", "length_cut", "env_error")
"""Every step returns exactly these ``extra_logs`` (OpenRLHF merges them across samples by key)."""


class AgentInstance(AgentInstanceBase):
    """One sample's episode of an rlf env. Built by ``AgentExecutor`` (which passes the ``SampleRun``)."""

    def __init__(self, run: SampleRun | None = None):
        if run is None:
            raise TypeError("AgentInstance is driven by AgentExecutor of "
                            "adapters/rlfactory_adapters/openrlhf/agent_func.py: point "
                            "--train.agent_func_path at that file rather than wrapping AgentInstance yourself")
        self.run = run
        self.turns = 0
        self.tool_calls = 0
        self.reward = 0.0

    async def reset(self, states: dict, **kwargs: Any) -> dict:
        """``states["label"]`` names the env and task; returns ``{"observation": rendered prompt text}``."""
        label = EpisodeLabel.parse(states["label"])
        env = await self.run.lease(label.env_id, with_model_template(label.env_kwargs, self.run.tokenizer))
        _, info = await env.areset(options={"task": label.task})
        prompt = prompt_text(self.run.tokenizer, info["messages"], info["tools"], **template_kwargs_for(env))
        return {"observation": prompt}

    async def step(self, states: dict, **kwargs: Any) -> dict:
        """One turn: ``states["action_text"]`` (the exact text of the generated ids) goes to the env."""
        env = self.run.env
        if env is None:
            raise RuntimeError("step() before reset(), or after the episode ended")
        generation = self.run.engine.last
        text = states["action_text"]
        self.turns += 1
        length_cut = env_error = False
        try:
            if generation is not None and generation.hit_length_limit:
                obs, reward, terminated, truncated, info = await env.atruncate(LENGTH_CUT_REASON, text)
                length_cut = True
            else:
                obs, reward, terminated, truncated, info = await env.astep(text)
                self.tool_calls += len(info.get("tool_calls", ()))
                if not (terminated or truncated) and generation is not None and self._fills_budget(generation, obs):
                    _, last_reward, terminated, truncated, info = await env.atruncate(LENGTH_CUT_REASON)
                    reward += last_reward
                    length_cut = True
        except Exception as exc:  # noqa: BLE001 - an internal failure ends this sample's episode, not the batch
            logger.exception("rlf env %s failed in step; the episode ends with reward 0", type(env).__name__)
            env.abort(f"{type(exc).__name__}: {exc}")
            obs, reward, terminated, truncated, env_error = "", 0.0, False, True, True

        done = bool(terminated or truncated)
        self.reward += float(reward)
        if done:
            log_episode(env, self.run.env_id, reward=self.reward, terminated=bool(terminated),
                        truncated=bool(truncated), answer=None if env_error else info.get("answer"), step=None,
                        trainer="openrlhf")
            await self.run.release()
        return {
            "rewards": torch.tensor(float(reward)),
            "scores": torch.tensor(self.reward),
            "environment_feedback": obs,
            "done": done,
            "extra_logs": {
                "num_turns": float(self.turns), "tool_calls": float(self.tool_calls),
                "answered": float(bool(terminated)), "truncated": float(bool(truncated)),
                "length_cut": float(length_cut), "env_error": float(env_error),
            },
        }

    def _fills_budget(self, generation: Any, observation: str) -> bool:
        """Whether OpenRLHF's loop stops after appending ``observation`` (no room left to generate)."""
        return generation.end + len(self.run.delta_tokenizer.encode_delta(observation)) >= self.run.max_length


class AgentExecutor(AgentExecutorBase):
    """OpenRLHF's ``MultiTurnAgentExecutor`` over ``AgentInstance``, one ``SampleRun`` per sample.

    OpenRLHF builds it with no arguments, once per vLLM engine, and calls ``execute`` concurrently for every
    sample; each sample leases a fresh env on the process's runtime for its env (``alease_env``).
    """

    async def execute(self, prompt, label, sampling_params, max_length: int, hf_tokenizer, llm_engine, images=None):
        run = SampleRun(hf_tokenizer, max_length, llm_engine)
        loop = MultiTurnAgentExecutor(AgentInstance)
        loop.agent_instance_cls = functools.partial(AgentInstance, run)
        try:
            return await loop.execute(prompt, label, sampling_params, max_length, run.delta_tokenizer, run.engine,
                                      images)
        finally:
            await run.release()
