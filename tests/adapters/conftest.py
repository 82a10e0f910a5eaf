"""Tokenizers for the adapter tests: the real Qwen3 one from ../shared/data, and a small one built here."""

from __future__ import annotations

import pytest

from tests.conftest import shared_file

transformers = pytest.importorskip("transformers", reason="the adapter tests need transformers (pip install .[test])")

CHATML_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\nTools:\n{%- for tool in tools %}\n{{ tool | tojson }}{%- endfor %}"
    "<|im_end|>\n{%- endif %}"
    "{%- for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)
SMALL_SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]
SMALL_CORPUS = [
    "Doc 1(Title: \"Mount Arvel\") Mount Arvel is the highest peak of Velmora.",
    '<tool_call>\n{"name": "search", "arguments": {"query": "who founded Pellory"}}\n</tool_call>',
    "<tool_response>\nthe harbour town was founded in 1306\n</tool_response> <answer>1306</answer>",
    "<think>\nI should search first.\n</think>\n\n Question: what is the capital? naïve café",
] * 50


@pytest.fixture(scope="session")
def qwen3_tokenizer():
    """The official Qwen3 tokenizer and chat template (skips when ../shared/data is absent)."""
    path = shared_file("tokenizers/qwen3/tokenizer.json").parent
    return transformers.AutoTokenizer.from_pretrained(str(path))


@pytest.fixture(scope="session")
def small_tokenizer():
    """A 400-token byte-level BPE trained here on agent-like text, with ChatML specials and a ChatML template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SMALL_SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    backend.train_from_iterator(SMALL_CORPUS, trainer=trainer)
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>",
                                                     pad_token="<|endoftext|>")
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


@pytest.fixture(scope="session", params=["small", "qwen3"])
def tokenizer(request):
    """Each test that takes ``tokenizer`` runs with both tokenizers."""
    return request.getfixturevalue(f"{request.param}_tokenizer")
