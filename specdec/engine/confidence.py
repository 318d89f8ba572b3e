"""Stopping a draft early, chosen by the cost model: acceptance as a function of the draft's own
confidence, and the round's marginal rate.

A drafted token's confidence is the probability the draft gave it: q(x) when sampling, the softmax at
temperature 1 of the draft's logits when greedy (as transformers' assistant_confidence_threshold
reads it). A confident draft is accepted more often, so a round should go on drafting while its
tokens are confident and stop at the first that is not. transformers stops at a fixed 0.4 (re-fitted
by an ROC curve when asked); AdaEDL (Agrawal et al. 2024) stops on an entropy bound; SpecDec++ (Huang
et al. 2024) stops once a trained head says P(some drafted token is rejected) passes a threshold. We
take SpecDec++'s rule with its two parts measured instead of trained or fixed:

Calibration. a(c) = P(a drafted token is accepted | every token before it was, its confidence is c),
learned online per source from the positions each round tested (a position is tested when all before
it were accepted), in bins of c, decayed, and shrunk as a Beta prior would towards halfway between
the source's overall acceptance and the bin's own confidence, so a thin bin borrows from the rest
without forgetting what its confidence says. (Shrunk towards the overall acceptance alone, a bin of
unsure tokens that no round had tested read as likely kept as an average token: on the Qwen pair a
translation's first tokens at confidence 0.3, rejected round after round, were drafted on as if
accepted three times in four.) The calibration belongs to the pair more than to the text, since the
confidence itself follows the text: a new request keeps more of it than of the acceptance by position.

The rule. Having drafted j tokens with confidences c_1..c_j, the chance all j survive verification is
s_j = a(c_1) ... a(c_j), and the round, if it stopped now, would yield E_j = 1 + s_1 + ... + s_j
tokens in T_j = j d + v(j + 1) + o seconds (d: the draft's seconds per token, v(n): a target pass over
n tokens, o: the round's overhead). Tokens not yet drafted have unknown confidences, so each is
expected at its position's average acceptance a_bar_m: drafting on to m > j would yield
E_m = E_j + s_j (a_bar_{j+1} + a_bar_{j+1} a_bar_{j+2} + ...) in T_m = m d + v(m + 1) + o. The draft
goes on while some m up to the round's cap beats stopping now,

    max_{j < m <= horizon} E_m / T_m  >  E_j / T_j,

and stops at once when none does.

After an unsure token. The next token's confidence is unknown, but not unrelated to the last one's:
text the draft is unsure of stays unsure for a while. So the first undrafted token is expected not
at its position's average but at a second calibration's a'(c_j), P(a token is accepted | the token
before it was, with confidence c_j), learned from the same tested positions (each position from the
second, binned by the confidence before it) and shrunk the same way towards halfway between the
position's average and c_j. Expected at the average, a first token at confidence 0.2 was drafted
on with three more on the Qwen pair's prose, since on this CPU a pass over 5 tokens costs what one
over 2 does, and those rounds kept nothing at 0.3 s a token (docs/spec-bench/notes.md); in replay
on six answers the rule gains about 1% (docs/bench-auto/stop_rule_variants.py, "after last
confidence"), most on prose, and over a 21-turn session it reads level greedy and 1.10-1.15x
sampled (docs/bench-auto/after_last_ab.py), where a token drawn at low q marks text on which the two
models' next distributions part. Looking one token ahead (m = j + 1 only) is SpecDec++'s rule, and
is enough where v(n) is convex; on a CPU it is not (verify_costs.py: on the Qwen pair a pass over 5
tokens costs less than one over 3), and a myopic rule, seeing the third token cost more than it
brings, stopped drafts at 2 that the fourth and fifth would have paid for. The threshold on
confidence this implies is neither fixed nor global: it moves with the verify-cost table (a cheap
wide pass keeps drafts going), the draft's cost, and how well this draft agrees with this target on
this text.

This text. The calibration is the pair's, learned over every text; a text that copies (a retrieval
answer quoting its passages, a summary) keeps more at each confidence than the pair's average, and
text the two models part on keeps less. So the rule reads a(c) through this request's own offset in
log-odds, a'(c) = sigmoid(logit a(c) + delta) (TextShift): delta is the maximum a posteriori shift of
a logistic model with a random intercept per text (a prior N(0, 1) on delta), fitted to this
request's tested positions against what the calibration predicted for them before the round, and
it moves the position averages a_bar the rule expects of tokens not yet drafted too, the same text's.
On the Qwen pair a retrieval answer's drafts kept 5 of 5, four rounds running, at confidences the
pair's calibration gave 0.6-0.8 together, so each stopped at 5 where transformers' fixed 0.4 drafts
on to 20 (docs/spec-bench/notes.md). A new request starts at delta = 0.

Exactness. The rule reads only the draft's own probabilities and earlier rounds' measurements, never
the target's output for this round, so the draft length is a stopping time of the draft's own draws
and each verified position keeps its exact accept/reject test (verify.py): the output is the
target's, greedy or sampled.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Callable, Sequence

# The calibration's bins: the lower edge of each. Tenths up to 0.9, then finer, because the top decile
# decides long drafts: a draft's chance of surviving j tokens is the product of their a(c), and on the
# Qwen pair (the 0.5B draft at k = 12 on the Spec-Bench sample, 1,042 tested positions) tokens at
# confidence 0.90-0.98 were kept 96% of the time and the 372 at 0.98 or more every time. One bin
# [0.9, 1] read 0.96 for both, so twelve copied tokens at 0.999 survived 0.96^12 = 0.61 by the rule's
# reckoning, against about 1: drafts on text that copies (retrieval, summaries) stopped at 4-7 tokens,
# all accepted, where transformers' fixed 0.4 threshold drafts on to 20.
BIN_EDGES = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99)


class Calibration:
    """a(c) in the bins of BIN_EDGES, as decayed counts of tested and kept positions."""

    def __init__(self, decay: float = 0.97, edges: tuple[float, ...] = BIN_EDGES):
        self.decay, self.edges = decay, edges
        self.tested = [0.0] * len(edges)
        self.kept = [0.0] * len(edges)

    def bin(self, confidence: float) -> int:
        return max(0, bisect.bisect_right(self.edges, confidence) - 1)

    def centre(self, b: int) -> float:
        """The middle of bin b's confidences."""
        upper = self.edges[b + 1] if b + 1 < len(self.edges) else 1.0
        return (self.edges[b] + upper) / 2

    def observe(self, confidences: Sequence[float], accepted: int) -> None:
        """A round's drafted confidences and how many of its tokens were accepted: positions
        1..accepted + 1 were tested (the first rejection included), the rest were not."""
        tested = confidences[: accepted + 1]
        if not tested:
            return
        self.tested = [t * self.decay for t in self.tested]
        self.kept = [k * self.decay for k in self.kept]
        for i, confidence in enumerate(tested):
            b = self.bin(confidence)
            self.tested[b] += 1.0
            self.kept[b] += 1.0 if i < accepted else 0.0

    def acceptance(self, confidence: float, prior: float, weight: float = 2.0) -> float:
        """a(confidence), shrunk with the weight of `weight` observations towards halfway between
        prior (the source's overall acceptance) and the bin's mid confidence (module docstring)."""
        b = self.bin(confidence)
        return (self.kept[b] + (prior + self.centre(b)) / 2 * weight) / (self.tested[b] + weight)

    @property
    def evidence(self) -> float:
        return sum(self.tested)

    def cap(self, evidence: float) -> None:
        """Keep every bin's acceptance, with at most `evidence` observations behind them all."""
        if self.evidence > evidence:
            scale = evidence / self.evidence
            self.tested = [t * scale for t in self.tested]
            self.kept = [k * scale for k in self.kept]

    def to_json(self) -> dict:
        return {"tested": self.tested, "kept": self.kept}

    @classmethod
    def from_json(cls, data: dict, decay: float = 0.97) -> "Calibration":
        calibration = cls(decay)
        if not len(data["tested"]) == len(data["kept"]) == len(calibration.edges):
            raise ValueError(f"a calibration of {len(data['tested'])} bins, not {len(calibration.edges)}")
        calibration.tested, calibration.kept = list(data["tested"]), list(data["kept"])
        return calibration


# TextShift: the prior N(0, 1 / PRIOR_PRECISION) on this text's log-odds offset, and the most it may
# read either way (a text all of whose positions were kept, at confidences the calibration gave
# near 1, has no finite MAP without a prior; the bound keeps a few rounds from promising certainty).
SHIFT_PRIOR_PRECISION = 1.0
SHIFT_LIMIT = 2.0
# Each round's positions weigh this much less per later round: text that stops copying is followed.
SHIFT_DECAY = 0.9


def logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def shifted(p: float, delta: float) -> float:
    """p moved by delta in log-odds."""
    return p if delta == 0.0 else sigmoid(logit(p) + delta)


class TextShift:
    """This request's log-odds offset delta from the calibration's predictions (module docstring,
    "This text"): positions as (logit of the predicted acceptance, kept), decayed by round."""

    def __init__(self) -> None:
        self.positions: list[tuple[float, float, float]] = []  # (logit predicted, kept 0/1, weight)
        self.delta = 0.0

    def observe(self, predicted: Sequence[float], accepted: int) -> None:
        """A round's tested positions (predicted[i]: the calibration's a(c) for position i + 1, before
        this round): positions 1..accepted were kept, the next (if tested) was not."""
        if not predicted:
            return
        self.positions = [(x, y, w * SHIFT_DECAY) for x, y, w in self.positions if w * SHIFT_DECAY > 0.02]
        self.positions += [(logit(a), 1.0 if i < accepted else 0.0, 1.0) for i, a in enumerate(predicted)]
        self.delta = self.fit()

    def fit(self, steps: int = 8) -> float:
        """Newton's method on the log posterior sum_i w_i log P(y_i | x_i + delta) - P delta^2 / 2,
        which is concave (so Newton from the last round's delta converges in two or three steps),
        bounded to +-SHIFT_LIMIT."""
        delta = self.delta
        for _ in range(steps):
            gradient, curvature = -SHIFT_PRIOR_PRECISION * delta, SHIFT_PRIOR_PRECISION
            for x, y, w in self.positions:
                p = sigmoid(x + delta)
                gradient += w * (y - p)
                curvature += w * p * (1 - p)
            step = gradient / curvature
            delta = min(SHIFT_LIMIT, max(-SHIFT_LIMIT, delta + step))
            if abs(step) < 1e-7:
                break
        return delta

    def reset(self) -> None:
        self.positions, self.delta = [], 0.0


@dataclass(frozen=True)
class StopRule:
    """The rule of the module docstring, frozen at the start of a round from the cost model:
    accept(c) -> a(c); position_alpha[i] -> a_bar at position i + 1 (the last for deeper ones);
    pass_seconds(n) -> v(n); horizon: the deepest the round may draft."""

    accept: Callable[[float], float]
    position_alpha: Sequence[float]
    draft_seconds: float
    pass_seconds: Callable[[int], float]
    overhead: float = 0.0
    horizon: int = 8
    # after(c, a_bar) -> the next token's acceptance after a drafted token of confidence c, where its
    # position's average is a_bar (the module docstring's "After an unsure token"); None: a_bar.
    after: Callable[[float, float], float] | None = None
    # Whether a greedy chain may add its second choice as a leaf where that pays (sibling).
    siblings: bool = False

    def keep_drafting(self, confidences: Sequence[float]) -> bool:
        """After drafting len(confidences) tokens: would drafting on to some depth up to the horizon
        raise the round's expected rate?"""
        j = len(confidences)
        survive, expected = 1.0, 1.0
        for confidence in confidences:
            survive *= self.accept(confidence)
            expected += survive
        now = expected / (j * self.draft_seconds + self.pass_seconds(j + 1) + self.overhead)
        alphas = self.position_alpha or (0.5,)
        for m in range(j + 1, max(self.horizon, j + 1) + 1):
            alpha = alphas[min(m - 1, len(alphas) - 1)]
            if m == j + 1 and j and self.after is not None:
                alpha = self.after(confidences[-1], alpha)
            survive *= alpha
            expected += survive
            if expected / (m * self.draft_seconds + self.pass_seconds(m + 1) + self.overhead) > now:
                return True
        return False

    def sibling(self, confidences: Sequence[float], seconds: Sequence[float]) -> int | None:
        """Where a greedy chain of len(confidences) drafted tokens should add a sibling leaf, if
        anywhere: the 0-based position whose second choice (the draft's probability of it: seconds)
        most adds to the round's expected tokens, when that beats the wider pass it costs.

        The sibling at position i is the draft's second choice beside its i-th token, a leaf: the
        tree is the chain plus that one node, verified in one pass (tree_verify.py), and it needs no
        draft pass (the second choice is in the row the chain's token came from). It adds a token
        exactly when the target keeps the chain's first i - 1 tokens, rejects the i-th, and its own
        token there is the second choice; the target's token after the sibling then follows as after
        any accepted leaf. With s_i = a(c_1) ... a(c_i) the chain's survival as the rule reads it:

            P(sibling i kept) = s_{i-1} (1 - a(c_i)) r_i,   r_i = P(second choice | first rejected),

        and r_i is read off the draft itself, its second choice's share of what it gives the tokens
        other than its first: q_2 / (1 - q_1). (Measured on the Qwen pair, where the draft's top-1
        misses, its second choice is the target's token at 0.81 of the positions with the fp32
        draft, 0.74 int8: docs/bench-auto/sibling_bound.txt. The rule reads the draft's own share
        rather than a pair's constant: a flat second place, q_2 near the rest, is a weak guess.)
        The round keeps the sibling when

            (E_j + P(sibling i kept)) / (j d + v(j + 2) + o)  >  E_j / (j d + v(j + 1) + o),

        so a row the target pass prices at nothing takes a sibling whenever one can be kept, and a
        pass past a kernel's cliff only one likely enough to pay for it. (On this CPU, Qwen2.5-1.5B's
        passes over 1-6 tokens cost one step, the tree's mask and a kept sibling's cache gather
        included, and one over 7 1.22 steps: docs/bench-auto/sibling_pass.txt.) Replayed on the Spec-Bench sample, a chain of 4 with one
        sibling at its least sure position kept 4.42 tokens a pass against 4.24 (fp32 draft), and
        two siblings or a chain of 5 crossed that cliff and lost (sibling_bound.txt).

        Exactness: the greedy tree rule keeps the path the target's argmax follows, so the round's
        tokens are the target's greedy tokens whatever the tree (tree_verify.accept_greedy). The
        choice reads only the draft's probabilities and earlier rounds, as the stop does."""
        j = len(confidences)
        if not self.siblings or not j:
            return None
        survive, expected, kept = 1.0, 1.0, []
        for confidence, second in zip(confidences, seconds):
            accepted = self.accept(confidence)
            kept.append(survive * (1.0 - accepted) * min(1.0, second / max(1e-9, 1.0 - confidence)))
            survive *= accepted
            expected += survive
        best = max(range(j), key=kept.__getitem__)
        base = j * self.draft_seconds + self.overhead
        with_sibling = (expected + kept[best]) / (base + self.pass_seconds(j + 2))
        return best if kept[best] > 0 and with_sibling > expected / (base + self.pass_seconds(j + 1)) else None
