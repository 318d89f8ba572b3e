"""How far to draft each round: a fixed k, transformers' +2/-1 heuristic, or a cost-aware choice.

The cost-aware policy keeps an online cost model per pair, device and drafter source, and picks
each round the (source, k) with the most expected tokens per second:

    E(k) = 1 + sum_{i<=k} prod_{j<=i} alpha_j    (alpha_j: P(position j kept | positions before it were))
    T(k) = k c + v(k + 1) + o                    (c: seconds per drafted token; v(n): a target pass over
                                                  n tokens; o: the round's own overhead)

k = 0 is a plain decode step, E(0) / T(0) = 1 / (v(1) + o), and wins whenever no k beats it.
Position-wise alpha_j follows a draft whose agreement falls with depth; the table v(n) follows a
device on which verifying 5 tokens can cost less than verifying 3. alpha_j is shrunk towards a
prior, so one lucky round cannot promise k = 16, and a pass may be at most 2 wider than the widest
measured. alpha_1 is a Thompson draw from its posterior each round, no lower than its mean (CostPolicy;
a free source's, measured every round anyway, is its mean): a source is drafted in proportion to the
chance that it is the best, plain decoding included.

Evidence is of this text. Acceptance depends on the text, so a new request keeps what others
taught as a prior of at most CARRIED_EVIDENCE observations, and evidence ages in rounds that did
not test it: positions past where the drafts stop, and every source during plain decoding. Neither
a deep position that once failed nor a run of plain decoding is then a state the policy cannot
leave (what prose teaches would otherwise hold a summary that follows it to short drafts or none).
Exactness does not depend on any of this: k is chosen from past rounds (and the
policy's own random draws) only, and every round is verified by the same rule.

Nested trees. Where a drafter's tree of budget b is its bigger tree's first b nodes (token
recycling's best-first growth, lookup-tree's budget-cut trie), a round of the bigger tree says what
each smaller one would have accepted (events.TreeRound.first: exactly, greedy; in distribution,
sampled), so it is evidence for every smaller budget too (CostModel.observe_smaller_trees): the
sizes of one drafter share one arm's exploration (each still measures its own draft cost once).
Likewise a greedy draft tree's likeliest path is the draft's greedy chain (events.TreeRound.as_chain),
so a round of the tree is a round of the draft-model chain too (CostModel.observe_chain): the two
model sources need not take turns to stay measured.

Free sources are measured every round. Prompt lookup, lookup-tree and token recycling draft
deterministically with no model pass, so each round the decoding loop asks them what they would have
drafted (a lookup, timed as part of choosing) and the policy judges its first token against the
round's first committed token (CostModel.observe_free: greedy, their own verdict; sampled, its
distribution). Their alpha_1, the Thompson-drawn position, then follows the text in every round,
plain ones included, whichever source drafts; deeper positions learn from their own rounds. Nor do
they need a measuring round: a lookup costs next to nothing beside a target pass, so a free source is
priced at no draft cost until its own rounds time it, and a fresh process measures only its model
sources (token recycling's eight trees cost a cold start eight rounds, one each, before this).
"""
from __future__ import annotations

import bisect
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Protocol, Sequence

from .confidence import Calibration, StopRule, TextShift, shifted
from .sources import Source, drafter_of
from .events import RoundEvent, TreeRound

if TYPE_CHECKING:
    from .drafters.base import Draft

CATCH_UP_LIMIT = 8  # committed tokens a draft may read first and still count as a steady round
# Observations of a source's acceptance a new request starts from (CostModel.start_request): enough to
# draft on at once, few enough that the new text's own rounds outweigh them within a handful of rounds.
# 4, against 8: 1.007x cold, 1.033x warm (docs/bench-auto/carried_four_ab.py); in an answer of 11 to 16
# tokens the new text's first rounds must outweigh the prior, or the earlier answers choose its source.
# (16 was tried: 1.086x cold, 1.008x warm in one process, docs/bench-auto/carried_evidence_ab.py, but
# the Spec-Bench sample with saved costs read auto 1.88x against 1.95x at 8: docs/spec-bench/notes.md.)
CARRIED_EVIDENCE = 4.0
# Observations a free source's positions past the first carry into a new request (CostModel.start_request):
# the prior's weight, so its first own round on the new text counts as much as all it showed before.
CARRIED_FREE_DEPTH = 2.0
# Observations of a model source's acceptance by confidence a new request starts from: the calibration
# maps the draft's own confidence, which follows the new text, to acceptance, so it carries over more.
CARRIED_CALIBRATION = 32.0
# A free source's or a model tree's alpha_1 checked against its own rounds (CostModel.observe_yield):
# the promised first tokens the ratio is shrunk with, and the decay of both sums each own round.
YIELD_PRIOR = 2.0
YIELD_DECAY = 0.9

POLICIES = {
    "fixed": "draft k tokens every round",
    "heuristic": "transformers' schedule: k + 2 after a fully accepted round, k - 1 after a rejection",
    "cost": "pick k each round to maximise expected tokens per second, from measured alpha by position, "
            "draft cost and verify cost; k = 0 (plain decoding) when speculation does not pay",
}


@dataclass(frozen=True)
class Choice:
    k: int
    source: str  # which of the drafter's sources drafts (k = 0: none does)
    gain: float | None = None  # expected tokens/s of this choice over plain decoding's (cost policy only)
    reason: str = ""
    stop: StopRule | None = None  # ends a model draft before k once one more token would not pay


# A drafter with nothing to offer this round (the mixed drafter where the context does not repeat and
# token recycling's table has no row for the last token): a plain step, whatever the policy.
NOTHING_TO_DRAFT = Choice(0, "", None, "plain decoding: no source has a draft here")


class FixedPolicy:
    """k every round, from the drafter's first source (a hybrid lists prompt lookup first when it
    has a match: it costs nothing)."""

    name = "fixed"

    def __init__(self, k: int):
        self.k = k

    def choose(self, sources: Sequence[str]) -> Choice:
        return Choice(self.k, sources[0]) if sources else NOTHING_TO_DRAFT

    def observe(self, round: RoundEvent, source: str) -> None:
        pass


class HeuristicPolicy:
    """transformers' 'heuristic' num_assistant_tokens schedule, within [1, k_max]."""

    name = "heuristic"

    def __init__(self, k: int, k_max: int):
        self.k, self.k_max = k, k_max

    def choose(self, sources: Sequence[str]) -> Choice:
        return Choice(self.k, sources[0]) if sources else NOTHING_TO_DRAFT

    def observe(self, round: RoundEvent, source: str) -> None:
        if round.drafted:
            full = round.accepted == round.tested_length  # a tree: its path reached a leaf
            self.k = min(self.k + 2, self.k_max) if full else max(1, self.k - 1)


class Decayed:
    """An exponentially decayed mean: old evidence fades, so a prompt that turns from prose to code
    is followed within a few rounds."""

    def __init__(self, decay: float):
        self.decay, self.weight, self.total = decay, 0.0, 0.0

    def add(self, value: float, weight: float = 1.0) -> None:
        self.total = self.total * self.decay + value * weight
        self.weight = self.weight * self.decay + weight

    @property
    def mean(self) -> float | None:
        return self.total / self.weight if self.weight > 1e-9 else None

    def age(self) -> None:
        """One round passes without an observation: what is known fades as if one had been added."""
        self.total, self.weight = self.total * self.decay, self.weight * self.decay

    def cap(self, weight: float) -> None:
        """Keep the mean, with at most `weight` observations behind it."""
        if self.weight > weight:
            self.total, self.weight = self.total * weight / self.weight, weight

    def to_json(self) -> list[float]:
        return [self.weight, self.total]

    @classmethod
    def from_json(cls, data: list[float], decay: float) -> "Decayed":
        decayed = cls(decay)
        decayed.weight, decayed.total = float(data[0]), float(data[1])
        return decayed


@dataclass
class SourceCosts:
    """What one drafter source has shown: seconds per drafted token and acceptance by position."""

    decay: float
    draft: Decayed = None  # type: ignore[assignment]
    kept: list[Decayed] = field(default_factory=list)  # per position: decayed share of tested kept
    width: Decayed = None  # type: ignore[assignment]  # tokens in its rounds' target passes (trees)
    calibration: Calibration = field(default_factory=Calibration)  # acceptance by draft confidence
    after: Calibration = field(default_factory=Calibration)  # acceptance by the confidence before it
    text: TextShift = field(default_factory=TextShift)  # this request's offset from the calibration
    request_depth: int = 0  # the deepest position tested on this request's text (start_request resets it)

    def __post_init__(self) -> None:
        self.draft, self.width = Decayed(self.decay), Decayed(self.decay)

    @property
    def tested_depth(self) -> int:
        """The deepest position any round of this source has tested."""
        return len(self.kept)

    def alpha(self, position: int, prior: tuple[float, float] | None = None) -> float | None:
        """P(position kept | all before kept), positions from 1; None when never tested. With a
        prior (mean, weight), the evidence is shrunk towards it as a Beta prior would: one lucky
        round must not promise k = 16."""
        if position > len(self.kept):
            return None
        kept = self.kept[position - 1]
        if prior is None:
            return kept.mean
        mean, weight = prior
        return (kept.total + mean * weight) / (kept.weight + weight)

    def draw_alpha(self, position: int, prior: tuple[float, float], rng: random.Random) -> float:
        """A draw from the Beta posterior of alpha at `position` (Thompson sampling): the evidence as
        kept / tested counts on top of the prior's (mean, weight). Thin evidence draws widely, thick
        evidence close to its mean, a position never tested from the prior alone."""
        kept = self.kept[position - 1] if position <= len(self.kept) else Decayed(self.decay)
        mean, weight = prior
        hits, misses = kept.total + mean * weight, kept.weight - kept.total + (1 - mean) * weight
        if hits <= 0 or misses <= 0:  # no prior and all one way (or nothing at all): a point
            return hits / (hits + misses) if hits + misses > 0 else mean
        return rng.betavariate(hits, misses)

    def age(self, start: int = 0) -> None:
        """A round in which this source was not tested (from position start + 1 on): its acceptance
        evidence fades (Decayed.age), so the longer it sits out, the wider its posterior, and the
        likelier a Thompson draw tries it again."""
        for kept in self.kept[start:]:
            kept.age()

    def observe_first(self, kept: bool) -> None:
        """Position 1 alone was tested (a counterfactual round, CostModel.observe); deeper positions
        neither learn nor age."""
        if not self.kept:
            self.kept.append(Decayed(self.decay))
        self.kept[0].add(1.0 if kept else 0.0)
        self.request_depth = max(self.request_depth, 1)

    def to_json(self) -> dict:
        return {"draft": self.draft.to_json(), "kept": [k.to_json() for k in self.kept],
                "width": self.width.to_json(), "calibration": self.calibration.to_json(),
                "after": self.after.to_json()}

    @classmethod
    def from_json(cls, data: dict, decay: float) -> "SourceCosts":
        costs = cls(decay)
        costs.draft, costs.width = Decayed.from_json(data["draft"], decay), Decayed.from_json(data["width"], decay)
        costs.kept = [Decayed.from_json(k, decay) for k in data["kept"]]
        costs.calibration = Calibration.from_json(data["calibration"])
        if "after" in data:  # (files saved before it learn it afresh)
            costs.after = Calibration.from_json(data["after"])
        return costs

    def observe(self, depth: int, accepted: int, pass_seconds: float | None) -> None:
        """depth: how deep the round tested, positions 1..depth (CostModel.asked_depth); pass_seconds:
        the draft's seconds per pass (per token for a chain); None: acceptance only (the round's
        timing is not to be learned from)."""
        if pass_seconds is not None:
            self.draft.add(pass_seconds)
        # Position i was tested when every position before it was kept: i = 1..accepted + 1.
        tested = min(depth, accepted + 1)
        self.request_depth = max(self.request_depth, tested)
        for i in range(1, tested + 1):
            while len(self.kept) < i:
                self.kept.append(Decayed(self.decay))
            self.kept[i - 1].add(1.0 if i <= accepted else 0.0)
        # Deeper positions age with the rounds even untested. A draft stopped at depth j because
        # position j + 1 once did badly (on other text, say) would otherwise never test it again and
        # never learn it now pays; aged, its estimate slides towards the position above it
        # (expected_tokens_upto shrinks each alpha_j towards alpha_{j-1}) and gets retried.
        if depth:
            for kept in self.kept[tested:]:
                kept.age()

    def start_request(self, evidence: float, calibration: float = CARRIED_CALIBRATION,
                      deep: float | None = None) -> None:
        """A new request is new text: keep each estimate, with at most `evidence` observations
        behind it (positions past the first at most `deep`, where given), so this text's rounds
        outweigh another's within a few rounds (the decay alone would take ~1 / (1 - decay) of
        them). The calibration keeps up to `calibration` (its decay holds ~33): acceptance by
        confidence is the pair's, the confidence follows the text."""
        for position, kept in enumerate(self.kept, start=1):
            kept.cap(evidence if deep is None or position == 1 else min(evidence, deep))
        self.width.cap(evidence)
        self.calibration.cap(calibration)
        self.after.cap(calibration)
        self.request_depth = 0
        self.text.reset()

    def observe_confidences(self, confidences: Sequence[float], accepted: int, prior: float) -> None:
        """A model chain's drafted confidences and how many were accepted: acceptance by confidence
        (calibration), and by the confidence before (after: position i + 1 of the round is the i-th
        position of confidences[:-1], tested where i <= accepted, kept where i < accepted); and this
        text's offset from what the calibration predicted for its tested positions before the round
        (confidence.TextShift; prior: the source's alpha_1, as the stop rule reads a(c))."""
        self.text.observe([self.calibration.acceptance(c, prior) for c in confidences[: accepted + 1]], accepted)
        self.calibration.observe(confidences, accepted)
        self.after.observe(confidences[:-1], accepted - 1)


@dataclass
class YieldCheck:
    """This request's own rounds of a checked drafter (CostModel.yield_checked): how many kept their
    first token, and how many its alpha_1 promised when it was chosen (CostModel.observe_yield),
    both decayed by YIELD_DECAY."""

    kept: float = 0.0
    promised: float = 0.0

    def observe(self, kept: bool, promised: float) -> None:
        self.kept = YIELD_DECAY * self.kept + kept
        self.promised = YIELD_DECAY * self.promised + promised

    def ratio(self, prior: float = YIELD_PRIOR) -> float:
        """First tokens kept over those promised, shrunk towards 1 with `prior` promised."""
        return (self.kept + prior) / (self.promised + prior)


class CostModel:
    """Online costs of one pair on one device: target passes by width, and each source's draft cost
    and acceptance. Round 0 carries both models' prefill and the first pass at each width carries
    one-time costs (kernel selection, allocator growth), so neither is learned from."""

    PASS_PRIOR = 3.0  # passes a warm-up or interpolated pass time counts as (learn_pass)
    # Observations a saved draft cost, scaled to a machine that runs slower or faster, counts as
    # (restore): enough to price the source at once, so it takes no measuring round (a fresh draft
    # cost cost the Qwen pair's draft model two rounds at k = 4 and the draft tree one on a RAG
    # answer of three rounds); little enough that its first real round halves the guess's say.
    SCALED_DRAFT_WEIGHT = 1.0
    OUTLIER = 1.5  # the most one pass counts for, as a multiple of the estimate so far
    OFFERED_DEPTH = True  # a tree or lookup tested as deep as asked (asked_depth)
    YIELD_CHECKED = True  # a free source's alpha_1 scaled by what its drafter's rounds kept (observe_yield)
    YIELD_CHECKED_TREES = True  # a model tree's too (observe_yield)
    YIELD_SHARED = True  # one check per drafter, over all its cases and budgets (yield_check)
    OPENING_EVIDENCE = False  # round 0's acceptance learned as this text's (observe: why not)

    def __init__(self, decay: float = 0.9, prior_alpha: float = 0.5, prior_weight: float = 2.0):
        self.decay, self.prior_alpha, self.prior_weight = decay, prior_alpha, prior_weight
        self.verify: dict[int, Decayed] = {}  # tokens in the target pass -> seconds
        self.seen_widths: set[int] = set()
        self.sources: dict[str, SourceCosts] = {}
        self.overhead = Decayed(decay)  # seconds per round spent outside the models (choosing k)
        self.observed: set[str] = set()  # the sources the last round was evidence for (once each)
        self.free: set[str] = set()  # sources the loop has asked for free drafts (observe_free): a lookup each
        # (and, restored, those an earlier process asked)
        self.yields: dict[str, YieldCheck] = {}  # this request's checks (yield_check), by drafter

    def is_free(self, source: str) -> bool:
        """Whether source is drafted by a free drafter: one the loop has asked for a free draft, in any
        case or budget (its smaller trees and its other case cost no model pass either; counted only
        by name, token recycling's three smaller trees and its table case each took a measuring
        round in a fresh process)."""
        drafter = drafter_of(source)
        return any(drafter_of(name) == drafter for name in self.free)

    def source(self, name: str) -> SourceCosts:
        costs = self.sources.get(name)
        if costs is None:  # (not setdefault: a policy asks this dozens of times a round, a default each time)
            costs = self.sources[str(name)] = SourceCosts(self.decay)  # plain str keys: they go to JSON
        return costs

    def start_request(self, evidence: float = CARRIED_EVIDENCE, calibration: float = CARRIED_CALIBRATION) -> None:
        """Carry acceptance into a new request as a prior, not as a verdict (SourceCosts.start_request).
        Draft costs, pass times and the overhead belong to the device and carry over whole.

        A free source's positions past the first carry at most CARRIED_FREE_DEPTH observations. Its
        first position is judged every round of the new text whoever drafts (observe_free); its
        deeper ones learn only from its own rounds, which it gets where its first looked good, on
        text it could copy, so they say how far that text copied. Carried whole, they priced the
        lookups on the next text as if it copied as far: on the Qwen pair, a maths answer after a
        question-answering one drafted prompt lookup and token recycling in 12 of its first 17
        rounds, expected at 1.7-2.7x plain decoding, and they kept 0.5 tokens a round of 4 drafted."""
        for name, costs in self.sources.items():
            costs.start_request(evidence, calibration, CARRIED_FREE_DEPTH if self.is_free(name) else None)
        self.yields = {}  # a new text's rounds start unchecked

    def sharing_passes(self) -> "CostModel":
        """A cost model for another setup of the same pair: its own sources' evidence, this one's
        target pass times and per-round overhead (the same target on the same device)."""
        other = CostModel(self.decay, self.prior_alpha, self.prior_weight)
        other.verify, other.seen_widths, other.overhead = self.verify, self.seen_widths, self.overhead
        return other

    def to_json(self) -> dict:
        """What this model has learned, as plain JSON (persisted per pair and device by the callers)."""
        return {"decay": self.decay, "verify": {str(n): d.to_json() for n, d in self.verify.items()},
                "seen_widths": sorted(self.seen_widths), "overhead": self.overhead.to_json(),
                "sources": {name: costs.to_json() for name, costs in self.sources.items()},
                "free": sorted(self.free)}

    def restore(self, data: dict, timings: bool = True, draft_scale: float | None = None) -> None:
        """Take over what to_json saved: acceptance, draft costs and overhead. Pass times are taken
        only by a model that has seeded no warm-up table of its own, not even at widths the table
        lacks: the table is fresher, and a saved width between its widths keeps the speed of the
        last hour that width was used in. This host's level drifts for minutes at a time
        (docs/bench-auto/pass_widths.txt: a step at 117 ms in one sweep of every width, 96 ms 26
        minutes later), and the width a policy drafts for most follows it while the rest keep older
        hours': after a Spec-Bench run the Qwen pair's file held v(4) at 193 ms and v(5) at 124 ms,
        beside that run's warm-up table at 165 and 153 ms for v(3) and v(5), where a sweep reads
        v(4) just under v(5). Read off the fresh table's line instead, such a width is learned anew
        by this process's rounds.
        timings=False takes the acceptance only (by position, by confidence, trees' widths): what
        the pair and the text decide, not the machine, for a process whose verify-cost table says
        the machine or its load has changed; its pass times are then its own table's, and its draft
        costs are measured anew, or, given draft_scale (this machine's step over the saved one's),
        start as the saved ones scaled by it, worth one observation (SCALED_DRAFT_WEIGHT)."""
        decay = self.decay
        if timings:
            if not self.verify:  # (in place: other setups share this table; a seeded one stands alone)
                for width, value in data["verify"].items():
                    self.verify[int(width)] = Decayed.from_json(value, decay)
            self.seen_widths |= set(data["seen_widths"])
            saved = Decayed.from_json(data["overhead"], decay)  # in place: other setups share this object
            self.overhead.weight, self.overhead.total = saved.weight, saved.total
        for name, saved_costs in data["sources"].items():
            costs = self.sources[name] = SourceCosts.from_json(saved_costs, decay)
            if not timings:
                costs.draft = scaled(costs.draft, draft_scale, self.SCALED_DRAFT_WEIGHT)
        # Which sources are free, so that a new process's first round already prices them as free and
        # restarts their reach (CostPolicy.depth_reach). Unsaved, its first round read prompt lookup's
        # carried reach: on the Qwen pair, a retrieval answer's first round drafted a lookup of 13
        # tokens on an alpha_1 of 0.37 (the deep positions learned on a summary that copied).
        self.free |= set(data.get("free", ()))

    def observe(self, round: RoundEvent, source: str, free: Mapping[str, "Draft"] | None = None) -> None:
        """What the round showed: the drafting source's acceptance and cost (and its smaller nested
        trees'), each free source's first position from what it would have drafted (free, judged
        against round.tokens: observe_free), the pass time of its width, the per-round overhead.

        Round 0 teaches nothing (unless OPENING_EVIDENCE): its timings carry the prefills, and its
        acceptance says how a draft opens an answer, which it does worse than it goes on. The Qwen
        pair's 0.5B draft opens unlike the target on 7 of the sample's 26 first turns
        (docs/bench-auto/first_tokens.py), and at k = 4 keeps nothing of round 0 on 29-36% of the
        turns against 9-21% of later rounds. Learned as the text's, one such miss on a maths answer
        took the draft model's alpha_1 from 0.57 to 0.48 under the four carried observations, and the
        free sources, whose first tokens read 0.6-0.75 on that text, drafted 15 of the next 20 rounds
        at 1.2x plain decoding, where the draft model, once back, made 2.6x. Not learning it: 1.031x
        cold, 1.012x warm (docs/bench-auto/opening_ab.py; docs/spec-bench/notes.md)."""
        prefill = round.round == 0
        self.observed = set()
        if prefill and not self.OPENING_EVIDENCE:
            # How an answer opens is not how it goes on (the docstring). Which sources are free is no
            # verdict: known from round 0, none takes a measuring round (is_free).
            self.free.update(map(str, free or ()))
            return
        # draft_seconds includes the policy's own choosing; the draft is charged only its proposing,
        # and the choosing, paid by every round alike, is kept apart as an overhead per round.
        proposing = round.draft_seconds - round.policy_seconds
        # A draft model that first reads a long stretch it sat out (or the whole prompt) pays a
        # prefill, not its cost per token: learning c from it would price the model out for good.
        steady = not prefill and round.catch_up <= CATCH_UP_LIMIT
        if round.drafted:  # what a source shows (a plain round, chosen or with nothing to draft, shows none)
            costs = self.source(source)
            self.observe_yield(round, source)  # (before this round's evidence moves E(k))
            alpha_1 = self.position_alphas(source, 1)[0]  # (what the stop rule read a(c) with)
            chain = chain_verdict(round, source)
            depth, accepted = chain or (self.asked_depth(round, source), round.accepted)
            costs.observe(depth, accepted, proposing / round.draft_length if steady else None)
            if round.tree is None or chain is not None:
                costs.observe_confidences(round.confidences, accepted, alpha_1)
            costs.width.add(len(round.drafted) + 1)
            self.observed.add(str(source))
            if round.tree is not None and round.tree.nested:
                self.observe_smaller_trees(round.tree, Source(source), round.k)
            if round.tree is not None and round.tree.chain is not None:
                self.observe_chain(round.tree)
        if free:
            self.observe_free(free, round.tokens)
        if round.k == 0:  # a plain round: time passes for every source's evidence (a free one's
            for name, other in self.sources.items():  # first position just learned instead)
                other.age(1 if name in self.observed else 0)
        if prefill:  # (OPENING_EVIDENCE only)
            return
        self.overhead.add(round.policy_seconds)
        width = len(round.drafted) + 1
        if width in self.seen_widths:
            self.learn_pass(width, round.verify_seconds)
        self.seen_widths.add(width)

    def observe_yield(self, round: RoundEvent, source: str) -> None:
        """A free source's or a model tree's round (yield_checked): the alpha_1 it was chosen on (its
        mean, which this round has not yet moved) against whether it kept its first token, for
        its YieldCheck (yield_check). (For a model tree, yield_checked says why.)

        A free source's alpha_1 is judged every round (observe_free), a running mean over the last
        ten or so, and the policy drafts from it in the rounds where that mean is high: its rounds
        are chosen on its luckiest estimates, and keep less than they promised (the winner's curse:
        Smith and Winkler, "The Optimizer's Curse", Management Science 2006). On the Qwen pair's
        Spec-Bench sample, prompt lookup priced above the draft model on prose kept 1.0-1.55 tokens
        a round (its first token at most half the time) over 5-14 rounds of an answer, where the
        draft model made 2.4-3.8 (docs/bench-auto/round_trace.py). Its own rounds are the check the
        running mean lacks: alpha_1 is scaled by what they kept over what they were promised
        (CostPolicy.rates), so a source that
        keeps falling short on this text stops being chosen, one that keeps more (text that copies)
        is chosen more, and a new request starts unscaled. Position 1 only: deeper positions learn
        from its own rounds alone (asked_depth), so their estimates carry no such selection, and a
        ratio over whole rounds charged a lookup asked 16 deep for its deep positions' uncertainty
        (on SmolLM2 alone it handed copying text from prompt lookup to token recycling's shallower
        trees: 0.976 cold in the A/B, docs/bench-auto/yield_check_ab.smollm2.txt)."""
        if self.yield_checked(source):
            self.yield_check(source).observe(round.accepted > 0, self.position_alphas(source, 1)[0])

    def yield_check(self, source: str) -> YieldCheck:
        """The check source's rounds on this request feed and its price reads (observe_yield): its
        drafter's, shared by every case and budget of it (YIELD_SHARED), or its own.

        Shared, because the curse is the drafter's: each of its sources is chosen on a running mean
        carried from the text before, so each falls short alike. Checked one by one, token
        recycling's eight (four budgets, two cases) each started this request's text unscaled, and
        the policy went through them in turn: on the Qwen pair a 16-token translation after a
        humanities answer drafted recycling:4, recycling/table:8, recycling:4, recycling:4,
        recycling/table:4, recycling:2 and recycling:4, all kept nothing (the Spec-Bench sample's
        other half, docs/bench-auto/bench_trace_016.txt; in the bench's own run 3.4 s against
        transformers' 2.9 s). (And a bigger tree's miss is a miss of every budget nested in it:
        their first tokens are among its own.)"""
        key = drafter_of(source) if self.YIELD_SHARED else str(source)
        check = self.yields.get(key)
        if check is None:
            check = self.yields[key] = YieldCheck()
        return check

    def yield_scale(self, source: str) -> float | None:
        """What source's alpha_1 is scaled by (YieldCheck.ratio): None where it is not checked
        (yield_checked) or its drafter's rounds have promised nothing yet on this request."""
        if not self.yield_checked(source):
            return None
        check = self.yield_check(source)
        return check.ratio() if check.promised else None

    def yield_checked(self, source: str) -> bool:
        """Whether source's alpha_1 is checked against its own rounds (observe_yield): a free source's
        (chosen on a running mean), and a model tree's (priced on its position alphas alone).

        A model chain's rounds are cut by its stop rule on this text's own confidences; a tree's are
        not (its budget is drafted whatever the draft's confidence), so until this request's rounds
        outweigh the CARRIED_EVIDENCE behind its alphas, a tree drafts on the text before. On the
        Qwen pair, sampled, a 16-token translation answer after a coding one drafted a 16-node draft
        tree in 8 of its 9 rounds, on the coding answer's alphas, and kept 0, 0, 2, 0, 0, 4, 0, 0 and
        1 tokens at about three plain steps a round: 0.57x standard decoding (docs/spec-bench/notes.md).
        Checked, three such rounds hand the tree's rounds back (test_policy). Over the 21-turn
        session it reads level (docs/bench-auto/tree_yield_check_ab.txt: 0.995 cold / 1.011 warm
        greedy, 1.019 / 1.016 sampled); a model chain checked too read 1.018 on twenty sampled
        translations (sampled_translation_ab.chains.txt) and was left out: its stop rule already
        reads this text."""
        if self.is_free(source):
            return self.YIELD_CHECKED
        return self.YIELD_CHECKED_TREES and tree_budget(source) is not None

    def asked_depth(self, round: RoundEvent, source: str) -> int:
        """How deep the round tested its source: the positions a miss there counts against.

        A model chain: the tokens it drafted; it stopped by choice (its stop rule or k), so the
        positions past its last are untested. A tree or a free drafter's chain (a lookup): the depth
        the round asked for, k, since a position it offered nothing at (a lookup's match ran out, a
        tree's budget went to width, or a budget below k) is one it could not have kept. With L
        the accepted path's length, position i is then tested in every round asked at least i deep
        where L >= i - 1, and alpha_i = P(L >= i | L >= i - 1), so E(k) = 1 + P(L >= 1) + ... +
        P(L >= k) is what a round asked k deep yields: exactly for rounds asked one k, and for a
        lookup chain at any k (its draft at a smaller k is its draft's first tokens); a tree asked
        deeper grows narrower near the root, so rounds asked different k pool slightly different
        trees, as its alpha_1 also pools the free rounds (observe_free).
        (Tested only to the depth it drew, a tree's or a lookup's deep positions learned only from
        the rounds that reached them, rounds on text it could copy, and E(k) counted every position
        up to k as if each round reached it: token recycling's 4-node tree, its third position read
        0.95 over the rounds grown deep enough to test it, was expected to yield 3.4 tokens a round
        on a maths answer where it made 1.6, and took 12 of its rounds from the draft model at 4.0.
        The same held for a 16-node draft tree grown 16 deep, whose branches mostly end early:
        counted untested, its deep positions read 1.0 and it was expected to yield 9 tokens a round
        where it made 6.) A free source is known as free once the loop has asked it for a free draft
        (is_free), or from saved costs: a fresh process's first round or two of it count as a chain's."""
        if round.tree is not None or self.is_free(source):
            return self.tested_to(round.k, round.draft_length)
        return round.draft_length

    def tested_to(self, k: int, drawn: int) -> int:
        """A tree or lookup asked k deep that drew `drawn` deep is tested to k (asked_depth), or only
        to what it drew where OFFERED_DEPTH is off (the A/B's other lane)."""
        return max(k, drawn) if self.OFFERED_DEPTH else drawn

    def observe_smaller_trees(self, tree: TreeRound, source: Source, k: int) -> None:
        """A nested tree's round is also a round of each smaller budget of its drafter that this
        model knows (TreeRound.first: the same verdict in distribution): their acceptance and width
        learn from it as from their own rounds, so the sizes of one tree drafter share one arm's
        exploration (token recycling offers four). Their draft cost is learned only from their own
        rounds (growing a smaller tree costs a little less): each still has one measuring round.
        Each is tested as deep as the round asked, k (asked_depth)."""
        for name, costs in self.sources.items():
            if name not in self.observed and _smaller_nested(name, source, None):
                within = tree.first(Source(name).budget)
                costs.observe(self.tested_to(k, within.depth), len(within.path), None)
                costs.width.add(len(within.tokens) + 1)
                self.observed.add(name)

    def observe_chain(self, tree: TreeRound) -> None:
        """A greedy draft tree's round is also a round of the chain of the same model, to the depth of
        the tree's likeliest path (TreeRound.as_chain: exactly its verdict): the chain's acceptance by
        position and by confidence learn from it as from its own rounds. Without this, a chain that
        sat out while its tree drafted kept the verdict of the last text it drafted on (the Qwen pair
        on the Spec-Bench sample: alpha_1 read 0.45, where the draft model at k = 4 made 3.8 tokens a
        round on a reasoning answer), and the dearer tree drafted on there (0.40 s a round for 5.4
        tokens, where the chain took 0.21 s for 3.8). Its draft cost learns only from its own rounds."""
        if tree.chain in self.observed:
            return
        depth, accepted, confidences = tree.as_chain()
        if depth:
            costs = self.source(tree.chain)
            alpha_1 = self.position_alphas(tree.chain, 1)[0]
            costs.observe(depth, accepted, None)
            costs.observe_confidences(confidences, accepted, alpha_1)
            self.observed.add(tree.chain)

    def observe_free(self, drafts: Mapping[str, "Draft"], committed: Sequence[int]) -> None:
        """What free sources (drafters.base.DrafterBase) would have drafted this round, judged against
        the tokens it committed (the accepted ones and the target's own): whether each would have
        kept its first token. A free draft is deterministic given the past and q is one-hot on it,
        so its first token is kept exactly when it is the target's first token: greedy, the
        committed first token is the target's argmax, so this is the verdict its own round would
        have had; sampled, it is an exact draw from the target (verify.py), so the verdict has its
        own round's distribution. Position 1 only: every round commits a first token, but a second
        only where the drafting source's first was kept, so deeper positions would be measured on
        the text where that source does well (easier text) and read high; they learn from the free
        source's own rounds. A tree keeps its first token when one of the root's children is it,
        and a nested tree stands for its smaller budgets (their root children among its first b
        nodes). Each source learns once a round: one this round drafted, or stood for as a nested
        tree's first nodes, keeps that evidence. Width and cost learn only from a source's own
        rounds (a free draft is asked at a depth of the loop's choosing)."""
        first = committed[0]
        self.free.update(map(str, drafts))
        for name, draft in drafts.items():
            if not draft.tokens:
                continue
            sizes = [name] + [other for other in self.sources if _smaller_nested(other, name, draft)]
            for size in sizes:
                if size in self.observed:
                    continue
                budget = Source(size).budget if size != name else None
                roots = [token for node, (token, parent) in enumerate(_nodes(draft))
                         if parent < 0 and (budget is None or node < budget)]
                self.source(size).observe_first(first in roots)
                self.observed.add(size)

    def learn_pass(self, width: int, seconds: float) -> None:
        """One timed target pass over width tokens. A width never timed starts from what the widths
        around it say (pass_seconds), worth PASS_PRIOR passes, and no pass counts for more than
        OUTLIER times the estimate so far: on a shared CPU one pass in a few dozen runs 2-3x long (a
        neighbour's burst, a page fault), and a width timed by only such a pass priced every draft
        that would use it out of reach (on the Qwen pair v(4) read 250 ms between v(3) and v(5) at
        150 ms, and the stop rule, seeing one more token cost 100 ms, ended every model draft at 2).
        A lasting change still shows: each pass moves the estimate by up to OUTLIER."""
        known = self.verify.get(width)
        if known is None:
            guess = self.pass_seconds(width)
            known = self.verify[width] = Decayed(self.decay)
            if guess is not None:
                known.add(guess, self.PASS_PRIOR)
        if known.mean is not None:
            seconds = min(seconds, self.OUTLIER * known.mean)
        known.add(seconds)

    def seed_verify(self, table) -> None:
        """Start v(n) from a table measured at warm-up (verify_costs.VerifyCosts): each width enters as
        PASS_PRIOR passes, which the rounds' own then outweigh as they decay. Seeded widths count as
        measured, so the trust region starts at the table's widest rather than at nothing."""
        for width, seconds in zip(table.widths, table.seconds):
            if width not in self.verify:
                self.verify[width] = Decayed(self.decay)
                self.verify[width].add(seconds, self.PASS_PRIOR)
            self.seen_widths.add(width)

    def pass_seconds(self, width: float) -> float | None:
        """v(width): measured; else read off the line between the measured widths around it, or
        past the widest, the widest's."""
        return self.pass_seconds_many([width])[0]

    def pass_seconds_many(self, widths: Sequence[float]) -> list[float | None]:
        """v(width) for each width, the measured table sorted once (a policy prices every k of
        every source each round: on a small model that bookkeeping is a share of a step)."""
        known = sorted((n, d.mean) for n, d in self.verify.items() if d.mean is not None)
        return [interpolate(known, width) for width in widths]

    def expected_tokens(self, source: str, k: int) -> float:
        return self.expected_tokens_upto(source, k)[k]

    def expected_tokens_upto(self, source: str, k_max: int, alpha_1: float | None = None) -> list[float]:
        """[E(0), ..., E(k_max)], E(k) = 1 + sum_{i<=k} prod_{j<=i} alpha_j, in one pass.

        Each alpha_j is shrunk towards the position before it (towards prior_alpha for the first):
        deep positions are tested least, and a draft that agrees at position 1 mostly agrees
        further on, so thin evidence there borrows from the better-measured position above it. An
        untested position takes the one above's. alpha_1, given, replaces the first position's
        estimate (the policy's Thompson draw); deeper alphas are conditional on the ones above and
        stay at their shrunk means."""
        out, survive = [1.0], 1.0
        for i, alpha in enumerate(self.position_alphas(source, k_max), start=1):
            survive *= alpha_1 if i == 1 and alpha_1 is not None else alpha
            out.append(out[-1] + survive)
        return out

    def position_alphas(self, source: str, depth: int) -> list[float]:
        """[alpha_1, ..., alpha_depth] as E(k) reads them: each shrunk towards the one above it
        (alpha_1 towards prior_alpha), an untested one the one above's. The stop rule reads the same
        chain, so a draft that has never gone past depth 5 expects position 6 to do as position 5
        does, not as an average first token: shrunk towards alpha_1 instead, the deep positions of a
        draft that agrees ~95% past its first token read ~0.72 and every draft stopped at 5, which
        then never tested them (the Qwen pair, greedy, 4.5 tokens a pass against transformers' 7.6)."""
        costs, alphas, prior = self.source(source), [], self.prior_alpha
        for i in range(1, depth + 1):
            if i <= len(costs.kept):
                prior = costs.alpha(i, (prior, self.prior_weight))
            alphas.append(prior)
        return alphas

    def draw_alpha_1(self, source: str, rng: random.Random) -> float:
        """A Thompson draw of the source's alpha_1 (SourceCosts.draw_alpha)."""
        return self.source(source).draw_alpha(1, (self.prior_alpha, self.prior_weight), rng)


def chain_verdict(round: RoundEvent, source: str) -> tuple[int, int] | None:
    """A model chain's round that added sibling leaves (its tree's chain is the source itself,
    StopRule.sibling): the chain's drafted tokens and how many of them the target kept, which is
    what the same chain verified without its siblings would have shown. The chain's nodes are the
    tree's first ones, each the child of the one before, and its leaves come after them, so the
    chain kept the accepted path's leading nodes 0, 1, 2, ...; a kept sibling ends that run where
    the chain's own token was rejected. None for any other round."""
    if round.tree is None or round.tree.chain != source:
        return None
    drafted = round.tree.depth
    kept = next((i for i, node in enumerate(round.tree.path) if node != i), len(round.tree.path))
    return drafted, min(kept, drafted)


def scaled(saved: Decayed, scale: float | None, weight: float) -> Decayed:
    """saved's mean times scale, worth at most weight observations; nothing known without a scale."""
    out = Decayed(saved.decay)
    if scale is not None and saved.mean is not None:
        out.add(saved.mean * scale, min(weight, saved.weight))
    return out


def _smaller_nested(name: str, bigger: str, draft: "Draft | None") -> bool:
    """Whether source `name` is a smaller budget of the same tree drafter in the same case as
    `bigger`, whose nested tree stands for it (draft: the bigger's draft, when it says whether it is nested)."""
    small, big = Source(name), Source(bigger)
    return (small.family == big.family and small.budget is not None and small.budget < (big.budget or 0)
            and (draft is None or draft.nested))


def _nodes(draft: "Draft") -> list[tuple[int, int]]:
    """(token, parent) of each node of a draft: a chain's node i is the child of node i - 1."""
    parents = draft.tree.parents if draft.tree is not None else range(-1, len(draft.tokens) - 1)
    return list(zip(draft.tokens, parents))


def interpolate(known: list[tuple[int, float]], width: float) -> float | None:
    """v(width) from the measured (width, seconds) pairs, sorted by width: see pass_seconds."""
    if not known:
        return None
    position = bisect.bisect_left(known, (width, float("-inf")))
    if position < len(known) and known[position][0] == width:
        return known[position][1]
    if 0 < position < len(known):  # between two measured widths: on the line joining them
        (n0, v0), (n1, v1) = known[position - 1], known[position]
        return v0 + (v1 - v0) * (width - n0) / (n1 - n0)
    if position == 0:  # narrower than any measured: no cheaper than the narrowest
        return known[0][1]
    # Wider than any measured: as the widest. Optimistic on purpose (on a CPU the step from 1 to 2
    # tokens can cost a whole decode step and the next ones little), so an unmeasured width gets
    # tried; the trust region keeps each try within 2 of what was measured.
    return known[-1][1]


class CostPolicy:
    """argmax over (source, k) of E(k) / T(k), k in [0, k_max], on a Thompson draw of each source's
    alpha_1.

    Exploration (Thompson sampling: Thompson 1933; Russo et al., "A Tutorial on Thompson Sampling",
    2018). Only the source drafted is tested (and each free source's first position:
    CostModel.observe_free), so a model source that is not drafted learns nothing more. Each round draws
    every source's alpha_1 from its Beta posterior and takes the best (source, k) for those draws, plain
    decoding when none beats it. Thin evidence draws widely, so a source is tried in proportion to the
    chance that it is the best; thick evidence draws near its mean, so a source shown to lose is rarely
    tried and a source shown to win is drafted round after round. Evidence ages while untested
    (SourceCosts.age), so no verdict is final: what prose taught gets retried on the code that follows.
    This replaced taking alpha_1 one standard error low plus probes at a backing-off rate (hope: one
    standard error high): on the Qwen pair a draft model whose first three rounds were unlucky (a
    conversation: 4 of 4, then 0, 0) was judged below plain decoding at once and the probes went to
    thinly measured free sources instead, so whole answers ran as plain decoding beside a draft
    accepted ~80% of the time (docs/auto-notes.md). Draws come from the policy's own seeded
    generator, never the sampler's.
    Draws are optimistic (draw_alpha_1): none below its posterior mean, since a low draw of the best
    source hands a round away and learns nothing about the rival that gets it. A free source takes its
    mean (FREE_AT_MEAN), scaled by what its drafter's rounds on this request kept of what they
    promised (CostModel.observe_yield: the winner's curse of choosing on a running mean); so is a
    model tree's draw (CostModel.yield_checked: no stop rule reads this text's confidences for it).

    Reach. A source drafts at most twice as deep as its rounds have been tested (a tree: on this
    request's text), and at least MIN_REACH (geometric widening: each round that reaches its depth doubles what
    the next may try), and a target pass no wider than the verify-cost table (or, without one, the
    widest pass timed) + 2.

    Confidence. Once a model source has shown how its acceptance follows its own confidence
    (MIN_CALIBRATION tested positions), its rounds draft up to the reach and stop at the first
    token after which drafting on would not pay (confidence.StopRule); k is then a cap. The rule
    reads the pair's calibration through this request's offset from it (TEXT_SHIFT,
    confidence.TextShift): a text that copies keeps more at each confidence than the pair's average.
    Greedy, the same rule decides whether the drafted chain adds its second choice at its least sure
    position as a leaf, a tree verified in the same pass (SIBLINGS, StopRule.sibling); the round
    then teaches the chain what the chain alone would have shown (CostModel.observe)."""

    name = "cost"
    MIN_CALIBRATION = 8
    MIN_REACH = 4
    OPTIMISTIC = True  # draws no lower than the posterior mean (draw_alpha_1)
    FREE_AT_MEAN = True  # a free source's alpha_1 at its posterior mean, never drawn (draw_alpha_1)
    AFTER_LAST = True  # the stop rule expects the next token by the last one's confidence (StopRule.after)
    TEXT_SHIFT = True  # the stop rule reads acceptance through this text's offset (confidence.TextShift)
    SIBLINGS = True  # a greedy model chain adds its second choice as a leaf where it pays (StopRule.sibling)

    def __init__(self, k_max: int, costs: CostModel | None = None, seed: int = 0):
        self.k_max = k_max
        self.costs = costs or CostModel()
        self.rng = random.Random(seed)  # the Thompson draws' own: the sampler's stream is untouched

    def choose(self, sources: Sequence[str]) -> Choice:
        if not sources:
            return NOTHING_TO_DRAFT
        # 1. Learn before judging: each model source's draft cost, then the plain step's pass time. A
        #    free source needs no measuring round: its acceptance at position 1 is judged every round
        #    (observe_free) and its draft is a lookup, priced at nothing until its own rounds time it.
        unmeasured = [s for s in sources if self.costs.source(s).draft.mean is None and not self.costs.is_free(s)]
        if unmeasured:
            # A first draft as deep as the reach allows (MIN_REACH): it measures the cost per token
            # as one token would, and the acceptance at every position up to it. A one-token
            # measurement says nothing past position 1, and where a pass over 2 tokens costs 2 steps
            # (a CPU's default kernels) a 1-token draft never pays, so drafting was judged on the
            # prior alone and never tried. A rejection early wastes at most MIN_REACH - 1 draft tokens.
            source = unmeasured[0]
            k = min(self.MIN_REACH, self.deepest(source))
            return Choice(k, source, None, f"measuring {source}'s draft cost and acceptance to k={k}")
        plain = self.costs.pass_seconds(1) if 1 in self.costs.verify else None
        if plain is None:
            return Choice(0, sources[0], None, "measuring a plain decode step")
        # 2. Draw each source's alpha_1 from its posterior: the best draft for these draws.
        reach = self.trust_region(sources)
        plain_round = plain + (self.costs.overhead.mean or 0.0)  # plain decoding: 1 token per plain_round
        draws = {s: self.draw_alpha_1(s) for s in sources}
        source, k, drawn_gain = self.best(sources, reach, plain_round, draws)
        # 3. Plain decoding where no draw beats it; the reasons quote the evidence at face value.
        _, _, gain = self.best([source], reach, plain_round)
        if drawn_gain <= 1.0:
            return Choice(0, source, 1.0, f"plain decoding: the best draft ({source}, k={k}) drew "
                                          f"{drawn_gain:.2f}x (evidence: {gain:.2f}x)")
        # 4. Draft: with a stop rule where the source's confidence is calibrated, k becomes a cap.
        return self.draft_choice(source, k, drawn_gain, reach,
                                 f"drew {drawn_gain:.2f}x plain decoding (evidence: {gain:.2f}x)")

    def draw_alpha_1(self, source: str) -> float:
        """alpha_1 for this round's choice: a Thompson draw, no lower than the posterior mean where
        OPTIMISTIC (optimistic Bayesian sampling, May et al., JMLR 2012). A draw below the mean
        explores nothing: it only makes the source that is best on the evidence look worse for a
        round, and hands the round to a rival (or to plain decoding, whose rate is known) without
        the rival's own upside being any likelier. The evidence caps at about ten observations
        (decay 0.9, CARRIED_EVIDENCE), so the posteriors never narrow, and plain Thompson kept
        handing a share of rounds to sources a third slower on the evidence (the Qwen pair on a
        retrieval answer: a 16-node draft tree at 1.77x plain decoding over the draft model at
        2.55x). A rival is still tried in proportion to the chance its draw beats the best's mean.
        A free source (FREE_AT_MEAN) takes its mean: its alpha_1 is judged every round whoever
        drafts (CostModel.observe_free), so a draw of it explores nothing and only hands rounds to
        it by chance (the Qwen pair on a role-play answer: 30 of 66 rounds went to token recycling's
        trees at 1.4 tokens a pass beside the draft model's 2.5; interleaved A/B, neutral within the
        noise: docs/bench-auto/free_at_mean_ab.txt, 1.000 cold / 1.008 warm)."""
        mean = self.costs.position_alphas(source, 1)[0]
        if self.FREE_AT_MEAN and self.costs.is_free(source):
            return mean
        draw = self.costs.draw_alpha_1(source, self.rng)
        return max(draw, mean) if self.OPTIMISTIC else draw

    def draft_choice(self, source: str, k: int, gain: float, reach: int, why: str) -> Choice:
        """Draft k from source; a source whose confidence is calibrated drafts up to its reach instead
        and stops where drafting on would not pay (confidence.StopRule)."""
        cap = max(k, min(self.k_max, self.depth_reach(source), reach - 1))
        stop = self.stop_rule(source, cap)
        if stop is None:
            return Choice(k, source, gain, f"{source}, k={k}: {why}")
        return Choice(cap, source, gain, f"{source}, up to k={cap} while its confidence pays (best fixed k={k}: "
                                         f"{why})", stop)

    def trust_region(self, sources: Sequence[str]) -> int:
        """The widest target pass a choice may ask for: at most 2 beyond the widest timed (a seeded
        verify-cost table counts as timed), so an unmeasured width is explored a step at a time
        rather than bet on from an extrapolation. A tree's width is its budget + 1 whatever its
        depth, so the next budget up is allowed too."""
        widest = max(self.costs.seen_widths, default=1)
        budgets = [b for b in map(tree_budget, sources) if b is not None and b + 1 > widest + 2]
        return max(widest + 2, min(budgets, default=0) + 1)

    def depth_reach(self, source: str) -> int:
        """How deep a source may draft: twice the deepest position it has tested, and at least
        MIN_REACH (a pass over 5 tokens costs about one step on a GPU or the fast CPU engine).

        A tree counts only what this request's text has tested: it is drafted to its full depth
        whatever its tokens look like, so a new text must show its own depth first (a text that pays
        doubles the reach each round). Carried over, the depth a code answer reached let a
        translation's first rounds draft a 16-node draft tree 12 deep (0.3 s of draft passes, 3
        plain steps) and lose it at the first token, 3 rounds of 9 (the Qwen pair sampled: 0.56x
        plain decoding). So does a free chain (prompt lookup): its deep positions are learned only on
        text where its first tokens were kept, text that copies, and carried to text that does not,
        they priced every lookup as a lottery with a long payout. The Qwen pair, an extraction answer
        after a code answer: 13 lookups drafted 245 tokens and kept 5, in passes over up to 33 tokens
        that cost up to 2.1 plain steps, where a pass over 5 costs one. A model chain keeps
        what earlier text showed: its draft stops by its own confidence on this text
        (confidence.StopRule), and restarting it from MIN_REACH cost the copying answers (RAG,
        summaries) the long first drafts that pay."""
        costs = self.costs.source(source)
        this_text = tree_budget(source) is not None or self.costs.is_free(source)
        return max(self.MIN_REACH, 2 * (costs.request_depth if this_text else costs.tested_depth))

    def stop_rule(self, source: str, horizon: int) -> StopRule | None:
        """The source's stop rule up to horizon tokens, once its acceptance by confidence is measured."""
        costs = self.costs.source(source)
        # (A tolerance: a request's calibration capped by start_request at exactly MIN_CALIBRATION
        # observations may lose the last bit to rounding.)
        if tree_budget(source) is not None or costs.calibration.evidence < self.MIN_CALIBRATION - 1e-6:
            return None
        alphas = self.costs.position_alphas(source, max(1, costs.tested_depth))
        # v(1..horizon + 2), read off the table once: the rule asks for them after every drafted token
        # (and a chain with its sibling leaf reads one row more: StopRule.sibling).
        passes = tuple(self.costs.pass_seconds_many(range(1, horizon + 3)))
        # This text's offset from the pair's calibration (confidence.py, "This text"), on all it expects.
        delta = costs.text.delta if self.TEXT_SHIFT else 0.0
        after = None
        if self.AFTER_LAST and costs.after.evidence >= self.MIN_CALIBRATION:
            # (a_bar comes shifted from the position alphas below: back to the pair's, then shifted once)
            after = lambda c, a_bar: shifted(costs.after.acceptance(c, shifted(a_bar, -delta)), delta)  # noqa: E731
        return StopRule(lambda c: shifted(costs.calibration.acceptance(c, alphas[0]), delta),
                        tuple(shifted(a, delta) for a in alphas),
                        costs.draft.mean or 0.0, lambda n: passes[min(n, len(passes)) - 1],
                        self.costs.overhead.mean or 0.0, horizon, after, self.SIBLINGS)

    def best(self, sources: Sequence[str], reach: int, plain_round: float,
             alpha_1: dict[str, float] | None = None) -> tuple[str, int, float]:
        """The (source, k in 1..k_max) with the most expected tokens per second among those whose
        target pass is at most reach wide and whose depth is within the source's reach, and its
        gain over plain decoding; alpha_1 (per source) replaces the evidence's first position."""
        alpha_1 = alpha_1 or {}
        # A tree of n nodes is at most n deep: deeper k would price tokens it cannot yield.
        rates = {(s, k): rate for s in sources for k, rate in enumerate(self.rates(s, alpha_1.get(s), self.deepest(s)))
                 if 0 < k and verify_width(s, k) <= reach}
        source, k = max(rates, key=lambda sk: (rates[sk], -sk[1]))
        return source, k, rates[source, k] * plain_round

    def deepest(self, source: str) -> int:
        """The deepest k a choice may take from source: k_max, its reach, and a tree's budget (a tree
        of n nodes is at most n deep)."""
        return min(self.k_max, self.depth_reach(source), tree_budget(source) or self.k_max)

    def rates(self, source: str, alpha_1: float | None = None, k_max: int | None = None) -> list[float]:
        """Expected tokens per second of drafting k = 0..k_max (the policy's, unless given) from
        source: E(k) / T(k), with T(k) = k c + v(k + 1) + the per-round overhead every round pays,
        plain ones included."""
        costs = self.costs.source(source)
        draft, overhead = costs.draft.mean or 0.0, self.costs.overhead.mean or 0.0
        scale = self.costs.yield_scale(source)
        if scale is not None:  # alpha_1 as its drafter's rounds on this text kept it (observe_yield)
            mean = alpha_1 if alpha_1 is not None else self.costs.position_alphas(source, 1)[0]
            alpha_1 = min(1.0, mean * scale)
        expected = self.costs.expected_tokens_upto(source, self.k_max if k_max is None else k_max, alpha_1)
        passes = self.costs.pass_seconds_many([self.width(source, k) for k in range(len(expected))])
        return [e / (k * draft + v + overhead) for k, (e, v) in enumerate(zip(expected, passes))]

    def width(self, source: str, k: int) -> float:
        """The target pass k drafts of source take: k + 1 for a chain; for a tree, the width its
        rounds have measured (a tree is often smaller than its budget), else its budget + 1."""
        measured = self.costs.source(source).width.mean
        return verify_width(source, k) if tree_budget(source) is None or k == 0 or measured is None else measured

    # The decoding loop asks the drafter's free sources what they would have drafted each round and
    # passes it to observe (CostModel.observe_free).
    wants_free_drafts = True

    def observe(self, round: RoundEvent, source: str, free: Mapping[str, "Draft"] | None = None) -> None:
        self.costs.observe(round, source, free)


def verify_width(source: str, k: int) -> int:
    """Tokens in the target pass that verifies k drafts of source (sources.Source.verify_width)."""
    return Source(source).verify_width(k)


def tree_budget(source: str) -> int | None:
    """n of a tree source of n nodes; None for a chain source (sources.Source.budget)."""
    return Source(source).budget


class Policy(Protocol):
    name: str

    def choose(self, sources: Sequence[str]) -> Choice:
        """This round's k and source, from what earlier rounds showed (never from this round's); k = 0
        where sources is empty (nothing to draft from)."""
        ...

    def observe(self, round: RoundEvent, source: str) -> None:
        """Learn from a round. A policy with wants_free_drafts = True is also given, as free=, what
        the drafter's free sources would have drafted in it (DrafterBase.free_drafts)."""
        ...


def make_policy(name: str, k: int, k_max: int, costs: CostModel | None = None) -> Policy:
    """A fresh policy; costs carries a cost model over from earlier runs of the same pair and device."""
    factories = {"fixed": lambda: FixedPolicy(k), "heuristic": lambda: HeuristicPolicy(k, k_max),
                 "cost": lambda: CostPolicy(k_max, costs)}
    if name not in factories:
        raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(factories)}")
    return factories[name]()
