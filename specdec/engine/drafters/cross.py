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

Context. The pair's context check counts target tokens; the draft reads the same text in its own,
which a finer tokenizer (bytes, say) makes several times longer. A draft that would run past its
own positions (max_position_embeddings) drafts only what fits, and nothing once the text fills them:
those rounds are plain decoding, and the output is the target's either way.
"""
from __future__ import annotations

import re

import torch

from ..config import Sampling
from ..kvcache import CachedModel, common_prefix, context_length, output_width
from ..loaded import eos_ids
from ..sampling import probs_from_logits, sample_from, uniforms
from .options import DrafterOptions
from .base import Draft, DrafterBase
from .vocab import token_map

LOOKBEHIND = 4  # committed target tokens re-encoded with the new text to place the boundary
REPLACEMENT = "\ufffd"  # what decoding half a UTF-8 character gives
LAST_WORD = re.compile(r"\s?\w+$")  # the text's last word, with the space before it if any


class CrossTokenizerDrafter(DrafterBase):
    name = "cross-tokenizer"

    @classmethod
    def from_options(cls, options: DrafterOptions) -> "CrossTokenizerDrafter":
        return cls(options.need_draft(cls.name), *options.need_tokenizers(), options.target_vocab_size)

    def __init__(self, model: torch.nn.Module, target_tokenizer, draft_tokenizer, target_vocab_size: int,
                 draft_eos_ids: frozenset[int] | None = None):
        """draft_eos_ids: the draft's own end-of-text ids (its generation config's and tokenizer's
        unless given): the draft stops writing at one, since nothing after it could be kept."""
        # Padded embedding rows past the draft's tokenizer are no token: never proposed, never decoded.
        self.draft = CachedModel(model, min(len(draft_tokenizer), output_width(model)))
        self.draft_eos = frozenset(eos_ids(model, draft_tokenizer) if draft_eos_ids is None else draft_eos_ids)
        self.positions = context_length(model)  # the draft's own, in its own tokens
        self.target_tokenizer, self.draft_tokenizer = target_tokenizer, draft_tokenizer
        self.map = token_map(target_tokenizer, draft_tokenizer, target_vocab_size, self.draft.vocab_size)
        self.reset()

    def reset(self) -> None:
        self.draft.reset()
        # The committed text in the draft's ids, for the committed target ids it was read from: each
        # round re-tokenizes only what is new plus a bounded tail (see _context).
        self._read_target: list[int] = []
        self._read_draft: list[int] = []


    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator,
                source: str | None = None) -> Draft:
        context = self._context(ids)
        k = min(k, self.positions - len(context))  # each written token is read at the next position
        if not context or k < 1:
            return Draft([], None)
        catch_up = len(context) - common_prefix(self.draft.ids, context)
        if sampling.greedy:
            return self._greedy(ids, context, k, catch_up)
        return self._sampled(context, k, sampling, generator, catch_up)

    def _context(self, ids: list[int]) -> list[int]:
        """The committed text in the draft's ids, O(new tokens) per round rather than O(context).

        The text of the target ids read last round is extended by what the new ids add (decoded with
        LOOKBEHIND ids before them, so a token that completes a character or a word decodes as it
        would in place), and the draft's last LOOKBEHIND ids are re-encoded together with it: a
        boundary the new text moves (it completes the draft's last token) lands where a full encode
        puts it. The result is kept only if it starts with all but the last of those ids, the same
        self-check as _target_continuation's; otherwise, or when the ids do not extend what was read,
        the whole text is encoded again."""
        read = len(self._read_target)
        if read > LOOKBEHIND and ids[:read] == self._read_target and len(self._read_draft) > LOOKBEHIND:
            before = self._decode_target(ids[read - LOOKBEHIND : read])
            after = self._decode_target(ids[read - LOOKBEHIND :])
            tail = self._read_draft[-LOOKBEHIND:]
            if after.startswith(before) and not before.endswith(REPLACEMENT):
                joined = self._encode_draft(self._decode_draft(tail) + after[len(before):])
                if joined[: LOOKBEHIND - 1] == tail[:-1]:
                    self._read_target, self._read_draft = list(ids), self._read_draft[:-LOOKBEHIND] + joined
                    return list(self._read_draft)
        self._read_target, self._read_draft = list(ids), self._encode_draft(self._decode_target(ids))
        return list(self._read_draft)

    def _greedy(self, ids: list[int], context: list[int], k: int, catch_up: int) -> Draft:
        """The draft writes up to k tokens, ending before its own EOS: the target's token at that
        position (its correction, or its bonus) is then its own EOS where the two agree, in the same
        pass, and the text of the draft's EOS is no target text where they do not."""
        written: list[int] = []
        for _ in range(k):
            token = int(self.draft.logits(context + written, 1)[0].argmax())
            if token in self.draft_eos:
                break
            written.append(token)
        text = self._offered_text(context[-LOOKBEHIND:], written)
        return Draft(self._target_continuation(ids, text)[:k], None, catch_up=catch_up)

    def _offered_text(self, tail: list[int], written: list[int]) -> str:
        """The draft's new text, less its last word when the draft may have stopped inside it: a word
        the target spells as one longer token (' done', where the draft's text ends at ' don') would
        be rejected there. Held back only when the target has such a token, and never when it is
        all the draft wrote."""
        text = self._written_text(tail, written)
        word = LAST_WORD.search(text)
        # Tokenizers that keep the space in the token (' done') and those that split on it ('done').
        if len(written) > 1 and word and any(map(self.map.extends, {word.group(), word.group().lstrip()})):
            return self._written_text(tail, written[:-1]) or text
        return text

    def _written_text(self, tail: list[int], written: list[int]) -> str:
        text = self._decode_draft(tail + written)[len(self._decode_draft(tail)):]
        return text.split(REPLACEMENT, 1)[0]  # a half-written character is no text yet

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
            if choice in self.draft_eos:  # a drawn token, kept with its q; nothing after it could be
                break
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
