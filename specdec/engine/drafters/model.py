"""Drafting with a smaller causal LM that shares the target's tokenizer."""
from __future__ import annotations

import torch

from ..config import Sampling
from ..kvcache import CachedModel, common_prefix
from ..sampling import probs_from_logits, sample_from, uniforms
from ..confidence import StopRule
from .options import DrafterOptions
from .base import Draft, DrafterBase, check_draft_reads, fit_vocab


class ModelDrafter(DrafterBase):
    """A small causal LM with its own KV cache, drafting autoregressively."""

    name = "draft-model"

    @classmethod
    def from_options(cls, options: DrafterOptions, drafter: str = "draft-model") -> "ModelDrafter":
        return cls(options.need_draft(drafter), options.target_vocab_size, options.confidence)

    def __init__(self, model: torch.nn.Module, target_vocab_size: int, confidence: float = 0.0):
        check_draft_reads(model, target_vocab_size)
        self.draft = CachedModel(model)
        self.target_vocab_size = target_vocab_size
        self.confidence = confidence

    def reset(self) -> None:
        self.draft.reset()


    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator,
                source: str | None = None, stop: StopRule | None = None) -> Draft:
        """Up to k tokens, one draft pass each. The draft ends early after a token it gives less than
        `confidence` (a fixed threshold, transformers' assistant_confidence_threshold), or when the
        round's stop rule says one more token is not worth its cost (the cost policy's, confidence.py)."""
        self.draft.settle(ids)  # a shared cache's last tree path is already read: not catch-up
        catch_up = len(ids) - common_prefix(self.draft.ids, ids)
        tokens: list[int] = []
        rows, confidences = [], []  # rows: greedy logits, or the q each token was drawn from
        for _ in range(k):
            logits = fit_vocab(self.draft.logits(ids + tokens, 1)[0], self.target_vocab_size)
            if sampling.greedy:
                tokens.append(int(logits.argmax()))
                rows.append(logits)
            else:
                rows.append(probs_from_logits(logits, sampling))
                tokens.append(sample_from(rows[-1], uniforms(1, generator)[0]))
            confidences.append(self._confidence(rows[-1], tokens[-1], sampling.greedy))
            if confidences[-1] < self.confidence or (stop is not None and not stop.keep_drafting(confidences)):
                break
        if not rows:
            return Draft([], None)
        stacked = torch.stack(rows)
        q, logits = (None, stacked) if sampling.greedy else (stacked, None)
        return Draft(tokens, q, logits, catch_up=catch_up, confidences=tuple(confidences))

    @staticmethod
    def _confidence(row: torch.Tensor, token: int, greedy: bool) -> float:
        """The probability the draft gave its token: q(x) when sampling; a greedy draft's softmax at
        T = 1, as transformers' confidence stop reads it. An unsure token is likely rejected, and every
        token after it is then wasted work."""
        return float(torch.softmax(row.float(), -1)[token] if greedy else row[token])
