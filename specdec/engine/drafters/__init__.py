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
from .recycling import AdjacencyTable, RecyclingDrafter
from .model import ModelDrafter
from .selfdraft import SelfDrafter
from .tree_drafters import DraftTreeDrafter, LookupTreeDrafter

__all__ = ["DRAFTERS", "NEEDS_DRAFT", "SAME_TOKENIZER", "TREE", "CrossTokenizerDrafter", "Draft", "Drafter",
           "DraftTreeDrafter", "HybridDrafter", "AdjacencyTable", "LookupTreeDrafter", "MixedDrafter", "ModelDrafter", "RecyclingDrafter", "PromptLookupDrafter",
           "SelfDrafter", "best_drafter", "check_draft_reads", "fit_vocab", "make_drafter", "needs_draft_model"]


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


def make_drafter(name: str, draft_model: torch.nn.Module | None, target_vocab_size: int,
                 confidence: float = 0.0, *, target: CachedModel | None = None,
                 layers: Sequence[int] | None = None, tokenizers: tuple[object, object] | None = None,
                 tree: TreeShape = TreeShape(), recycled: AdjacencyTable | None = None) -> Drafter:
    """target (the speculative lane) is what self-speculation drafts from; tokenizers (target's,
    draft's) are what the cross-tokenizer drafter translates between; tree shapes the tree drafters;
    recycled is the pair's token-recycling table (a fresh one when not given)."""
    factories: dict[str, Callable[[], Drafter]] = {
        "draft-model": lambda: ModelDrafter(_need(name, draft_model), target_vocab_size, confidence),
        "prompt-lookup": PromptLookupDrafter,
        "hybrid": lambda: HybridDrafter(ModelDrafter(_need(name, draft_model), target_vocab_size, confidence)),
        "self": lambda: SelfDrafter(_need_target(target), layers, confidence),
        "cross-tokenizer": lambda: CrossTokenizerDrafter(_need(name, draft_model), *_need_tokenizers(tokenizers),
                                                         target_vocab_size),
        "draft-tree": lambda: DraftTreeDrafter(_need(name, draft_model), target_vocab_size, tree),
        "lookup-tree": lambda: LookupTreeDrafter(tree),
        "recycling": lambda: RecyclingDrafter(recycled or AdjacencyTable(target_vocab_size), tree),
        "mixed": lambda: MixedDrafter(mixed_members(draft_model, target_vocab_size, confidence, target, tree,
                                                    recycled)),
    }
    if name not in factories:
        raise ValueError(f"unknown drafter {name!r}; choose one of {sorted(factories)}")
    return factories[name]()


def mixed_members(draft_model: torch.nn.Module | None, target_vocab_size: int, confidence: float,
                  target: CachedModel | None, tree: TreeShape, recycled: AdjacencyTable | None = None) -> list[Drafter]:
    """The mixed drafter's members: lookup always, the draft model where there is one, their trees
    and token recycling where the models take a tree mask (eager or sdpa attention, no sliding window)."""
    trees = target is not None and target.takes_trees
    members: list[Drafter] = [PromptLookupDrafter()] + ([LookupTreeDrafter(tree)] if trees else [])
    if trees:
        members.append(RecyclingDrafter(recycled or AdjacencyTable(target_vocab_size), tree))
    if draft_model is not None:
        members.append(ModelDrafter(draft_model, target_vocab_size, confidence))
        if trees and CachedModel(draft_model).takes_trees:
            members.append(DraftTreeDrafter(draft_model, target_vocab_size, tree))
    return members


def best_drafter(has_draft_model: bool, same_tokenizer: bool = True) -> str:
    """auto's drafter: every source the pair has (mixed), the cost policy choosing each round; the
    cross-tokenizer drafter for a draft with another tokenizer."""
    return "mixed" if not has_draft_model or same_tokenizer else "cross-tokenizer"


def needs_draft_model(name: str) -> bool:
    return name in NEEDS_DRAFT


class MissingDraftModel(ValueError):
    pass


def _need(name: str, model: torch.nn.Module | None) -> torch.nn.Module:
    if model is None:
        raise MissingDraftModel(f"the {name} drafter needs a draft model (--draft)")
    return model


def _need_target(target: CachedModel | None) -> CachedModel:
    if target is None:
        raise ValueError("the self drafter drafts from the target: pass target= (the speculative lane)")
    return target


def _need_tokenizers(tokenizers: tuple[object, object] | None) -> tuple[object, object]:
    if tokenizers is None:
        raise ValueError("the cross-tokenizer drafter needs tokenizers=(target's, draft's)")
    return tokenizers
