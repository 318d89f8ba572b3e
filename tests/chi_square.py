"""The seeded chi-square check of an exact sampler, shared by the end-to-end sampling tests.

A test draws many seeded runs, counts the first two tokens, and compares the counts with the
target's exact joint distribution. The same statistic against the draft's distribution must reject:
that is the power check, without which a passing test would mean nothing."""
import math

import torch

from specdec.engine.kvcache import CachedModel
from specdec.engine.sampling import probs_from_logits


def joint(model, sampling, prompt, vocab):
    """Exact P(y1, y2) after prompt under a model with the given sampling settings."""
    lane = CachedModel(model)
    first = probs_from_logits(lane.logits(prompt, 1)[0], sampling).double()
    rows = [first[y] * probs_from_logits(lane.logits(prompt + [y], 1)[0], sampling).double() for y in range(vocab)]
    return torch.stack(rows)


def chi_square(counts, expected_probs, runs):
    """Pearson statistic with cells of expected count < 5 pooled; returns (statistic, dof)."""
    expected = expected_probs.flatten() * runs
    counts = counts.flatten().double()
    small = expected < 5
    e = torch.cat([expected[~small], expected[small].sum().reshape(1)])
    c = torch.cat([counts[~small], counts[small].sum().reshape(1)])
    keep = e > 0
    stat = ((c[keep] - e[keep]) ** 2 / e[keep]).sum().item()
    return stat, int(keep.sum()) - 1


def critical(dof, z=3.09):
    """Upper 0.001 quantile of chi-square (Wilson-Hilferty)."""
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3
