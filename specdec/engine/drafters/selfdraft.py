"""Self-speculation: the target drafts for itself from a subset of its own layers (LayerSkip, SWIFT,
Draft & Verify), then verifies as usual. No second model; the output is exact whatever the subset,
because the full target checks every token. On checkpoints not trained for early exit the subset's
guesses are often wrong (low alpha), and the round statistics show it."""
from __future__ import annotations

from typing import Sequence

import torch
from transformers.cache_utils import DynamicLayer

from ..config import Sampling
from ..kvcache import CachedModel, common_prefix
from .options import DrafterOptions
from .base import Draft, DrafterBase
from .layers import check_layers, decoder_layers, first_layers, layer_view
from .model import ModelDrafter


class SelfDrafter(DrafterBase):
    """Drafts with `layer_view(target, layers)`, a ModelDrafter with its own KV cache.

    Cache reuse. When the layers are the target's first L, the view's layer j computes exactly what
    the target's layer j computes on the same tokens at the same positions: same weights, same input
    (the embedding, then layers 0..j-1, all shared), causal attention over the same prefix. So the
    target's cached keys and values of layers 0..L-1, for the committed tokens it has read, are the
    draft's. Before drafting, the draft borrows them (tensor views, no copy) for whatever committed
    prefix the target has and the draft lacks, and computes only the rest: typically just the last
    committed token, and none of a backlog it sat out. A subset that skips an early layer feeds later
    layers different inputs than the target's, so it keeps a cache of its own (still exact: the draft
    only proposes). Sliding-window layers record past states for rollback and are not borrowed.
    """

    name = "self"

    @classmethod
    def from_options(cls, options: DrafterOptions) -> "SelfDrafter":
        return cls(options.need_target(), options.layers, options.confidence, options.eos_ids)

    def __init__(self, target: CachedModel, layers: Sequence[int] | None = None, confidence: float = 0.0,
                 eos_ids: frozenset[int] = frozenset()):
        n_layers = len(decoder_layers(target.model))
        # None is the default (the first half); an empty list is a mistake, refused by check_layers.
        self.layers = check_layers(first_layers(n_layers) if layers is None else layers, n_layers)
        self.model = ModelDrafter(layer_view(target.model, self.layers), target.vocab_size, confidence,
                                  eos_ids=eos_ids)
        self.target = target
        self.borrows = self.layers == tuple(range(len(self.layers))) and _plain(self.model.draft)

    def reset(self) -> None:
        self.model.reset()


    def propose(self, ids: list[int], k: int, sampling: Sampling, generator: torch.Generator,
                source: str | None = None, stop=None) -> Draft:
        if self.borrows:
            self._borrow(ids)
        return self.model.propose(ids, k, sampling, generator, stop=stop)

    def _borrow(self, ids: list[int]) -> None:
        draft, target = self.model.draft, self.target
        have = common_prefix(target.ids, ids)
        if have <= common_prefix(draft.ids, ids) or not all(layer.is_initialized for layer in target.cache.layers):
            return
        for mine, theirs in zip(draft.cache.layers, target.cache.layers):
            mine.keys, mine.values = theirs.keys[..., :have, :], theirs.values[..., :have, :]
            mine.dtype, mine.device, mine.is_initialized = theirs.dtype, theirs.device, True
        draft.ids = list(ids[:have])


def _plain(cached: CachedModel) -> bool:
    return all(type(layer) is DynamicLayer for layer in cached.cache.layers)
