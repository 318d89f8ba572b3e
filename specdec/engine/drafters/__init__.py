"""The drafter registry: every drafter by name, with one line on what it does. One module per family."""
from __future__ import annotations

from typing import Callable, Sequence

import torch

from ..config import TreeShape
from ..kvcache import CachedModel
from .base import Draft, Drafter, check_draft_reads, fit_vocab
from .cross import CrossTokenizerDrafter
from .hybrid import HybridDrafter
from .lookup import PromptLookupDrafter
from .mixed import MixedDrafter
from .options import DrafterOptions, MissingDraftModel
from .recycling import AdjacencyTable, RecyclingDrafter
from .model import ModelDrafter
from .selfdraft import SelfDrafter
from .tree_drafters import DraftTreeDrafter, LookupTreeDrafter

__all__ = ["DRAFTERS", "NEEDS_DRAFT", "RECYCLING", "SAME_TOKENIZER", "TREE", "CrossTokenizerDrafter", "Draft", "Drafter",
           "DraftTreeDrafter", "HybridDrafter", "AdjacencyTable", "LookupTreeDrafter", "MixedDrafter", "ModelDrafter", "RecyclingDrafter", "PromptLookupDrafter",
           "SelfDrafter", "DrafterOptions", "MissingDraftModel", "best_drafter", "check_draft_reads", "fit_vocab", "make_drafter", "needs_draft_model"]


DRAFTERS: dict[str, str] = {
    "draft-model": "a smaller model with the same tokenizer drafts autoregressively",
    "prompt-lookup": "copies what followed the latest earlier match of the last n-gram; no model needed",
    "hybrid": "prompt lookup where the context repeats, the draft model elsewhere; the policy weighs each "
              "by its own measured acceptance and cost",
    "self": "the target drafts for itself from a subset of its layers (its first half unless told); "
            "no draft model, no extra weights",
    "cross-tokenizer": "a draft model with another tokenizer: its text re-tokenized (greedy), or its tokens "
                       "restricted to those both vocabularies share (sampled)",
    "draft-tree": "the draft model grows a tree of its likeliest continuations (EAGLE-2), verified in one "
                  "target pass; depth k, --tree-budget nodes, --tree-branching children per node",
    "lookup-tree": "prompt lookup with every earlier match as a branch, common prefixes merged, verified in "
                   "one target pass",
    "recycling": "token recycling: no draft model; a table of the target's own top next tokens after each token, "
                 "kept from every pass, grows a tree from the last token, verified in one target pass",
    "mixed": "every source the pair has (prompt lookup and its tree where the context repeats, token recycling, "
             "the draft model and its tree): the cost policy picks one each round by expected tokens per second",
}
# Drafters that read a draft model, and those of them that need it to share the target's tokenizer.
NEEDS_DRAFT = frozenset({"draft-model", "hybrid", "cross-tokenizer", "draft-tree"})
SAME_TOKENIZER = frozenset({"draft-model", "hybrid", "draft-tree", "mixed"})
# Drafters that propose trees: they need full-attention models with eager or sdpa attention.
TREE = frozenset({"draft-tree", "lookup-tree", "recycling"})
RECYCLING = frozenset({"recycling", "mixed"})  # those that draft from the pair's token recycling table


FACTORIES: dict[str, Callable[[DrafterOptions], Drafter]] = {
    "draft-model": ModelDrafter.from_options,
    "prompt-lookup": PromptLookupDrafter.from_options,
    "hybrid": HybridDrafter.from_options,
    "self": SelfDrafter.from_options,
    "cross-tokenizer": CrossTokenizerDrafter.from_options,
    "draft-tree": DraftTreeDrafter.from_options,
    "lookup-tree": LookupTreeDrafter.from_options,
    "recycling": RecyclingDrafter.from_options,
    "mixed": MixedDrafter.from_options,
}


def make_drafter(name: str, draft_model: torch.nn.Module | DrafterOptions | None, target_vocab_size: int | None = None,
                 confidence: float = 0.0, *, target: CachedModel | None = None,
                 layers: Sequence[int] | None = None, tokenizers: tuple[object, object] | None = None,
                 tree: TreeShape = TreeShape(), recycled: AdjacencyTable | None = None) -> Drafter:
    """The drafter `name`, built from one DrafterOptions (each drafter reads its own fields). The
    keyword form, make_drafter(name, draft_model, vocab_size, ...), builds the options from its
    arguments: target (the speculative lane) is what self-speculation drafts from; tokenizers
    (target's, draft's) are what the cross-tokenizer drafter translates between; tree shapes the
    tree drafters; recycled is the pair's token-recycling table (a fresh one when not given)."""
    if name not in FACTORIES:
        raise ValueError(f"unknown drafter {name!r}; choose one of {sorted(FACTORIES)}")
    options = draft_model if isinstance(draft_model, DrafterOptions) else DrafterOptions(
        target_vocab_size, draft_model, confidence, target, layers, tokenizers, tree, recycled)
    return FACTORIES[name](options)


def best_drafter(has_draft_model: bool, same_tokenizer: bool = True) -> str:
    """auto's drafter: every source the pair has (mixed), the cost policy choosing each round; the
    cross-tokenizer drafter for a draft with another tokenizer."""
    return "mixed" if not has_draft_model or same_tokenizer else "cross-tokenizer"


def needs_draft_model(name: str) -> bool:
    return name in NEEDS_DRAFT


