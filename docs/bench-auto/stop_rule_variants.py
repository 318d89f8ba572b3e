"""Variants of the cost policy's stop rule learned online, replayed without timing noise on
stop_rules_sim.py's data (what the int8 Qwen2.5-Coder-0.5B draft would have drafted at every
position of six of Qwen2.5-Coder-1.5B's greedy answers; that script collects and caches it). Each
variant runs the six turns in order and in reverse (how far the order moves a row is the noise a
variant must beat); "online" is stop_rules_sim.py's "lookahead (online)", the rule as the policy
learns it.

- intercept tau: the calibration a(c) with this turn's odds correction, its kept tested positions'
  odds over the odds the calibration predicted for them, each shrunk with tau / 2 observations;
- slow calibration: decay 0.99 and 100 observations carried into a turn (against 0.97 and 32);
- alphas: the rule's position alphas (what an undrafted token is expected to keep) made monotone
  (each no lower than the one above), no lower than position 2's, or pooled past position 1;
- oracle alphas: the online calibration with the position alphas fitted on all six turns;
- floor c: the online rule, but a draft stops at once after a token below confidence c (first: only
  after the first token), transformers' stop on top of the look-ahead;
- after last confidence: the look-ahead's next undrafted token expected at what tokens after a token
  of the last drafted one's confidence kept (a second calibration, by the confidence before), not at
  its position's average: after an unsure token the text stays unsure.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/stop_rule_variants.py > docs/bench-auto/stop_rule_variants.txt
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import stop_rules_sim as sim  # noqa: E402

from specdec.engine.confidence import Calibration, StopRule  # noqa: E402
from specdec.engine.policy import CARRIED_CALIBRATION, CostPolicy, interpolate  # noqa: E402


class Variant(sim.Evidence):
    """stop_rules_sim.Evidence (online) with a calibration intercept and reshaped position alphas."""

    def __init__(self, tau=None, calibration_decay=0.97, carried=CARRIED_CALIBRATION, alphas="as learned",
                 fixed_alphas=None, floor=None, first_only=False, after_last=False):
        super().__init__()
        self.calibration = Calibration(decay=calibration_decay)
        self.tau, self.carried, self.shape, self.fixed_alphas = tau, carried, alphas, fixed_alphas
        self.floor, self.first_only = floor, first_only
        self.after = Calibration(decay=calibration_decay) if after_last else None  # by the confidence before
        self.tested = self.kept_here = self.predicted = 0.0  # this turn's tested positions

    def new_turn(self):  # Evidence.new_turn's caps, the calibration's at `carried`
        self.calibration.cap(self.carried)
        if self.after is not None:
            self.after.cap(self.carried)
        for counts in self.kept:
            if counts[0] > sim.CARRIED_EVIDENCE:
                counts[:] = [sim.CARRIED_EVIDENCE, counts[1] * sim.CARRIED_EVIDENCE / counts[0]]
        self.tested = self.kept_here = self.predicted = 0.0

    def alphas(self):
        if self.fixed_alphas is not None:
            return self.fixed_alphas
        alphas, prior = [], 0.5
        for tested, kept in self.kept[1:]:
            prior = (kept + prior * 2) / (tested + 2) if tested else prior
            alphas.append(prior)
        if self.shape == "monotone":
            for j in range(1, len(alphas)):
                alphas[j] = max(alphas[j], alphas[j - 1])
        elif self.shape == "no lower than position 2's":
            alphas = alphas[:2] + [max(a, alphas[1]) for a in alphas[2:]]
        elif self.shape == "pooled past position 1":
            tested, kept = sum(t for t, _ in self.kept[2:]), sum(k for _, k in self.kept[2:])
            alphas = [alphas[0]] + [(kept + alphas[0] * 2) / (tested + 2)] * (len(alphas) - 1)
        return alphas

    def odds_ratio(self):
        if self.tau is None:
            return 1.0
        h = self.tau / 2
        observed = (self.kept_here + h) / (self.tested - self.kept_here + h)
        return observed / ((self.predicted + h) / (self.tested - self.predicted + h))

    def learn(self, confidences, accepted):
        if self.after is not None:  # as policy.SourceCosts.observe_confidences learns it
            self.after.observe(confidences[:-1], accepted - 1)
        prior = self.alphas()[0]
        for i, confidence in enumerate(confidences[: accepted + 1]):
            self.tested += 1
            self.kept_here += i < accepted
            self.predicted += self.calibration.acceptance(confidence, prior)
        super().learn(confidences, accepted)

    def rule(self, d, v):
        alphas, r = self.alphas(), self.odds_ratio()
        if self.calibration.evidence < CostPolicy.MIN_CALIBRATION:
            return lambda confidences: len(confidences) < CostPolicy.MIN_REACH

        def accept(c):
            a = self.calibration.acceptance(c, alphas[0])
            return r * a / (1 - a + r * a)

        def keep_drafting(confidences):
            j, ahead = len(confidences), list(alphas) + [alphas[-1]] * (sim.DEPTH + 1 - len(alphas))
            if self.floor is not None and j and confidences[-1] < self.floor and (j == 1 or not self.first_only):
                return False
            if self.after is not None and j:  # position j + 1, the first undrafted
                ahead[j] = self.after.acceptance(confidences[-1], ahead[j])
            return StopRule(accept, tuple(ahead), d, v, sim.OVERHEAD, sim.DEPTH).keep_drafting(confidences)
        return keep_drafting


def main() -> None:
    data = sim.cached()
    if data is None:
        raise SystemExit(f"no collected data at {sim.DATA} for these questions: run stop_rules_sim.py first")
    known = sorted((int(n), s) for n, s in data["verify"].items())
    v, d = (lambda n: interpolate(known, n)), data["draft_seconds"]
    cost = lambda drafted: drafted * d + v(drafted + 1) + sim.OVERHEAD  # noqa: E731
    turns = data["turns"]
    oracle = Variant()
    oracle.decay = 1.0
    for turn in turns.values():
        for row in turn["rows"]:
            oracle.learn(row["confidences"][: min(row["agree"] + 1, sim.DEPTH)], min(row["agree"], sim.DEPTH))
    variants = {"online": {}, **{f"intercept tau {t}": {"tau": t} for t in (4.0, 8.0, 16.0)},
                "slow calibration": {"calibration_decay": 0.99, "carried": 100.0},
                **{f"alphas {s}": {"alphas": s} for s in ("monotone", "no lower than position 2's",
                                                           "pooled past position 1")},
                "oracle alphas": {"fixed_alphas": oracle.alphas()},
                **{f"floor {f}": {"floor": f} for f in (0.3, 0.4, 0.5)},
                **{f"floor {f} first": {"floor": f, "first_only": True} for f in (0.3, 0.4)},
                "after last confidence": {"after_last": True}}
    print(f"{'variant':44s}" + "".join(f"{name[8:]:>15s}" for name in turns) + "    all six")
    replay(variants, turns, d, v, cost, 44)


def replay(variants: dict, turns: dict, d: float, v, cost, width: int) -> None:
    """Each variant (name -> Variant's options) over the turns in order, then reversed: a row each."""
    for name, options in variants.items():
        for order in (list(turns), list(turns)[::-1]):
            evidence, results = Variant(**options), {}
            for t in order:
                evidence.new_turn()
                results[t] = sim.simulate(turns[t], lambda c: evidence.rule(d, v)(c), cost, evidence.learn)
            sim.print_row(f"{name}{' (reversed)' if order[0] != next(iter(turns)) else ''}".ljust(width),
                          {t: results[t] for t in turns}, turns, v(1) + sim.OVERHEAD)


if __name__ == "__main__":
    main()
