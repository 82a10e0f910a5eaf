"""``DeltaTokenizer`` answers OpenRLHF's tokenizer call with exactly the trainer tokenizer's ids."""

from __future__ import annotations

import pytest

pytest.importorskip("openrlhf.utils.agent", reason="the OpenRLHF adapter tests run in .venv-openrlhf (.ci/openrlhf.sh)")

from rlfactory_adapters.delta_encoder import delta_encoder  # noqa: E402
from rlfactory_adapters.openrlhf.delta_tokenizer import DeltaTokenizer  # noqa: E402

TEXTS = ["", "\n<|im_start|>user\n<tool_response>\nDoc 1(Title: \"Straße\") naïve café 東京 🙂\n</tool_response>"
         "<|im_end|>\n<|im_start|>assistant\n", "plain words  with   spaces\r\n\t", "<|im_end|>\n" * 3]


def openrlhf_call(tokenizer, text):
    """How MultiTurnAgentExecutor tokenises the prompt and each environment_feedback."""
    return tokenizer(text=text, add_special_tokens=False, return_tensors="pt")["input_ids"][0].tolist()


@pytest.mark.parametrize("text", TEXTS)
def test_the_executor_call_gives_the_tokenizer_ids(tokenizer, text):
    wrapper = DeltaTokenizer(tokenizer, delta_encoder(tokenizer))
    expected = openrlhf_call(tokenizer, text)
    assert openrlhf_call(wrapper, text) == expected
    assert wrapper.encode_delta(text) == expected and openrlhf_call(wrapper, text) == expected  # from the memo


def test_other_calls_and_attributes_go_to_the_tokenizer(qwen3_tokenizer):
    wrapper = DeltaTokenizer(qwen3_tokenizer, delta_encoder(qwen3_tokenizer))
    wrapper.encode_delta("one text")
    assert openrlhf_call(wrapper, "another text") == openrlhf_call(qwen3_tokenizer, "another text")
    assert wrapper("hi", add_special_tokens=True)["input_ids"] == qwen3_tokenizer("hi")["input_ids"]
    assert wrapper.decode([151644]) == "<|im_start|>" and not hasattr(wrapper, "image_processor")
