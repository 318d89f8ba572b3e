"""Which tokens two tokenizers share: the token-level intersection (Timor et al. 2025, "Lossless
Speculative Decoding Algorithms for Heterogeneous Vocabularies").

Two tokens are the same when they stand for the same bytes. transformers compares the stored
spellings after swapping the space sign (Ġ vs ▁); comparing bytes also matches SentencePiece's
byte-fallback pieces (<0x0A>) with a byte-level BPE's "Ċ", and never matches two spellings that
decode differently. Added (special) tokens match only added tokens with the same content, so a
draft's "<|im_end|>" maps to the target's control token, never to the text "<|im_end|>".
"""
from __future__ import annotations

import json
import re
from functools import lru_cache

import torch

_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


@lru_cache(maxsize=1)
def _byte_level_decoder() -> dict[str, int]:
    """GPT-2's reversible map from bytes to printable characters, inverted (char -> byte)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = list(printable), 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars)}


def _scheme(tokenizer) -> str:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    decoder = json.dumps(json.loads(backend.to_str()).get("decoder")) if backend is not None else ""
    if "ByteLevel" in decoder:
        return "byte-level"
    if "ByteFallback" in decoder or "Metaspace" in decoder or "\\u2581" in decoder:
        return "sentencepiece"
    return "plain"


def token_keys(tokenizer) -> dict[int, tuple[str, bytes | str]]:
    """id -> ("added", content) for added tokens, ("text", bytes) for the others (None if unreadable)."""
    added = {i: t.content for i, t in getattr(tokenizer, "added_tokens_decoder", {}).items()}
    scheme, byte_of = _scheme(tokenizer), _byte_level_decoder()
    keys: dict[int, tuple[str, bytes | str]] = {}
    for piece, i in tokenizer.get_vocab().items():
        if i in added:
            keys[i] = ("added", added[i])
            continue
        raw = _bytes(piece, scheme, byte_of)
        if raw is not None:
            keys[i] = ("text", raw)
    return keys


def _bytes(piece: str, scheme: str, byte_of: dict[str, int]) -> bytes | None:
    if scheme == "byte-level":
        if not all(c in byte_of for c in piece):
            return None
        return bytes(byte_of[c] for c in piece)
    if scheme == "sentencepiece":
        match = _BYTE_PIECE.fullmatch(piece)
        return bytes([int(match[1], 16)]) if match else piece.replace("\u2581", " ").encode()
    return piece.encode()


class TokenMap:
    """The shared tokens of a draft and a target tokenizer, as a draft-id -> target-id table."""

    def __init__(self, target_tokenizer, draft_tokenizer, target_vocab_size: int, draft_vocab_size: int):
        target_ids = {}
        for i, key in token_keys(target_tokenizer).items():
            if i < target_vocab_size:
                target_ids.setdefault(key, i)
        to_target = torch.full((draft_vocab_size,), -1, dtype=torch.long)
        for i, key in token_keys(draft_tokenizer).items():
            if i < draft_vocab_size and key in target_ids:
                to_target[i] = target_ids[key]
        if int((to_target >= 0).sum()) == 0:
            raise ValueError("the draft and target tokenizers share no token, so no draft token can be verified")
        self.to_target = to_target  # [V_draft]; -1 where the target has no such token
        self.shared = to_target >= 0  # [V_draft] bool
        self.target_vocab_size = target_vocab_size

    @property
    def size(self) -> int:
        return int(self.shared.sum())

    def restrict(self, draft_logits: torch.Tensor) -> torch.Tensor:
        """Draft logits with every token outside the intersection at -inf: the draft can then only
        propose tokens the target can verify one for one."""
        shared = self.shared.to(draft_logits.device)
        width = min(draft_logits.shape[-1], shared.numel())
        out = draft_logits.new_full(draft_logits.shape, float("-inf"))
        out[..., :width] = draft_logits[..., :width].masked_fill(~shared[:width], float("-inf"))
        return out

    def to_target_probs(self, draft_probs: torch.Tensor) -> torch.Tensor:
        """A draft distribution over shared tokens, moved to the target's ids. Sums duplicates (two
        draft ids for one target token), so it is exactly the distribution of the target id drawn."""
        width = min(draft_probs.shape[-1], self.to_target.numel())
        index = self.to_target[:width].to(draft_probs.device)
        mass = draft_probs[..., :width]
        keep = index >= 0
        out = draft_probs.new_zeros((*draft_probs.shape[:-1], self.target_vocab_size))
        return out.index_add_(-1, index[keep], mass[..., keep])
