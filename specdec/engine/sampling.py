"""Turning logits into the distribution a token is drawn from, and drawing it.

Both models' logits go through `probs_from_logits` with the same settings, so the
accept rule compares like with like: p and q are the distributions actually sampled from.
"""
from __future__ import annotations

import math

import torch

from .config import Sampling


def probs_from_logits(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """softmax(logits / T) restricted to top-k, then to the smallest top-p nucleus, renormalised.

    Works on the last dimension of any batch shape; computed in float32 whatever the model dtype.
    """
    if sampling.greedy:
        raise ValueError("greedy decoding uses argmax, not a distribution")
    x = logits.float() / sampling.temperature
    if 0 < sampling.top_k < x.shape[-1]:
        kth = torch.topk(x, sampling.top_k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    probs = torch.softmax(x, dim=-1)
    if sampling.top_p < 1.0:
        sorted_p, order = torch.sort(probs, dim=-1, descending=True)
        # Keep a token while the mass before it is still short of top_p. The most probable token
        # always stays, even when top_p rounds to 0 in float32 (below ~1e-45): an empty nucleus would
        # renormalise 0 / 0 into NaN.
        drop_sorted = (sorted_p.cumsum(-1) - sorted_p) >= sampling.top_p
        drop_sorted[..., 0] = False
        drop = drop_sorted.scatter(-1, order, drop_sorted)
        probs = probs.masked_fill(drop, 0.0)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def sample_from(probs: torch.Tensor, u: float) -> int:
    """Inverse-CDF draw from a 1-D distribution (not necessarily normalised) with a uniform u in [0, 1).

    Taking the uniform as input keeps the rule pure: tests can drive it exactly.
    Tokens of zero mass can never be returned. A distribution with no finite positive mass (NaN from
    overflowing logits, or all zeros) is refused rather than silently mapped to the last id.
    """
    cdf = probs.double().cumsum(0)
    total = float(cdf[-1])
    if not (math.isfinite(total) and total > 0):  # NaN anywhere propagates to the total
        raise FloatingPointError(f"cannot sample from a distribution with total mass {total} "
                                 "(NaN or infinite logits, or every token masked)")
    index = int(torch.searchsorted(cdf, torch.tensor([u], dtype=cdf.dtype, device=cdf.device) * cdf[-1], right=True))
    return min(index, probs.numel() - 1)


def make_generator(seed: int, device: torch.device | str) -> torch.Generator:
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return generator


def uniforms(n: int, generator: torch.Generator) -> list[float]:
    return torch.rand(n, generator=generator, device=generator.device, dtype=torch.float64).tolist()
