"""Tried, not kept: a free source's alpha_1 priced one posterior standard deviation below its mean
(against the winner's curse of choosing a lookup when its noisy running mean runs high) against at
its mean (policy.CostPolicy.FREE_AT_MEAN), on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B, greedy,
128 tokens) over ab_session.py's session (21 turns, each lane its own learned costs and recycling
table; cold, then warm). The lower price is patched in here only. Result: 0.978 cold / 1.036 warm
(free_low_ab.txt), within the noise.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/free_low_ab.py > docs/bench-auto/free_low_ab.txt
"""
import math

from ab_session import flag_ab
from specdec.engine.policy import CostPolicy

CostPolicy.FREE_LOW_SD = 1.0
at_mean = CostPolicy.draw_alpha_1


def draw_alpha_1(self, source: str) -> float:
    """At the mean less FREE_LOW_SD posterior standard deviations, for a free source."""
    alpha = at_mean(self, source)
    if not (self.FREE_AT_MEAN and self.costs.is_free(source)):
        return alpha
    costs = self.costs.source(source)
    evidence = (costs.kept[0].weight if costs.kept else 0.0) + self.costs.prior_weight
    return max(0.0, alpha - self.FREE_LOW_SD * math.sqrt(alpha * (1 - alpha) / (evidence + 1)))


CostPolicy.draw_alpha_1 = draw_alpha_1
flag_ab(CostPolicy, "FREE_LOW_SD", {"low": 1.0, "mean": 0.0})
