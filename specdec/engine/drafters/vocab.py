"""Which tokens two tokenizers share: the token-level intersection (Timor et al. 2025, "Lossless
Speculative Decoding Algorithms for Heterogeneous Vocabularies").

Two tokens are the same when they stand for the same bytes. transformers compares the stored
spellings after swapping the space sign (Ġ vs ▁); comparing bytes also matches SentencePiece's
byte-fallback pieces (<0x0A>) with a byte-level BPE's "Ċ", and never matches two spellings that
decode differently. Added (special) tokens match only added tokens with the same content, so a
draft's "<|im_end|>" maps to the target's control token, never to the text "<|im_end|>".
"""
from __future__ import annotations

import bisect
import re
import weakref
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
    """How the tokenizer spells bytes, read off its backend's decoder object (its own JSON only, a
    few hundred bytes; never the whole tokenizer's, which is megabytes for a 150k vocabulary)."""
    decoder = getattr(getattr(tokenizer, "backend_tokenizer", None), "decoder", None)
    state = decoder.__getstate__().decode() if decoder is not None else ""
    if "ByteLevel" in state:
        return "byte-level"
    if "ByteFallback" in state or "Metaspace" in state or "\\u2581" in state or "\u2581" in state:
        return "sentencepiece"
    return "plain"


@lru_cache(maxsize=1)
def _byte_level_tables() -> tuple[dict[int, str], dict[int, None]]:
    """str.translate tables: each byte-level character to the latin-1 character of its byte, and
    each to nothing (a piece that translates to "" under the second is all byte-level characters)."""
    byte_of = _byte_level_decoder()
    return {ord(c): chr(b) for c, b in byte_of.items()}, {ord(c): None for c in byte_of}


def token_keys(tokenizer) -> dict[int, tuple[str, bytes | str]]:
    """id -> ("added", content) for added tokens, ("text", bytes) for the others (None if unreadable).
    Byte-level pieces go through str.translate (C speed): a 151k vocabulary in well under a second."""
    added = {i: t.content for i, t in getattr(tokenizer, "added_tokens_decoder", {}).items()}
    scheme = _scheme(tokenizer)
    to_bytes, alphabet = _byte_level_tables()
    keys: dict[int, tuple[str, bytes | str]] = {}
    for piece, i in tokenizer.get_vocab().items():
        if i in added:
            keys[i] = ("added", added[i])
        elif scheme == "byte-level":
            if not piece.translate(alphabet):  # every character is a byte's
                keys[i] = ("text", piece.translate(to_bytes).encode("latin-1"))
        else:
            keys[i] = ("text", _bytes(piece, scheme))
    return keys


def _bytes(piece: str, scheme: str, byte_of: dict[str, int] | None = None) -> bytes | None:
    """One piece's bytes (None: a byte-level piece with a character that is no byte's)."""
    if scheme == "byte-level":
        byte_of = byte_of or _byte_level_decoder()
        return bytes(byte_of[c] for c in piece) if all(c in byte_of for c in piece) else None
    if scheme == "sentencepiece":
        match = _BYTE_PIECE.fullmatch(piece)
        return bytes([int(match[1], 16)]) if match else piece.replace("\u2581", " ").encode()
    return piece.encode()


_MAPS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def token_map(target_tokenizer, draft_tokenizer, target_vocab_size: int, draft_vocab_size: int) -> "TokenMap":
    """The TokenMap of two tokenizers, built once per pair of tokenizer objects and sizes and kept
    while the target tokenizer lives: every request of a pair, and a compare's warm-up, reuse it."""
    per_target = _MAPS.setdefault(target_tokenizer, weakref.WeakKeyDictionary())
    per_draft = per_target.setdefault(draft_tokenizer, {})
    key = (target_vocab_size, draft_vocab_size)
    if key not in per_draft:
        per_draft[key] = TokenMap(target_tokenizer, draft_tokenizer, target_vocab_size, draft_vocab_size)
    return per_draft[key]


class TokenMap:
    """The shared tokens of a draft and a target tokenizer, as a draft-id -> target-id table."""

    def __init__(self, target_tokenizer, draft_tokenizer, target_vocab_size: int, draft_vocab_size: int):
        target_ids = {}
        target_keys = token_keys(target_tokenizer)
        # The target's spellings, sorted, to ask whether a word could go on as one longer token.
        self.target_texts = sorted(key[1] for key in target_keys.values() if key[0] == "text")
        for i, key in target_keys.items():
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

    def extends(self, word: str) -> bool:
        """Whether the target has a token that spells word and goes on with a letter or digit: a
        word the draft stopped at may then be the start of a longer one the target writes whole."""
        prefix = word.encode()
        i = bisect.bisect_right(self.target_texts, prefix)
        while i < len(self.target_texts) and self.target_texts[i].startswith(prefix):
            rest = self.target_texts[i][len(prefix):]
            if rest[:1].isalnum() or rest[:1] >= b"\x80":
                return True
            i += 1
        return False

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
