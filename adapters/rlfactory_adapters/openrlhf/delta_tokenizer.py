"""The trainer's tokenizer as OpenRLHF's executor calls it, with the observation deltas tokenised by
``rlfactory_adapters.delta_encoder`` (the same ids, several times faster on long tool responses).

OpenRLHF's ``MultiTurnAgentExecutor`` tokenises the prompt and each ``environment_feedback`` with
``hf_tokenizer(text=..., add_special_tokens=False, return_tensors="pt")``. The adapter has already tokenised the
feedback once (to know whether the next turn still fits the budget), so that call is answered from a one-entry
memo of the last text, and any other text with the delta encoder. Every other use goes to the tokenizer itself.
"""

from __future__ import annotations

from typing import Any

import torch

from rlfactory_adapters.delta_encoder import DeltaEncoder


class DeltaTokenizer:
    """Wraps a Hugging Face tokenizer; ``encode_delta(text)`` and plain ``__call__`` share one memo."""

    def __init__(self, tokenizer: Any, encoder: DeltaEncoder):
        self.tokenizer = tokenizer
        self.encoder = encoder
        self._memo: tuple[str, list[int]] | None = None

    def encode_delta(self, text: str) -> list[int]:
        """``tokenizer.encode(text, add_special_tokens=False)``, remembered for the next call with this text."""
        if self._memo is not None and self._memo[0] == text:
            return self._memo[1]
        ids = self.encoder.encode(text)
        self._memo = (text, ids)
        return ids

    def __call__(self, text: Any = None, *args: Any, add_special_tokens: bool = True, return_tensors: Any = None,
                 **kwargs: Any) -> Any:
        if isinstance(text, str) and not args and not kwargs and not add_special_tokens and return_tensors == "pt":
            return {"input_ids": torch.tensor([self.encode_delta(text)], dtype=torch.long)}
        return self.tokenizer(text, *args, add_special_tokens=add_special_tokens, return_tensors=return_tensors,
                              **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tokenizer, name)
