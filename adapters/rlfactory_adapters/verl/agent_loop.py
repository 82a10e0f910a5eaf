"""``RlfAgentLoop``: verl 0.9's ``AgentLoopBase`` playing one rlf env episode per sample, token-in/token-out.

Per sample, ``run`` reads the env id, kwargs and task from the row's ``extra_info``, leases a fresh env on the
process's runtime for that env (``rlfactory_adapters.env_lease``) and hands it to the shared driver
(``rlfactory_adapters.episode_driver``): the
prompt is rendered once with the tokenizer's chat template (``data.apply_chat_template_kwargs``, with the env's
thinking mode taking precedence) and cut from the left at ``rollout.prompt_length`` as verl's own loops do; each
turn is generated with ``server_manager.generate`` from the ids so far with ``max_tokens`` set to what is left of
``rollout.response_length``; the env's observation is tokenised as a delta (mask 0) after the model's own tokens
(mask 1, with their log-probabilities). When the env's chat format has stop sequences (Search-R1's
``</search>``, ``</answer>``), every call's ``sampling_params`` carry them as ``stop`` (after any stop strings
already there) with the stop string kept in the output (verl's vLLM server passes the dict to ``SamplingParams``).
The episode stops on terminated/truncated or when the response budget is spent. The returned ``AgentLoopOutput``
carries the env's reward as ``reward_score`` (verl then skips its reward manager for the sample), verl's turn
count, and in ``extra_fields`` the reward parts, the stop reason, the per-episode metrics and, when the env pays
process rewards (``process_reward=``), each turn's as ``turn_scores``.

Loop config (``agent_loop.yaml``; hydra passes its keys to ``__init__``): ``env_id`` (default for rows without
one), ``env_kwargs`` (override the rows' kwargs, e.g. tool-server URLs of this deployment) and ``reward_parts``
(the reward parts logged as ``reward_extra_info``: verl needs the same keys on every sample, so missing parts
are 0.0). With ``RLF_TRAJECTORY_DIR`` set, every Nth training step's episodes are also written for ``rlf view``
(``rlfactory_adapters.trajectory_log``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import uuid4

from omegaconf import DictConfig, ListConfig, OmegaConf
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register
from verl.utils.rollout_trace import rollout_trace_op
from verl.workers.rollout.replica import TokenOutput

from rlfactory_adapters.chat_prompt import template_kwargs_for, with_model_template
from rlfactory_adapters.env_lease import alease_env
from rlfactory_adapters.episode_driver import EpisodeResult, Generation, merge_stops, run_episode, stop_sequences
from rlfactory_adapters.trajectory_log import log_episode
from rlfactory_adapters.verl.row_spec import row_spec

logger = logging.getLogger(__name__)
logger.setLevel(os.getenv("VERL_LOGGING_LEVEL", "WARN"))

AGENT_NAME = "rlf_agent"


def _plain(value: Any) -> Any:
    """A hydra/OmegaConf node as plain Python (dicts, lists)."""
    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=True)
    return value


def count_env_turns(response_mask: Sequence[int]) -> int:
    """The env turns in a response: the runs of mask-0 tokens."""
    turns, previous = 0, 1
    for bit in response_mask:
        if bit == 0 and previous != 0:
            turns += 1
        previous = bit
    return turns


@register(AGENT_NAME)
class RlfAgentLoop(AgentLoopBase):
    """One rlf env episode per sample. See the module docstring for the loop-config keys."""

    def __init__(self, *args: Any, env_id: str | None = None, env_kwargs: Mapping[str, Any] | None = None,
                 reward_parts: Sequence[str] | None = None, **kwargs: Any):
        kwargs.pop("name", None)  # the loop config's own name, passed along by hydra.utils.instantiate
        kwargs.pop("tools", None)  # verl's tool list (ToolListWrap): rlf envs bring their own MCP tools
        super().__init__(*args, **kwargs)
        self.prompt_length = int(self.rollout_config.prompt_length)
        self.response_length = int(self.rollout_config.response_length)
        self.default_env_id = env_id
        self.env_kwargs_override = dict(_plain(env_kwargs) or {})
        self.reward_parts = [str(part) for part in (_plain(reward_parts) or [])]

    @rollout_trace_op
    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """Play the row's episode; ``kwargs`` are the row's dataset fields (``extra_info``, ``priority``, ...)."""
        spec = row_spec(kwargs.get("extra_info"), default_env_id=self.default_env_id,
                        env_kwargs_override=self.env_kwargs_override)
        priority = int(kwargs.get("priority", 0))
        full_determinism = bool(getattr(self.rollout_config, "full_determinism", False))
        request_id = f"det-{priority}" if full_determinism else uuid4().hex
        want_logprobs = bool(sampling_params.get("logprobs"))
        generation_fields: dict[str, Any] = {}
        num_preempted = [-1]
        params = dict(sampling_params)

        async def generate(token_ids: list[int], max_new_tokens: int) -> Generation:
            output: TokenOutput = await self.server_manager.generate(
                request_id=request_id, prompt_ids=token_ids,
                sampling_params={**params, "max_tokens": max_new_tokens}, priority=priority)
            if output.num_preempted is not None:
                num_preempted[0] = max(num_preempted[0], 0) + output.num_preempted
            _merge_generation_fields(generation_fields, output.extra_fields)
            logprobs = output.log_probs if want_logprobs and output.log_probs else None
            # verl reports vLLM's "stop" and "length" both as "completed"; its resuming client says "length"
            finish_reason = "length" if output.stop_reason == "length" else None
            return Generation(token_ids=output.token_ids, logprobs=logprobs, finish_reason=finish_reason)

        async with alease_env(spec.env_id, with_model_template(spec.env_kwargs, self.tokenizer)) as env:
            params.update(self._stop_params(sampling_params, stop_sequences(env)))
            result = await run_episode(env, self.tokenizer, generate, task=spec.task,
                                       max_response_tokens=self.response_length,
                                       max_prompt_tokens=self.prompt_length,
                                       template_kwargs=self._template_kwargs(env))
            log_episode(env, spec.env_id, reward=result.reward, terminated=result.terminated,
                        truncated=result.truncated, answer=result.answer,
                        step=generation_fields.get("max_global_steps"), trainer="verl")
        return self._output(result, spec.env_id, want_logprobs, generation_fields, num_preempted[0])

    def _stop_params(self, sampling_params: Mapping[str, Any], stops: Sequence[str]) -> dict[str, Any]:
        """The sampling params that make the rollout server stop after the env's stop strings, keeping them in the
        output: vLLM's ``stop`` and ``include_stop_str_in_output`` (SGLang's ``no_stop_trim``). The driver decodes
        the returned ids itself, so the action is token-exact whatever the server does with text."""
        if not stops:
            return {}
        keep_key = "no_stop_trim" if getattr(self.rollout_config, "name", "vllm") == "sglang" else \
            "include_stop_str_in_output"
        return {"stop": merge_stops(sampling_params.get("stop"), stops), keep_key: True}

    def _template_kwargs(self, env: Any) -> dict[str, Any]:
        """``data.apply_chat_template_kwargs`` with the env's own (its thinking mode decides how its observations
        open the next assistant turn, so the prompt must be rendered the same way)."""
        configured = dict(_plain(self.apply_chat_template_kwargs) or {})
        own = template_kwargs_for(env)
        clashes = {key for key in own if key in configured and configured[key] != own[key]}
        if clashes:
            logger.warning("data.apply_chat_template_kwargs %s disagree with the env's chat format; the env's "
                           "values are used (set them in the env kwargs instead)", sorted(clashes))
        return {**configured, **own}

    def _output(self, result: EpisodeResult, env_id: str, want_logprobs: bool,
                generation_fields: dict[str, Any], num_preempted: int) -> AgentLoopOutput:
        if result.metrics.get("prompt_truncated"):
            # verl pads prompts to rollout.prompt_length; the driver cut this one from the left before generating.
            logger.warning("an rlf prompt exceeded rollout.prompt_length=%d and was cut from the left; raise "
                           "rollout.prompt_length (the env's tool schemas are part of the prompt)", self.prompt_length)
        if want_logprobs and not result.logprobs_complete:
            logger.warning("the rollout server returned no log-probabilities for some tokens; they are 0.0")
        parts = {key: float(value) for key, value in result.reward_parts.items()}
        reward_extra_info = {"score": float(result.reward), "answered": float(result.terminated)}
        reward_extra_info.update({part: parts.get(part, 0.0) for part in self.reward_parts})
        episode_metrics = {**result.metrics, "prompt_tokens": float(len(result.prompt_ids))}
        extra_fields = {
            **generation_fields,
            "turn_scores": list(result.turn_scores),
            "tool_rewards": [],
            "reward_extra_info": reward_extra_info,
            "rlf_env_id": env_id,
            "rlf_reward_parts": parts,
            "rlf_stop_reason": result.stop_reason,
            "rlf_answer": result.answer,
            "rlf_metrics": episode_metrics,
        }
        return AgentLoopOutput(
            prompt_ids=result.prompt_ids,
            response_ids=result.response_ids[: self.response_length],
            response_mask=result.response_mask[: self.response_length],
            response_logprobs=result.response_logprobs[: self.response_length] if want_logprobs else None,
            reward_score=float(result.reward),
            num_turns=1 + result.num_turns + count_env_turns(result.response_mask),
            metrics=AgentLoopMetrics(generate_sequences=result.metrics.get("generate_s", 0.0),
                                     tool_calls=result.metrics.get("env_s", 0.0), num_preempted=num_preempted),
            extra_fields=extra_fields,
        )


def _merge_generation_fields(fields: dict[str, Any], new: Mapping[str, Any]) -> None:
    """Keep the first generation's ``extra_fields`` (model version bookkeeping), updating ``max_global_steps``
    from later turns, as verl's ``ToolAgentLoop`` does."""
    if not fields:
        fields.update(new)
    elif new.get("max_global_steps") is not None:
        fields["max_global_steps"] = new["max_global_steps"]
