"""What a trainer's token record of an episode must satisfy, for any tokenizer: the ids decode back to the prompt
and transcript exactly, the loss mask covers the model's tokens and nothing else, and no other format's markers
appear (a Gemma model never reads ChatML's ``<|im_start|>`` as text)."""

from __future__ import annotations

from typing import Any

MARKERS = {"chatml": ("<|im_start|>", "<|im_end|>"), "gemma": ("<start_of_turn>", "<end_of_turn>"),
           "llama3": ("<|start_header_id|>", "<|eot_id|>")}


def check_token_record(result: Any, tokenizer: Any, model_texts: list[str], own: str) -> None:
    """``result`` (an ``EpisodeResult``) of an episode whose model wrote ``model_texts`` (decoded), on a tokenizer of
    the ``own`` marker family (a key of ``MARKERS``)."""
    decoded = tokenizer.decode(result.prompt_ids + result.response_ids, skip_special_tokens=False)
    assert decoded == result.prompt + result.transcript
    assert len(result.response_ids) == len(result.response_mask) == len(result.response_logprobs)
    spans, current = [], []
    for token, bit in zip(result.response_ids, result.response_mask):
        if bit:
            current.append(token)
        elif current:
            spans.append(current)
            current = []
    spans += [current] if current else []
    assert [tokenizer.decode(span, skip_special_tokens=False) for span in spans] == model_texts
    foreign = [marker for family, markers in MARKERS.items() if family != own for marker in markers]
    assert not [marker for marker in foreign if marker in decoded], "another format's markers in the episode"
