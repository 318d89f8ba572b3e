"""Drafters propose the next k tokens; the target then verifies them in one pass.

A drafter returns the distributions it actually sampled from (q). A deterministic drafter returns
q = None, which the engine reads as one-hot on its tokens: that is what makes the residual
max(p - q, 0) right for prompt lookup and for a greedy draft model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import torch

from .config import Sampling
from .kvcache import CachedModel
from .sampling import probs_from_logits, sample_from, uniforms


@dataclass(frozen=True)
class Draft:
    tokens: list[int]
    q: torch.Tensor | None  # [len(tokens), V_target]; None for a deterministic drafter (one-hot)


class Drafter(Protocol):
    name: str

    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator) -> Draft: ...

    def reset(self) -> None: ...


def fit_vocab(logits: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Bring draft logits to the target's vocabulary size. Same-tokenizer pairs often pad their
    embedding matrices differently; ids the target lacks get -inf so the draft never samples them
    (and q stays the distribution it really sampled from)."""
    size = logits.shape[-1]
    if size >= vocab_size:
        return logits[..., :vocab_size]
    pad = logits.new_full((*logits.shape[:-1], vocab_size - size), float("-inf"))
    return torch.cat([logits, pad], dim=-1)


class ModelDrafter:
    """A small causal LM with its own KV cache, drafting autoregressively."""

    name = "draft-model"

    def __init__(self, model: torch.nn.Module, target_vocab_size: int, confidence: float = 0.0):
        self.draft = CachedModel(model)
        self.target_vocab_size = target_vocab_size
        self.confidence = confidence

    def reset(self) -> None:
        self.draft.reset()

    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator) -> Draft:
        tokens: list[int] = []
        rows = []
        for _ in range(k):
            logits = fit_vocab(self.draft.logits(ids + tokens, 1)[0], self.target_vocab_size)
            if sampling.greedy:
                tokens.append(int(logits.argmax()))
                # The rule ignores q for greedy; softmax at T=1 feeds the analytic alpha and the
                # confidence stop.
                rows.append(torch.softmax(logits.float(), -1))
            else:
                q = probs_from_logits(logits, sampling)
                tokens.append(sample_from(q, uniforms(1, generator)[0]))
                rows.append(q)
            # An unsure draft token is likely rejected, and every token after it is then wasted work.
            if self.confidence and float(rows[-1][tokens[-1]]) < self.confidence:
                break
        return Draft(tokens, torch.stack(rows) if rows else None)


class PromptLookupDrafter:
    """n-gram prompt lookup (Saxena 2023): find the latest earlier occurrence of the last n tokens
    (longest n first) and propose what followed it. Needs no model; deterministic."""

    name = "prompt-lookup"

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1):
        self.max_ngram, self.min_ngram = max_ngram, min_ngram

    def reset(self) -> None:
        pass

    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator) -> Draft:
        if k == 0:
            return Draft([], None)
        seq = torch.tensor(ids)
        for n in range(min(self.max_ngram, len(ids) - 1), self.min_ngram - 1, -1):
            # Windows starting before the final n-gram, so a match always has a continuation.
            windows = seq[:-1].unfold(0, n, 1)
            hits = (windows == seq[-n:]).all(dim=1).nonzero()
            if len(hits):
                start = int(hits[-1]) + n
                return Draft(ids[start : start + k], None)
        return Draft([], None)


DRAFTERS: dict[str, str] = {
    "draft-model": "a smaller model with the same tokenizer drafts autoregressively",
    "prompt-lookup": "copies what followed the latest earlier match of the last n-gram; no model needed",
}


def make_drafter(name: str, draft_model: torch.nn.Module | None, target_vocab_size: int,
                 confidence: float = 0.0) -> Drafter:
    factories: dict[str, Callable[[], Drafter]] = {
        "draft-model": lambda: ModelDrafter(_need(draft_model), target_vocab_size, confidence),
        "prompt-lookup": PromptLookupDrafter,
    }
    if name not in factories:
        raise ValueError(f"unknown drafter {name!r}; choose one of {sorted(factories)}")
    return factories[name]()


def _need(model: torch.nn.Module | None) -> torch.nn.Module:
    if model is None:
        raise ValueError("the draft-model drafter needs a draft model (--draft)")
    return model
