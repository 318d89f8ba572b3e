"""Judging a greedy divergence: a numerical tie of the target's own logits, or a bug."""
from __future__ import annotations

import torch


def numerical_tie(logits: torch.Tensor, tokens: set) -> dict:
    """A greedy divergence is a numerical tie when the two tokens are the target's top two and their
    logits differ by no more than the rounding of the model's dtype can move them.

    A k+1-token verify pass and a one-token step add up the same numbers in a different order; in
    bf16 (8 bits of mantissa) that moves a logit of 20 by up to about 0.1, enough to flip an argmax
    that sits on a near-tie with no bug behind it. The tolerance, 4 eps |top logit|, is then about
    0.6 in bf16 and 2e-5 in fp32, where the tests keep asserting strict identity.
    """
    top = torch.topk(logits.float(), 2)
    margin = float(top.values[0] - top.values[1])
    tolerance = 4 * torch.finfo(logits.dtype).eps * max(1.0, abs(float(top.values[0])))
    return {"margin": margin, "tolerance": tolerance, "dtype": str(logits.dtype).removeprefix("torch."),
            "top2": top.indices.tolist(),
            "numerical_tie": margin <= tolerance and tokens <= set(top.indices.tolist())}
