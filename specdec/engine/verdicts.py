"""Judging a greedy divergence: a numerical tie of the target's own logits, or a bug."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch


@dataclass(frozen=True)
class Divergence:
    """Where two greedy lanes first differ (token `index`), and whether the target itself could not
    tell the two tokens apart there (numerical_tie). The JSON's "divergence" object, typed; the one
    place it is put into words, for the CLI and the app alike."""

    index: int
    standard_token: int | None  # None: that lane ended there
    speculative_token: int | None
    margin: float  # the target's top-2 logit margin at `index`
    tolerance: float  # what its dtype's rounding can move a logit of that size
    dtype: str
    numerical_tie: bool
    top2: tuple[int, ...] = ()

    @classmethod
    def from_json(cls, data: dict) -> "Divergence":
        return cls(**{**data, "top2": tuple(data.get("top2") or ())})

    def to_json(self) -> dict:
        return {**asdict(self), "top2": list(self.top2)}

    def describe(self) -> str:
        """'numerical tie at token 17 (...)', or 'diverged at token 17 (...): this is a bug'."""
        sign = "≤" if self.numerical_tie else ">"
        why = f"top-2 logit margin {self.margin:.3g} {sign} tolerance {self.tolerance:.3g}, {self.dtype}"
        if self.numerical_tie:
            return f"numerical tie at token {self.index} ({why})"
        return f"diverged at token {self.index} ({why}): this is a bug"


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
