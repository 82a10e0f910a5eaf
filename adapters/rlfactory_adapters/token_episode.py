"""``TokenEpisode``: the token-in/token-out record of one multi-turn episode.

The prompt's ids come first; after them, the response grows by appending the model's tokens as generated
(mask 1, with their log-probabilities) and the environment's text deltas tokenised on their own (mask 0,
log-probability 0.0). The history is never re-rendered, so the ids are exactly what the policy saw and produced.
The response never exceeds ``max_response_tokens``: what does not fit is cut, and ``was_cut`` says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlfactory_adapters.delta_encoder import DeltaEncoder, delta_encoder


class TokenEpisode:
    """Prompt ids plus an aligned ``response_ids`` / ``response_mask`` / ``response_logprobs`` triple.

    ``logprobs_complete`` is ``False`` once any model chunk came without log-probabilities (their places hold
    0.0); trainers that need rollout log-probabilities check it.
    """

    def __init__(self, tokenizer: Any, prompt_ids: Sequence[int], max_response_tokens: int,
                 encoder: DeltaEncoder | None = None):
        if max_response_tokens < 0:
            raise ValueError("max_response_tokens must be >= 0")
        self.tokenizer = tokenizer
        self.encoder = encoder or delta_encoder(tokenizer)
        self.prompt_ids: list[int] = list(prompt_ids)
        self.max_response_tokens = max_response_tokens
        self.response_ids: list[int] = []
        self.response_mask: list[int] = []
        self.response_logprobs: list[float] = []
        self.logprobs_complete = True
        self.was_cut = False

    @property
    def remaining(self) -> int:
        """Response tokens that still fit the budget."""
        return self.max_response_tokens - len(self.response_ids)

    @property
    def is_full(self) -> bool:
        return self.remaining <= 0

    @property
    def all_ids(self) -> list[int]:
        """Prompt and response ids: what the model is conditioned on for its next turn (a new list)."""
        return self.prompt_ids + self.response_ids

    @property
    def model_token_count(self) -> int:
        return sum(self.response_mask)

    def add_model_tokens(self, ids: Sequence[int], logprobs: Sequence[float] | None = None) -> list[int]:
        """Append the model's tokens as generated (mask 1); return those that fit the budget. Log-probabilities
        that do not come one per id (an engine bug) are dropped like missing ones: one sample's bad output must
        not fail a trainer's whole batch, and ``logprobs_complete`` tells."""
        if logprobs is not None and len(logprobs) != len(ids):
            logprobs = None
        kept = list(ids[: max(self.remaining, 0)])
        if len(kept) < len(ids):
            self.was_cut = True
        self.response_ids += kept
        self.response_mask += [1] * len(kept)
        if logprobs is None:
            self.logprobs_complete = self.logprobs_complete and not kept
            self.response_logprobs += [0.0] * len(kept)
        else:
            self.response_logprobs += [float(lp) for lp in logprobs[: len(kept)]]
        return kept

    def add_environment_text(self, text: str) -> list[int]:
        """Tokenise only ``text`` (no special tokens added) and append it with mask 0; return the ids that fit."""
        ids = self.encoder.encode(text) if text else []
        kept = ids[: max(self.remaining, 0)]
        if len(kept) < len(ids):
            self.was_cut = True
        self.response_ids += kept
        self.response_mask += [0] * len(kept)
        self.response_logprobs += [0.0] * len(kept)
        return kept
