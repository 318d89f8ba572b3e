"""A causal LM plus its KV cache, fed by token sequence rather than by increments.

`logits(ids, n)` makes the cache hold the longest prefix of `ids` it already has, feeds the rest in
one forward pass and returns the logits of the last n positions. Rolling back after a rejection is
then not a special case: the next call shares only the accepted prefix with what is cached, so the
stale drafted positions are cropped away, whether all, some or none of the drafts were accepted.
"""
from __future__ import annotations

import inspect

import torch
from transformers import DynamicCache


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    i = 0
    while a[i] == b[i]:
        i += 1
    return i


class CachedModel:
    def __init__(self, model: torch.nn.Module):
        self.model = model
        self.device = next(model.parameters()).device
        self.vocab_size = model.get_output_embeddings().out_features  # the logits' width
        self._takes_logits_to_keep = "logits_to_keep" in inspect.signature(model.forward).parameters
        self.reset()

    def reset(self) -> None:
        """Drop the cache (frees its memory)."""
        self.cache = DynamicCache(config=self.model.config)
        self.ids: list[int] = []

    def crop(self, length: int) -> None:
        """Keep the first `length` cached positions. transformers 5 counts the positions to remove."""
        drop = len(self.ids) - length
        if drop > 0:
            self.cache.crop(-drop)
            del self.ids[length:]

    @torch.inference_mode()
    def logits(self, ids: list[int], n: int = 1) -> torch.Tensor:
        """[n, V] logits predicting the tokens after ids[-n], ..., ids[-1]."""
        if not 1 <= n <= len(ids):
            raise ValueError(f"need 1 <= n <= len(ids), got n={n}, len(ids)={len(ids)}")
        # At least the last n positions must be fed to get their logits.
        keep = min(common_prefix(self.ids, ids), len(ids) - n)
        self.crop(keep)
        new = torch.tensor([ids[keep:]], dtype=torch.long, device=self.device)
        kwargs = {"logits_to_keep": n} if self._takes_logits_to_keep else {}
        out = self.model(input_ids=new, past_key_values=self.cache, use_cache=True, **kwargs)
        self.cache = out.past_key_values
        self.ids = list(ids)
        return out.logits[0, -n:]
