"""The drafter registry: every drafter by name, with one line on what it does. One module per family."""
from __future__ import annotations

from typing import Callable

import torch

from .base import Draft, Drafter, check_draft_reads, fit_vocab
from .hybrid import HybridDrafter
from .lookup import PromptLookupDrafter
from .model import ModelDrafter

__all__ = ["DRAFTERS", "Draft", "Drafter", "HybridDrafter", "ModelDrafter", "PromptLookupDrafter", "check_draft_reads",
           "best_drafter", "fit_vocab", "make_drafter", "needs_draft_model"]


DRAFTERS: dict[str, str] = {
    "draft-model": "a smaller model with the same tokenizer drafts autoregressively",
    "prompt-lookup": "copies what followed the latest earlier match of the last n-gram; no model needed",
    "hybrid": "prompt lookup where the context repeats, the draft model elsewhere; the policy weighs each "
              "by its own measured acceptance and cost",
}


def make_drafter(name: str, draft_model: torch.nn.Module | None, target_vocab_size: int,
                 confidence: float = 0.0) -> Drafter:
    factories: dict[str, Callable[[], Drafter]] = {
        "draft-model": lambda: ModelDrafter(_need(name, draft_model), target_vocab_size, confidence),
        "prompt-lookup": PromptLookupDrafter,
        "hybrid": lambda: HybridDrafter(ModelDrafter(_need(name, draft_model), target_vocab_size, confidence)),
    }
    if name not in factories:
        raise ValueError(f"unknown drafter {name!r}; choose one of {sorted(factories)}")
    return factories[name]()


def best_drafter(has_draft_model: bool) -> str:
    """auto's drafter: hybrid when there is a draft model (the policy weighs both sources), else
    prompt lookup (and plain decoding wherever neither pays)."""
    return "hybrid" if has_draft_model else "prompt-lookup"


def needs_draft_model(name: str) -> bool:
    """Asked of the factories themselves (one that needs a model refuses to be built without it), so
    a new drafter needs no change here."""
    try:
        make_drafter(name, None, 1)
    except MissingDraftModel:
        return True
    return False


class MissingDraftModel(ValueError):
    pass


def _need(name: str, model: torch.nn.Module | None) -> torch.nn.Module:
    if model is None:
        raise MissingDraftModel(f"the {name} drafter needs a draft model (--draft)")
    return model
