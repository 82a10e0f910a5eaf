"""Tokenising the environment's text deltas: the one tokenizer call an adapter makes per turn.

``delta_encoder(tokenizer)`` gives an object with ``encode(text) -> list[int]`` that returns exactly what
``tokenizer.encode(text, add_special_tokens=False)`` returns. For byte-level BPE tokenizers whose vocabulary is a
tiktoken rank table (Qwen2/2.5/3, Llama 3, GPT-style), it encodes with tiktoken, about 4x faster than the
Hugging Face tokenizer on long tool responses; it checks the equivalence conditions and a probe text before it
trusts the fast path, and falls back to the tokenizer itself otherwise (or when tiktoken is not installed).
"""

from __future__ import annotations

import json
import re
import unicodedata
import weakref
from typing import Any, Protocol

PROBE_TEXT = ("<|im_end|>\n<|im_start|>user\n<tool_response>\nDoc 1(Title: \"Straße\") naïve café — 1,234.5 "
              "it's we'll 東京 🙂\r\n\t  end</tool_response><|im_end|>\n<|im_start|>assistant\n")


class DeltaEncoder(Protocol):
    """``encode(text)``: the token ids of ``text`` without BOS/EOS or other added special tokens."""

    def encode(self, text: str) -> list[int]: ...


class TokenizerDeltaEncoder:
    """The Hugging Face tokenizer itself (any tokenizer with ``encode(text, add_special_tokens=False)``)."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))


class TiktokenDeltaEncoder:
    """A byte-level BPE tokenizer's vocabulary run by tiktoken, with Hugging Face's handling of added tokens.

    Like the Hugging Face pipeline: added tokens are split off the raw text first, then each remaining segment
    is NFC-normalised (when the tokenizer normalises so) and encoded with the pre-tokenizer's regex and the BPE.
    """

    def __init__(self, encoding: Any, added_tokens: dict[str, int], nfc: bool):
        self.encoding = encoding
        self.added_tokens = added_tokens
        self.nfc = nfc
        by_length = sorted(added_tokens, key=len, reverse=True)
        self._added_pattern = re.compile("(" + "|".join(map(re.escape, by_length)) + ")") if by_length else None

    def encode(self, text: str) -> list[int]:
        if self._added_pattern is None:
            return self._encode_plain(text)
        ids: list[int] = []
        for index, part in enumerate(self._added_pattern.split(text)):
            if index % 2:
                ids.append(self.added_tokens[part])
            elif part:
                ids += self._encode_plain(part)
        return ids

    def _encode_plain(self, text: str) -> list[int]:
        if self.nfc and not text.isascii():
            text = unicodedata.normalize("NFC", text)
        return self.encoding.encode_ordinary(text)


_ENCODERS: weakref.WeakKeyDictionary[Any, tuple[int, DeltaEncoder]] = weakref.WeakKeyDictionary()


def delta_encoder(tokenizer: Any, *, fast: bool = True) -> DeltaEncoder:
    """The encoder for ``tokenizer`` (built once per tokenizer object and count of added tokens, so tokens added
    later are seen): tiktoken where it is provably the same tokenisation, else the tokenizer itself. ``fast=False``
    forces the tokenizer."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if not fast or backend is None:
        return TokenizerDeltaEncoder(tokenizer)
    # tokens added later are added tokens; not len(tokenizer) nor get_vocab_size: with tokenizers 0.22 each call
    # rebuilds the whole vocabulary (40 ms for Qwen3's, once per episode)
    size = len(backend.get_added_tokens_decoder())
    try:
        built_for, encoder = _ENCODERS[tokenizer]
        if built_for == size:
            return encoder
    except (KeyError, TypeError):
        pass
    encoder = tiktoken_encoder(tokenizer) or TokenizerDeltaEncoder(tokenizer)
    try:
        _ENCODERS[tokenizer] = (size, encoder)
    except TypeError:
        pass
    return encoder


def tiktoken_encoder(tokenizer: Any) -> TiktokenDeltaEncoder | None:
    """A ``TiktokenDeltaEncoder`` equivalent to ``tokenizer``, or ``None`` when that cannot be shown."""
    try:
        import tiktoken
    except ImportError:
        return None
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    spec = json.loads(backend.to_str())
    pattern, nfc = _byte_level_regex(spec)
    model = spec.get("model") or {}
    if pattern is None or model.get("type") != "BPE" or not _ranks_follow_merges(model):
        return None
    added = {token["content"]: token["id"] for token in spec.get("added_tokens") or []
             if not (token.get("lstrip") or token.get("rstrip") or token.get("single_word")
                     or (nfc and token.get("normalized") and not token["content"].isascii()))}
    if len(added) != len(spec.get("added_tokens") or []):
        return None
    byte_of = _unicode_to_byte()
    try:
        ranks = {bytes(byte_of[ch] for ch in token): rank for token, rank in model["vocab"].items()}
        encoding = tiktoken.Encoding("rlf-delta", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    except (KeyError, ValueError):
        return None
    encoder = TiktokenDeltaEncoder(encoding, added, nfc)
    probe = PROBE_TEXT + "".join(added)
    if encoder.encode(probe) != list(tokenizer.encode(probe, add_special_tokens=False)):
        return None
    return encoder


def _byte_level_regex(spec: dict[str, Any]) -> tuple[str | None, bool]:
    """The split regex of a ``Split(regex) + ByteLevel(use_regex=False)`` pre-tokenizer, and whether the
    normalizer is NFC (or absent); ``(None, _)`` for any other pipeline."""
    normalizer = spec.get("normalizer")
    if normalizer is not None and normalizer.get("type") != "NFC":
        return None, False
    pre = spec.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else None
    if not steps or len(steps) != 2:
        return None, False
    split, byte_level = steps
    if (split.get("type") != "Split" or split.get("behavior") != "Isolated" or split.get("invert")
            or "Regex" not in (split.get("pattern") or {})):
        return None, False
    if byte_level.get("type") != "ByteLevel" or byte_level.get("use_regex") or byte_level.get("add_prefix_space"):
        return None, False
    return split["pattern"]["Regex"], normalizer is not None


def _ranks_follow_merges(model: dict[str, Any]) -> bool:
    """tiktoken merges by the rank of the merged token; Hugging Face by merge order. They agree when the merged
    tokens' ids rise with the merge order and every merge result is in the vocabulary."""
    vocab, merges = model.get("vocab") or {}, model.get("merges") or []
    if model.get("dropout") or model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
        return False
    if not model.get("ignore_merges") and len(vocab) != 256 + len(merges):
        return False  # a token no merge makes: tiktoken would emit it for a whole piece, Hugging Face never
    last = -1
    for merge in merges:
        left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
        rank = vocab.get(left + right)
        if rank is None or rank <= last or vocab.get(left, rank) >= rank or vocab.get(right, rank) >= rank:
            return False
        last = rank
    return True


def _unicode_to_byte() -> dict[str, int]:
    """Inverse of GPT-2's byte-to-printable-character table used by byte-level BPE vocabularies."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return {chr(ch): byte for byte, ch in zip(printable, chars)}
