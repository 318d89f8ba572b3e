"""A loaded model with its tokenizer, as the engine takes it, and the checks a target and its draft
must pass: end-of-sequence ids and tokenizer agreement. Loading itself lives in specdec.models."""
from __future__ import annotations

from dataclasses import dataclass

import torch


class TokenizerMismatch(ValueError):
    """The draft does not speak the target's token ids, so its drafts cannot be verified."""


@dataclass(frozen=True)
class Loaded:
    name: str
    model: torch.nn.Module
    tokenizer: object
    device: torch.device
    dtype: torch.dtype
    engine: str = "eager"  # "fast": linear layers prepacked for the CPU (specdec.models.fast)
    quantize: str | None = None  # "int8": a dynamically quantized copy (drafts on CPU)

    @property
    def eos_ids(self) -> list[int]:
        return eos_ids(self.model, self.tokenizer)


def eos_ids(model, tokenizer) -> list[int]:
    ids = model.generation_config.eos_token_id if model.generation_config else None
    ids = [ids] if isinstance(ids, int) else list(ids or [])
    if tokenizer.eos_token_id is not None:
        ids.append(tokenizer.eos_token_id)
    return sorted(set(ids))


def check_tokenizers(target, draft) -> None:
    """Raise TokenizerMismatch unless the two tokenizers map every token to the same id and agree
    on special tokens. Embedding sizes may differ (pairs pad their vocabularies differently); the
    token-to-id maps may not."""
    problems = []
    tv, dv = target.get_vocab(), draft.get_vocab()
    if tv != dv:
        only_target = sorted(set(tv) - set(dv), key=tv.get)[:3]
        only_draft = sorted(set(dv) - set(tv), key=dv.get)[:3]
        moved = sorted((t for t in tv if t in dv and tv[t] != dv[t]), key=tv.get)[:3]
        problems.append(f"vocabularies differ ({len(tv)} vs {len(dv)} tokens; only in target: {only_target}, "
                        f"only in draft: {only_draft}, different ids: {[(t, tv[t], dv[t]) for t in moved]})")
    for attr in ("bos_token", "eos_token", "unk_token"):
        a, b = getattr(target, attr, None), getattr(draft, attr, None)
        if str(a) != str(b):
            problems.append(f"{attr} differs: target {a!r}, draft {b!r}")
    if problems:
        raise TokenizerMismatch("draft tokenizer does not match the target's: " + "; ".join(problems))
