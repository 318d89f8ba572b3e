"""Drafting from two sources: n-gram prompt lookup, which costs nothing but has a draft only where
the context repeats, and the draft model, which always has one. Each round the policy picks the
source (and k) from their own measured acceptance and cost; a fixed-k policy takes lookup's draft
wherever it has one. Either way the target verifies, so the output is exact."""
from __future__ import annotations

import torch

from ..config import Sampling
from ..confidence import StopRule
from ..sources import Source
from .options import DrafterOptions
from .base import Draft
from .lookup import PromptLookupDrafter
from .model import ModelDrafter


class HybridDrafter:
    name = "hybrid"

    @classmethod
    def from_options(cls, options: DrafterOptions) -> "HybridDrafter":
        return cls(ModelDrafter.from_options(options, cls.name))

    def __init__(self, model: ModelDrafter, lookup: PromptLookupDrafter | None = None):
        self.model, self.lookup = model, lookup or PromptLookupDrafter()

    def reset(self) -> None:
        self.model.reset()
        self.lookup.reset()

    def sources(self, ids: list[int]) -> tuple[Source, ...]:
        has_match = self.lookup.match(ids) is not None
        return (*self.lookup.sources(ids), *self.model.sources(ids)) if has_match else self.model.sources(ids)

    def free_drafts(self, ids: list[int], k: int, chosen: str | None, offered: tuple[Source, ...]
                    ) -> dict[Source, Draft]:
        """Prompt lookup's draft where the model drafts (or nothing does): base.DrafterBase.free_drafts."""
        return self.lookup.free_drafts(ids, k, chosen, offered)

    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator,
                source: str | None = None, stop: StopRule | None = None) -> Draft:
        # The draft model sits out the rounds lookup drafts; its KV cache catches up on the tokens
        # committed meanwhile at its next turn, in one pass (CachedModel feeds what it has not seen).
        if Source(source or self.sources(ids)[0]).drafter == self.lookup.name:
            return self.lookup.propose(ids, k, sampling, generator)
        return self.model.propose(ids, k, sampling, generator, stop=stop)
