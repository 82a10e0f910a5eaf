"""The fast delta encoder must tokenise exactly as the tokenizer does, on any text."""

from __future__ import annotations

import json

import transformers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlfactory_adapters.delta_encoder import (
    TiktokenDeltaEncoder,
    TokenizerDeltaEncoder,
    delta_encoder,
    tiktoken_encoder,
)

MARKUP = ["<|im_start|>", "<|im_end|>", "<tool_response>", "</tool_response>", "<think>", "</think>", "\n", " ",
          "<|endoftext|>", "<tool_call>", "'s", "\u0338", "\u0301", "Å", "ﬁ", "東京", "🙂", "\r\n", "  ", "1,234.5"]
texts = st.lists(st.one_of(st.text(max_size=40), st.sampled_from(MARKUP)), max_size=30).map("".join)


def test_qwen3_takes_the_tiktoken_path(qwen3_tokenizer):
    assert isinstance(delta_encoder(qwen3_tokenizer), TiktokenDeltaEncoder)
    assert delta_encoder(qwen3_tokenizer) is delta_encoder(qwen3_tokenizer)  # built once per tokenizer


def test_a_tokenizer_without_a_byte_level_split_regex_falls_back(small_tokenizer):
    assert tiktoken_encoder(small_tokenizer) is None
    assert isinstance(delta_encoder(small_tokenizer), TokenizerDeltaEncoder)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts)
def test_encoding_equals_the_tokenizer(tokenizer, text):
    assert delta_encoder(tokenizer).encode(text) == tokenizer.encode(text, add_special_tokens=False)


def test_added_tokens_inside_composable_text_are_split_first(qwen3_tokenizer):
    text = "<|im_end|>\u0338 and <think>\u0301"  # NFC would merge '>' + U+0338 if applied before the split
    assert delta_encoder(qwen3_tokenizer).encode(text) == qwen3_tokenizer.encode(text, add_special_tokens=False)


def test_tokens_added_later_are_seen(qwen3_tokenizer):
    tokenizer = transformers.AutoTokenizer.from_pretrained(qwen3_tokenizer.name_or_path)
    before = delta_encoder(tokenizer)
    tokenizer.add_tokens(["<rlf_marker>"])
    text = "a<rlf_marker>b"
    assert delta_encoder(tokenizer) is not before
    assert delta_encoder(tokenizer).encode(text) == tokenizer.encode(text, add_special_tokens=False)


def test_a_vocabulary_entry_no_merge_makes_refuses_the_fast_path(qwen3_tokenizer):
    from rlfactory_adapters.delta_encoder import _ranks_follow_merges

    model = json.loads(qwen3_tokenizer.backend_tokenizer.to_str())["model"]
    assert _ranks_follow_merges(model)
    assert not _ranks_follow_merges({**model, "vocab": {**model["vocab"], "zzzzqqqq": len(model["vocab"])}})


def test_the_cached_encoder_is_found_without_sizing_the_vocabulary(qwen3_tokenizer, monkeypatch):
    """``len(tokenizer)`` and ``get_vocab_size`` rebuild the vocabulary with tokenizers 0.22 (40 ms a call)."""
    encoder = delta_encoder(qwen3_tokenizer)

    class Unsizeable:
        def __init__(self, backend):
            self.backend = backend

        def get_vocab_size(self, *args, **kwargs):
            raise AssertionError("the vocabulary was sized")

        def __getattr__(self, name):
            return getattr(self.backend, name)

    def no_len(self):
        raise AssertionError("len(tokenizer) called")

    monkeypatch.setattr(type(qwen3_tokenizer), "__len__", no_len)
    monkeypatch.setattr(type(qwen3_tokenizer), "backend_tokenizer",
                        property(lambda self, backend=qwen3_tokenizer.backend_tokenizer: Unsizeable(backend)))
    assert delta_encoder(qwen3_tokenizer) is encoder
