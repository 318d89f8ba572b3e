"""Drafting by n-gram prompt lookup: no model, no cost."""
from __future__ import annotations

import torch

from ..config import Sampling
from .base import Draft


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
