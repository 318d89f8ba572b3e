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
        probs = probs.masked_fill(outside_nucleus(probs, sampling.top_p), 0.0)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


NUCLEUS_CANDIDATES = 1024  # how many of the most probable tokens outside_nucleus looks at first


def outside_nucleus(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """The tokens outside each row's top-p nucleus: in descending order of probability, a token stays
    while the mass before it is still short of top_p. The most probable token always stays, even when
    top_p rounds to 0 in float32 (below ~1e-45): an empty nucleus would renormalise 0 / 0 into NaN.

    Sorting a whole vocabulary is the dearest step of sampling on a CPU (a sort of 49k-152k floats per
    verified position; a tree round verifies up to 17), and the nucleus is nearly always among the
    first few hundred tokens. So the NUCLEUS_CANDIDATES most probable come first (topk, descending):
    where they hold top_p of a row's mass, every token past them has at least top_p before it and is
    dropped, so the nucleus is the full sort's. Only a row whose candidates hold less (a flat
    distribution) is sorted whole. Each row's nucleus depends on that row alone, as a sort's does
    (equally probable tokens at the edge may be taken in another order than a sort's, which picks
    among them arbitrarily too): the standard lane's one row and a verify pass's many agree."""
    rows = probs.reshape(-1, probs.shape[-1])
    top, order = torch.topk(rows, min(NUCLEUS_CANDIDATES, rows.shape[-1]), dim=-1)
    keep, held = _nucleus(top, order, top_p, rows.shape)
    short = ~held  # rows whose candidates hold less than top_p: sorted whole, each on its own
    if bool(short.any()):
        flat = rows[short]
        keep[short] = _nucleus(*torch.sort(flat, dim=-1, descending=True), top_p, flat.shape)[0]
    return ~keep.reshape(probs.shape)


def _nucleus(top: torch.Tensor, order: torch.Tensor, top_p: float, shape: torch.Size
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """From rows' most probable tokens in descending order (top: their probabilities, order: their
    ids): which tokens of each row stay, and whether the given tokens held top_p of its mass (when
    they did not, a token past them might have stayed)."""
    cumulative = top.cumsum(-1)
    drop = (cumulative - top) >= top_p
    drop[..., 0] = False
    keep = torch.zeros(shape, dtype=torch.bool, device=top.device).scatter_(-1, order, ~drop)
    return keep, cumulative[..., -1] >= top_p


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
