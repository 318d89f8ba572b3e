"""Tried and not kept (docs/spec-bench/notes.md): the stop rule as optimal stopping (SurvivalRule below:
backward induction over the draft's confidence distribution against the best fixed-k rate) against
the look-ahead at average acceptance that the cost policy keeps (confidence.StopRule), on the Qwen pair
(Qwen2.5-Coder-1.5B + int8 0.5B, greedy, 128 tokens) over ab_session.py's session (21 turns, each lane
its own learned costs and recycling table; cold, then warm). Output: survival_rule_ab.txt (0.987 cold
/ 1.013 warm), run while the rule lived in engine/confidence.py and CostPolicy.stop_rule chose it.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/survival_rule_ab.py > docs/bench-auto/survival_rule_ab.txt
    PYTHONPATH=. .venv/bin/python docs/bench-auto/survival_rule_ab.py --sampled > docs/bench-auto/survival_rule_ab.sampled.txt
"""
import sys
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from ab_session import print_ratios, qwen_pair, run_lanes
from specdec.engine.config import Sampling
from specdec.engine.confidence import Calibration
from specdec.engine.policy import CostPolicy, tree_budget


@dataclass(frozen=True)
class SurvivalRule:
    """The stop rule as an optimal stopping problem, solved once a round (solve): go on after j drafted
    tokens while their survival s_j = a(c_1) ... a(c_j) exceeds thresholds[j].

    Why not StopRule's look-ahead. StopRule prices the tokens not yet drafted at their position's
    average acceptance and as drafted whatever their confidence, but a draft that goes on keeps the
    option to stop at the next unsure token, and a draft's confidences are bimodal (on the Qwen pair
    most tokens are past 0.98, the rest spread below 0.7): going on is worth more than the average
    token says. On prose, where the average is low, the look-ahead stopped drafts after every
    middling token.

    The problem. A round is one renewal of a process whose long-run rate is tokens per round over
    seconds per round; the stopping rule that maximises that ratio maximises E[tokens - lam seconds]
    per round at lam = the best rate itself (Dinkelbach 1967), and for any lam the problem is additive:
    drafting token j + 1 costs lam (d + v(j + 2) - v(j + 1)) and yields s_j a(c_{j+1}) expected tokens,
    where c_{j+1} is not known until it is drafted. With W_H = 0 at the horizon H,

        W_j(s) = max(0, sum_b p_b [s a_b + W_{j+1}(s a_b)] - lam (d + v(j + 2) - v(j + 1)))

    (p_b: the share of tested positions whose confidence fell in bin b, a_b: that bin's acceptance, the
    calibration's). Drafting on is worth it iff W_j(s_j) > 0; W_j increases with s, so that is s_j
    above a threshold per depth, found by backward induction on a grid of s. lam is taken as the best
    fixed-k rate of the source: no more than the optimum, so the rule errs towards drafting on. The
    table v may be non-convex (a pass over 5 tokens cheaper than over 3): the induction sees cheap
    widths past a dear one. As with StopRule, only the draft's own probabilities and earlier rounds'
    measurements decide, so the output is the target's."""

    accept: Callable[[float], float]
    thresholds: tuple[float, ...]  # [j]: the least survival after j tokens to go on drafting; len: the horizon

    GRID = 129  # survival grid points, geometric from MIN_SURVIVAL to 1
    MIN_SURVIVAL = 1e-4

    @property
    def horizon(self) -> int:
        return len(self.thresholds)

    def keep_drafting(self, confidences: Sequence[float]) -> bool:
        j = len(confidences)
        if j >= len(self.thresholds):
            return False
        survive = 1.0
        for confidence in confidences:
            survive *= self.accept(confidence)
        return survive > self.thresholds[j]

    @classmethod
    def solve(cls, calibration: Calibration, prior: float, draft_seconds: float,
              pass_seconds: Callable[[int], float], horizon: int, rate: float) -> "SurvivalRule":
        """The rule for a source whose acceptance by confidence is `calibration` (shrunk towards prior,
        its overall acceptance), drafting at draft_seconds a token, verified at pass_seconds(n), to at
        most horizon tokens, against the rate `rate` (tokens per second) it must beat."""
        import numpy as np

        centres = [calibration.centre(b) for b in range(len(calibration.edges))]
        accept = np.array([calibration.acceptance(c, prior) for c in centres])
        # Where this source's tokens fall: tested positions by bin, a tenth of one in every bin so that
        # none is impossible.
        share = np.array(calibration.tested) + 0.1
        share /= share.sum()
        grid = np.geomspace(cls.MIN_SURVIVAL, 1.0, cls.GRID)
        after = grid[:, None] * accept[None, :]  # survival after one more token, by grid point and bin
        value = np.zeros(cls.GRID)  # W_{j+1} on the grid; W_H = 0
        thresholds = [0.0] * horizon  # [0]: the first token is the policy's choice, never the rule's
        for j in range(horizon - 1, 0, -1):
            marginal = draft_seconds + pass_seconds(j + 2) - pass_seconds(j + 1)
            go_on = (after + np.interp(after, grid, value, left=0.0)) @ share - rate * marginal
            thresholds[j] = _first_positive(grid, go_on)
            value = np.maximum(go_on, 0.0)
        return cls(lambda c: float(accept[calibration.bin(c)]), tuple(thresholds))


def _first_positive(grid, values) -> float:
    """The least x on the grid's line where values (increasing in x) turn positive: 0 if they all
    are, past 1 if none is."""
    positive = values > 0
    if positive[0]:
        return 0.0
    if not positive.any():
        return 2.0  # no survival reaches it: stop
    i = int(positive.argmax())
    x0, x1, y0, y1 = grid[i - 1], grid[i], values[i - 1], values[i]
    return float(x0 + (x1 - x0) * (-y0) / (y1 - y0))


LOOKAHEAD = CostPolicy.stop_rule


def survival_stop_rule(self, source: str, horizon: int):
    """CostPolicy.stop_rule with SurvivalRule in place of StopRule."""
    costs = self.costs.source(source)
    if tree_budget(source) is not None or costs.calibration.evidence < self.MIN_CALIBRATION - 1e-6:
        return None
    prior = self.costs.position_alphas(source, 1)[0]
    passes = tuple(self.costs.pass_seconds_many(range(1, horizon + 2)))
    rate = max(self.rates(source, None, horizon)[1:])
    return SurvivalRule.solve(costs.calibration, prior, costs.draft.mean or 0.0,
                              lambda n: passes[min(n, len(passes)) - 1], horizon, rate)


def switch(lane: str) -> None:
    CostPolicy.stop_rule = survival_stop_rule if lane == "survival" else LOOKAHEAD


if __name__ == "__main__":
    pair = qwen_pair()
    sampled = "--sampled" in sys.argv  # T = 0.7, top-p 0.9, seed 0 for both lanes
    run = (lambda request: pair.auto(replace(request, sampling=Sampling(temperature=0.7, top_p=0.9, seed=0)))) \
        if sampled else pair.auto
    passes = run_lanes(pair, {"survival": run, "lookahead": run}, before=switch)
    print_ratios(passes, [("survival", "lookahead")])
