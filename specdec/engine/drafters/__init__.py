"""The drafter registry: every drafter by name, with one line on what it does. One module per family."""
from __future__ import annotations

from typing import Callable

import torch

from .base import Draft, Drafter, check_draft_reads, fit_vocab
from .lookup import PromptLookupDrafter
from .model import ModelDrafter

__all__ = ["DRAFTERS", "Draft", "Drafter", "ModelDrafter", "PromptLookupDrafter", "check_draft_reads", "fit_vocab",
           "make_drafter"]


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
