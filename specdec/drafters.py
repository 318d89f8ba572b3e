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
from .kvcache import CachedModel, input_rows
from .sampling import probs_from_logits, sample_from, uniforms


@dataclass(frozen=True)
class Draft:
    tokens: list[int]
    q: torch.Tensor | None  # [len(tokens), V_target]; None for a deterministic drafter (one-hot)
    # A greedy model draft's logits [len(tokens), V_target]: not part of the rule (its q is one-hot),
    # kept so the analytic acceptance can be measured after the timed window.
    logits: torch.Tensor | None = None


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


def check_draft_reads(model: torch.nn.Module, target_vocab_size: int) -> None:
    """The draft reads every committed id, so every id the target can emit must be a row of its
    embedding (Qwen2.5-7B's head has 152,064 rows, the 0.5B draft's embedding 151,936)."""
    if input_rows(model) < target_vocab_size:
        raise ValueError(f"the draft's embedding has {input_rows(model)} rows but the target can produce ids "
                         f"up to {target_vocab_size - 1}; limit the target's vocabulary to the real tokens "
                         f"(Pair does this from the tokenizer) or use a draft that covers them")


class ModelDrafter:
    """A small causal LM with its own KV cache, drafting autoregressively."""

    name = "draft-model"

    def __init__(self, model: torch.nn.Module, target_vocab_size: int, confidence: float = 0.0):
        check_draft_reads(model, target_vocab_size)
        self.draft = CachedModel(model)
        self.target_vocab_size = target_vocab_size
        self.confidence = confidence

    def reset(self) -> None:
        self.draft.reset()

    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator) -> Draft:
        tokens: list[int] = []
        rows = []  # greedy: logits; sampled: the q each token was drawn from
        for _ in range(k):
            logits = fit_vocab(self.draft.logits(ids + tokens, 1)[0], self.target_vocab_size)
            if sampling.greedy:
                tokens.append(int(logits.argmax()))
                rows.append(logits)
            else:
                rows.append(probs_from_logits(logits, sampling))
                tokens.append(sample_from(rows[-1], uniforms(1, generator)[0]))
            if self.confidence and self._unsure(rows[-1], tokens[-1], sampling.greedy):
                break
        if not rows:
            return Draft([], None)
        stacked = torch.stack(rows)
        return Draft(tokens, None, stacked) if sampling.greedy else Draft(tokens, stacked)

    def _unsure(self, row: torch.Tensor, token: int, greedy: bool) -> bool:
        """An unsure draft token is likely rejected, and every token after it is then wasted work.
        A greedy draft is judged by its softmax at T = 1, as transformers' confidence stop does."""
        probability = torch.softmax(row.float(), -1)[token] if greedy else row[token]
        return float(probability) < self.confidence


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
