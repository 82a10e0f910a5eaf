"""The LLM engine as the agent sees it: vLLM's output text replaced by the exact text of the generated ids.

vLLM's ``outputs[0].text`` leaves the stop token out (a Qwen3 response's closing ``<|im_end|>``) while
``token_ids`` keep it. OpenRLHF appends the token ids to the sequence but hands the text to the agent; an env
given the text without ``<|im_end|>`` closes the turn itself and the sequence would hold ``<|im_end|>`` twice.
Decoding the ids with ``skip_special_tokens=False`` makes the text the env sees exactly the tokens the sequence
holds, so ``decode(ids)`` is the env's transcript.

When the sample's env has stop sequences (Search-R1's ``</search>``, ``</answer>``: ``ChatFormat.stop_sequences``),
each call gets its own copy of the sampling params with them added to vLLM's ``stop`` and
``include_stop_str_in_output=True``, so the model stops right after its query or answer. OpenRLHF shares one
``sampling_params`` object across the samples of a batch, and that object is never changed.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rlfactory_adapters.episode_driver import merge_stops


@dataclass(frozen=True)
class GenerationRecord:
    """One generation call: how many ids the model was given, what it returned, and why it stopped."""

    prompt_length: int
    token_ids: tuple[int, ...]
    finish_reason: str | None

    @property
    def end(self) -> int:
        """The sequence length right after this generation."""
        return self.prompt_length + len(self.token_ids)

    @property
    def hit_length_limit(self) -> bool:
        """The engine stopped at ``max_tokens``: the response is cut, not finished."""
        return self.finish_reason == "length"


class ExactTextEngine:
    """Wraps an OpenRLHF rollout engine (anything with ``async generate(ids, sampling_params, ...)`` returning a
    vLLM ``RequestOutput``); one per sample, since it remembers that sample's last generation. ``stop_sequences``
    are the sample's env's (set when the env is leased)."""

    def __init__(self, engine: Any, tokenizer: Any, stop_sequences: Sequence[str] = ()):
        self.engine = engine
        self.tokenizer = tokenizer
        self.stop_sequences = tuple(stop_sequences)
        self.last: GenerationRecord | None = None
        self.calls = 0

    async def generate(self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None,
                       **kwargs: Any) -> Any:
        output = await self.engine.generate(prompt_token_ids, self.sampling_params_for(sampling_params),
                                            multi_modal_data=multi_modal_data, **kwargs)
        completion = output.outputs[0]
        token_ids = tuple(completion.token_ids)
        completion.text = self.tokenizer.decode(list(token_ids), skip_special_tokens=False)
        self.last = GenerationRecord(len(prompt_token_ids), token_ids, completion.finish_reason)
        self.calls += 1
        return output

    def sampling_params_for(self, sampling_params: Any) -> Any:
        """``sampling_params`` itself when the env has no stop sequences, else a copy (vLLM's ``SamplingParams``
        reads ``stop`` and ``include_stop_str_in_output`` per request) with the env's stop strings after any
        configured ones."""
        if not self.stop_sequences:
            return sampling_params
        params = copy.deepcopy(sampling_params)
        params.stop = merge_stops(getattr(sampling_params, "stop", None), self.stop_sequences)
        params.include_stop_str_in_output = True
        return params

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)
