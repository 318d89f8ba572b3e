"""Everything a drafter may read, in one object, as vLLM's proposers read one speculative config.

The request spreads these over its parts (Speculation: confidence and the tree shape; Request: the
self drafter's layers; the Pair: the models, tokenizers and the recycling table); Pair.speculative
gathers them here once, and each drafter's `from_options` takes what it reads and nothing else.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import torch

from ..config import TreeShape

if TYPE_CHECKING:
    from ..kvcache import CachedModel
    from .recycling import AdjacencyTable


class MissingDraftModel(ValueError):
    pass


@dataclass(frozen=True)
class DrafterOptions:
    target_vocab_size: int
    draft_model: torch.nn.Module | None = None  # draft-model, hybrid, cross-tokenizer, draft-tree; mixed if given
    confidence: float = 0.0  # model drafters: stop a draft below this probability (Speculation.confidence)
    target: "CachedModel | None" = None  # self: the speculative lane it drafts from; mixed: whether trees fit
    layers: Sequence[int] | None = None  # self: the target's layers it drafts with (Request.draft_layers)
    tokenizers: tuple[object, object] | None = None  # cross-tokenizer: (target's, draft's)
    tree: TreeShape = TreeShape()  # the tree drafters' budget and branching (Speculation.tree)
    recycled: "AdjacencyTable | None" = None  # recycling: the pair's table, kept across requests
    eos_ids: frozenset[int] = frozenset()  # model drafters: stop at these (nothing after one is kept)

    def need_draft(self, drafter: str) -> torch.nn.Module:
        if self.draft_model is None:
            raise MissingDraftModel(f"the {drafter} drafter needs a draft model (--draft)")
        return self.draft_model

    def need_target(self) -> "CachedModel":
        if self.target is None:
            raise ValueError("the self drafter drafts from the target: pass target= (the speculative lane)")
        return self.target

    def need_tokenizers(self) -> tuple[object, object]:
        if self.tokenizers is None:
            raise ValueError("the cross-tokenizer drafter needs tokenizers=(target's, draft's)")
        return self.tokenizers
