"""Drafting with a model that has another tokenizer.

The draft reads the committed text, re-tokenized its own way: each round the committed target ids
are decoded and encoded again with the draft's tokenizer. The draft's KV cache keeps the longest
prefix that re-tokenizes the same, so only the tail is recomputed, and a boundary that moved (the
last target token split a draft token, which the new text now completes) is recomputed correctly.

Greedy (the string path, like transformers' universal assisted generation): the draft writes k tokens
freely; their text is re-tokenized for the target. To put the boundary where the target would, the
last few committed tokens' text is encoded together with the new text, and the result is used only
if it starts with those committed ids (a lookbehind that checks itself instead of aligning by
longest common subsequence); else the new text is encoded alone. A deterministic proposal is
verified with one-hot q, so the output is the target's greedy output whatever the draft wrote.

Sampled (exact): the draft samples only tokens whose bytes the target also has as one token (the
token-level intersection, see vocab.py), from its processed distribution renormalised over them, so
each draft token is one target token and q, moved to the target's ids, is exactly the distribution
that token was drawn from. Standard rejection sampling then keeps the target's distribution.
"""
from __future__ import annotations

import torch

from ..config import Sampling
from ..kvcache import CachedModel, common_prefix, output_width
from ..sampling import probs_from_logits, sample_from, uniforms
from .base import Draft
from .vocab import TokenMap

LOOKBEHIND = 4  # committed target tokens re-encoded with the new text to place the boundary
REPLACEMENT = "\ufffd"  # what decoding half a UTF-8 character gives


class CrossTokenizerDrafter:
    name = "cross-tokenizer"

    def __init__(self, model: torch.nn.Module, target_tokenizer, draft_tokenizer, target_vocab_size: int):
        # Padded embedding rows past the draft's tokenizer are no token: never proposed, never decoded.
        self.draft = CachedModel(model, min(len(draft_tokenizer), output_width(model)))
        self.target_tokenizer, self.draft_tokenizer = target_tokenizer, draft_tokenizer
        self.map = TokenMap(target_tokenizer, draft_tokenizer, target_vocab_size, self.draft.vocab_size)

    def reset(self) -> None:
        self.draft.reset()

    def sources(self, ids: list[int]) -> tuple[str, ...]:
        return (self.name,)

    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator,
                source: str | None = None) -> Draft:
        context = self._encode_draft(self._decode_target(ids))
        if not context:
            return Draft([], None)
        catch_up = len(context) - common_prefix(self.draft.ids, context)
        if sampling.greedy:
            return self._greedy(ids, context, k, catch_up)
        return self._sampled(context, k, sampling, generator, catch_up)

    def _greedy(self, ids: list[int], context: list[int], k: int, catch_up: int) -> Draft:
        written: list[int] = []
        for _ in range(k):
            written.append(int(self.draft.logits(context + written, 1)[0].argmax()))
        tail = context[-LOOKBEHIND:]
        text = self._decode_draft(tail + written)[len(self._decode_draft(tail)):]
        text = text.split(REPLACEMENT, 1)[0]  # a half-written character is no text yet
        return Draft(self._target_continuation(ids, text)[:k], None, catch_up=catch_up)

    def _sampled(self, context: list[int], k: int, sampling: Sampling, generator: torch.Generator,
                 catch_up: int) -> Draft:
        written: list[int] = []
        tokens: list[int] = []
        rows = []
        for _ in range(k):
            logits = self.map.restrict(self.draft.logits(context + written, 1)[0])
            probs = probs_from_logits(logits, sampling)
            choice = sample_from(probs, uniforms(1, generator)[0])
            written.append(choice)
            tokens.append(int(self.map.to_target[choice]))
            rows.append(self.map.to_target_probs(probs))
        return Draft(tokens, torch.stack(rows), catch_up=catch_up)

    def _target_continuation(self, ids: list[int], text: str) -> list[int]:
        if not text:
            return []
        tail = ids[-LOOKBEHIND:]
        joined = self._encode_target(self._decode_target(tail) + text)
        tokens = joined[len(tail):] if joined[: len(tail)] == tail else self._encode_target(text)
        # An id past the target's real vocabulary cannot be verified: the proposal ends before it.
        return next((tokens[:i] for i, t in enumerate(tokens) if t >= self.map.target_vocab_size), tokens)

    def _decode_target(self, ids: list[int]) -> str:
        return self.target_tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def _decode_draft(self, ids: list[int]) -> str:
        return self.draft_tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def _encode_target(self, text: str) -> list[int]:
        return self.target_tokenizer.encode(text, add_special_tokens=False)

    def _encode_draft(self, text: str) -> list[int]:
        return self.draft_tokenizer.encode(text, add_special_tokens=False)
