"""The accept/reject rule of speculative decoding, as pure functions.

Sampling (Leviathan et al. 2023, Chen et al. 2023): the draft proposed x_i ~ q_i. Accept x_i with
probability min(1, p_i(x_i) / q_i(x_i)). At the first rejection draw one token from the residual
norm(max(p_i - q_i, 0)) and stop; if all k are accepted draw a bonus token from p_{k+1}.
Marginalising over the draft, P(token = y) = min(p(y), q(y)) + (1 - sum_x min(p, q)) * residual(y) = p(y),
so the output has exactly the target's distribution whatever the draft is.

Greedy is the special case where p and q are one-hot: accept while the draft equals the target's
argmax, then append the target's argmax.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .sampling import sample_from


@dataclass(frozen=True)
class Verdict:
    accepted: int  # how many drafted tokens were kept, 0..k
    token: int  # the target's own token after them: a correction if accepted < k, else the bonus


def verify_greedy(drafts: list[int], target_argmax: list[int]) -> Verdict:
    """target_argmax[i] is the target's argmax after the first i drafts (k + 1 entries)."""
    accepted = 0
    while accepted < len(drafts) and drafts[accepted] == target_argmax[accepted]:
        accepted += 1
    return Verdict(accepted, target_argmax[accepted])


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """norm(max(p - q, 0)). If it has no mass (p == q up to rounding, so a rejection was a rounding
    accident of probability ~0), p itself is the right distribution."""
    r = torch.clamp(p - q, min=0.0)
    total = r.sum()
    return r / total if total > 0 else p


def verify_sampled(
    drafts: torch.Tensor,  # [k] drafted token ids
    p: torch.Tensor,  # [k + 1, V] target distributions after 0..k drafts
    q: torch.Tensor,  # [k, V] distributions the drafts were drawn from
    u_accept: list[float],  # k uniforms in [0, 1) for the accept tests
    u_final: float,  # one uniform for the correction or bonus draw
) -> Verdict:
    k = drafts.numel()
    rows = torch.arange(k, device=p.device)
    px, qx = p[rows, drafts], q[rows, drafts]
    # u < p/q written as u*q < p: no division, and a token the target gives zero mass is never kept.
    ok = torch.tensor(u_accept, dtype=px.dtype, device=px.device) * qx < px
    accepted = int(ok.to(torch.int64).cumprod(0).sum()) if k else 0
    dist = p[k] if accepted == k else residual(p[accepted], q[accepted])
    return Verdict(accepted, sample_from(dist, u_final))


def acceptance(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Per-position probability that a draft from q is accepted: beta = sum_x min(p(x), q(x)), at most
    1 (a softmax summed in fp32 over 49,152 ids can exceed 1 by a few parts in a million, and a
    probability reported above 1 is wrong however small the excess)."""
    return torch.minimum(p, q).sum(-1).clamp(max=1.0)
