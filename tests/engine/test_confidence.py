"""Confidence stops chosen by the cost policy (engine/confidence.py): the calibration counts only
tested positions, the stop rule is the marginal-rate inequality, the policy hands it out once it is
measured, and no stop, however extreme, changes what is generated."""
import math

import pytest
import torch

from chi_square import chi_square, critical, joint
from helpers import chain_round, perturbed, tiny_model
from specdec.engine.config import Sampling, Speculation
from specdec.engine.confidence import Calibration, StopRule, shifted
from specdec.engine.decoding import speculative_decode, standard_decode
from specdec.engine.drafters import HybridDrafter, ModelDrafter
from specdec.engine.kvcache import CachedModel
from specdec.engine.policy import Choice, CostModel, CostPolicy

pytestmark = pytest.mark.usefixtures("one_thread")
MODEL = "draft-model"


def test_calibration_counts_tested_positions_only():
    calibration = Calibration(decay=1.0)
    calibration.observe((0.95, 0.15, 0.92), accepted=1)  # kept, rejected, never tested
    high, low = calibration.bin(0.95), calibration.bin(0.15)
    assert calibration.tested[high] == 1 and calibration.kept[high] == 1
    assert calibration.tested[low] == 1 and calibration.kept[low] == 0 and calibration.evidence == 2
    # Shrunk towards halfway between the overall acceptance (0.5) and the bin's mid confidence (0.965:
    # the bin [0.95, 0.98)).
    assert calibration.acceptance(0.97, prior=0.5, weight=2) == pytest.approx((1 + 0.7325 * 2) / (1 + 2))
    assert calibration.acceptance(0.55, prior=0.5) == pytest.approx(0.525)  # an empty bin is its prior
    # An untested bin of unsure tokens reads below the average token, a confident one above it.
    assert calibration.acceptance(0.25, prior=0.8) < 0.8 < calibration.acceptance(0.85, prior=0.8)
    assert Calibration.from_json(calibration.to_json()).tested == calibration.tested


def test_the_top_decile_is_told_apart():
    """Copied tokens at 0.999 are kept every time, tokens at 0.92 four times in five: one bin for
    [0.9, 1] would read 0.9 for both, and a draft of twelve copied tokens would be expected to survive
    0.9^12 = 0.28 where it survives. With its own bin the copy drafts on where the 0.92s stop."""
    calibration = Calibration(decay=1.0)
    for round in range(10):
        calibration.observe((0.999,) * 4, accepted=4)
        calibration.observe((0.92,) * 5, accepted=4)  # the fifth rejected: 4 of 5 kept
    assert calibration.acceptance(0.999, prior=0.8) > 0.99
    assert calibration.acceptance(0.92, prior=0.8) == pytest.approx((40 + (0.8 + 0.925) / 2 * 2) / 52)
    assert calibration.bin(0.999) == len(calibration.edges) - 1 and calibration.bin(1.0) == calibration.bin(0.999)
    assert calibration.bin(0.0) == 0 and calibration.bin(0.1) == 1
    # d = 0.02 s a draft token, a pass over n tokens 0.1 + 0.005 n, deeper tokens expected at 0.8.
    rule = StopRule(lambda c: calibration.acceptance(c, 0.8), (0.8,) * 16, 0.02, lambda n: 0.1 + 0.005 * n, horizon=16)
    assert rule.keep_drafting([0.999] * 10)
    assert not rule.keep_drafting([0.92] * 10)


def test_a_calibration_of_other_bins_is_refused():
    """A saved calibration with other bins (an older file) is refused (the caller then ignores the
    file), not read into the wrong bins."""
    with pytest.raises(ValueError, match="bins"):
        Calibration.from_json({"tested": [0.0] * 10, "kept": [0.0] * 10})


def test_stop_rule_is_the_marginal_rate_inequality():
    """d = 0.1 s per draft token, v(n) = 1 + 0.05 n, a(c) = c, a_bar = 0.9 at every position. After
    one token of confidence 0.9: E = 1.9, T = 0.1 + 1.1 = 1.2, one more adds 0.9 * 0.9 = 0.81 tokens
    for 0.15 s: 0.81 / 0.15 = 5.4 > 1.9 / 1.2, so go on. After a token of confidence 0.05 the
    survival is 0.045: 0.045 * 0.9 / 0.15 = 0.27 < E / T, so stop."""
    rule = StopRule(lambda c: c, (0.9,) * 8, 0.1, lambda n: 1 + 0.05 * n)
    assert rule.keep_drafting([0.9])
    assert not rule.keep_drafting([0.9, 0.05])
    assert rule.keep_drafting([0.9, 0.9, 0.9])
    free = StopRule(lambda c: c, (0.9,), 0.0, lambda n: 1.0)  # a wider pass costs nothing: draft on
    assert free.keep_drafting([0.2, 0.2])


def test_the_stop_rule_looks_past_a_dear_width_to_cheap_ones():
    """A CPU's table is not convex: here a pass over 3 tokens costs 0.6 more than over 2, and 4 or 5
    barely more than 3. After one token at 0.8: stopping yields 1.8 tokens in 1.05 s (1.71/s); one more
    2.52 in 1.7 s (1.48/s), so a rule that looks one token ahead stops; four yield 3.75 in 1.84 s
    (2.04/s), so the rule, looking to its horizon, drafts on. With a horizon of 2 it cannot see them."""
    v = {1: 1.0, 2: 1.0, 3: 1.6, 4: 1.62, 5: 1.64, 6: 1.66}
    rule = StopRule(lambda c: c, (0.9,), 0.05, v.__getitem__, horizon=4)
    assert rule.keep_drafting([0.8])
    assert not StopRule(lambda c: c, (0.9,), 0.05, v.__getitem__, horizon=2).keep_drafting([0.8])


def test_after_an_unsure_token_the_next_is_expected_as_unsure():
    """A pass over 5 tokens costs what one over 2 does (this CPU's table), d = 0.02 s, a_bar = 0.8.
    After a first token at 0.2 (a(c) = c), expected at the position average the three tokens after it
    are cheap enough to draft: E rises 0.2 * (0.8 + 0.64 + 0.51) for 0.06 s. Where tokens after an
    unsure one were kept a fifth of the time (after), the next is expected at 0.2 and the draft
    stops; after a sure token the same rule drafts on."""
    v = {n: 0.15 + (0.0 if n <= 5 else 0.01 * (n - 5)) for n in range(1, 12)}
    average = StopRule(lambda c: c, (0.8,), 0.02, v.__getitem__, horizon=4)
    after = StopRule(lambda c: c, (0.8,), 0.02, v.__getitem__, horizon=4,
                     after=lambda c, alpha: 0.2 if c < 0.5 else alpha)
    assert average.keep_drafting([0.2]) and not after.keep_drafting([0.2])
    assert after.keep_drafting([0.95])


def test_tokens_are_calibrated_by_the_confidence_before_them():
    """SourceCosts.after: position i + 1 of a round binned by position i's confidence, tested where
    position i was kept. A round of (0.2, 0.9, 0.95) that kept two: position 2 (after 0.2) kept,
    position 3 (after 0.9) rejected; a round that kept nothing tests none."""
    from specdec.engine.policy import SourceCosts
    costs = SourceCosts(decay=1.0)
    costs.calibration.decay = costs.after.decay = 1.0
    costs.observe_confidences((0.2, 0.9, 0.95), accepted=2, prior=0.7)
    costs.observe_confidences((0.3, 0.9), accepted=0, prior=0.7)
    after = costs.after
    assert after.tested[after.bin(0.2)] == 1 and after.kept[after.bin(0.2)] == 1
    assert after.tested[after.bin(0.9)] == 1 and after.kept[after.bin(0.9)] == 0
    assert after.evidence == 2 and costs.calibration.evidence == 4
    restored = SourceCosts.from_json(costs.to_json(), 1.0)
    assert restored.after.tested == after.tested
    old = costs.to_json()
    del old["after"]  # a file saved before it: learned afresh
    assert SourceCosts.from_json(old, 1.0).after.evidence == 0


def test_the_cost_policy_hands_out_a_stop_rule_once_calibrated():
    costs = CostModel(decay=1.0)
    for n in range(1, 10):
        for i in (1, 2):
            costs.observe(chain_round(i, n - 1, 0, (0.5,) * (n - 1), verify_s=1.0 + 0.02 * n), "timing")
    policy = CostPolicy(k_max=16, costs=costs)
    policy.observe(chain_round(10, 4, 3, (0.95, 0.9, 0.97, 0.1), draft_s=0.3), MODEL)  # 4 tested positions: too few to trust
    assert policy.choose([MODEL]).stop is None
    for i in range(2):  # confident tokens accepted, unsure ones rejected
        policy.observe(chain_round(11 + i, 4, 3, (0.95, 0.9, 0.97, 0.1), draft_s=0.3), MODEL)
    choice = policy.choose([MODEL])
    assert choice.stop is not None and choice.k == 8 and "while its confidence pays" in choice.reason
    assert choice.stop.after is not None  # 9 positions tested after a drafted one (SourceCosts.after)
    # 0.3 s a draft token against 0.02 s a verified one: an unsure token is not worth another.
    assert choice.stop.keep_drafting([0.95, 0.95]) and not choice.stop.keep_drafting([0.95, 0.1])


def test_the_stop_rule_reads_deep_positions_as_the_chain_above_them():
    """A draft whose first token is a coin flip but whose next four are always kept, and whose
    positions 6-8 were tested once, long ago: they read as position 5 does (E(k)'s chain), not as
    an average first token. Shrunk towards alpha_1 they read ~0.5, and a confident draft stopped at
    5, never to test them again (the Qwen pair stopped every draft at 5 this way)."""
    costs = CostModel(decay=0.9)
    for n in range(1, 12):
        for i in (1, 2):
            costs.observe(chain_round(i, n - 1, 0, (0.5,) * (n - 1), verify_s=1.0 + 0.02 * n), "timing")
    costs.observe(chain_round(3, 8, 8, (0.95,) * 8, draft_s=0.05), MODEL)
    for i in range(40):
        accepted = 5 if i % 2 else 0
        costs.observe(chain_round(4 + i, 5, accepted, (0.95,) * 5, draft_s=0.05), MODEL)
    policy = CostPolicy(k_max=16, costs=costs)
    rule = policy.stop_rule(MODEL, 10)
    alphas = costs.position_alphas(MODEL, 8)
    delta = costs.source(MODEL).text.delta  # (this text's offset: confidence.TextShift)
    assert tuple(rule.position_alpha) == tuple(shifted(a, delta) for a in alphas)
    assert alphas[0] < 0.6 and min(alphas[5:]) > 0.9 and costs.source(MODEL).kept[5].weight < 0.1
    assert rule.keep_drafting([0.95] * 5)  # past the depth every recent round stopped at


class Stopping:
    """A scripted policy: k = 4 from the given source index each round, with a stop rule."""

    name = "scripted"

    def __init__(self, stop, which=0):
        self.stop, self.which, self.round = stop, which, 0

    def choose(self, sources):
        self.round += 1
        index = (self.round if self.which == "alternate" else self.which) % len(sources)
        return Choice(4, sources[index], stop=self.stop)

    def observe(self, round, source):
        pass


class Threshold:
    def __init__(self, below):
        self.below = below

    def keep_drafting(self, confidences):
        return confidences[-1] >= self.below


EXTREMES = [Threshold(1.1), Threshold(0.5), Threshold(0.0)]  # stop at every position, at unsure ones, never


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_greedy_stays_exact_under_extreme_stops_and_source_switches(arch):
    target = tiny_model(arch, seed=7)
    draft = perturbed(target, 0.05)
    prompt = [5, 9, 14, 5, 9, 14, 22, 31, 5, 9, 14]
    expected = [e.token for e in standard_decode(CachedModel(target), prompt, Sampling(), 40)]
    lengths = set()
    for stop in EXTREMES:
        for which in (0, "alternate"):
            drafter = HybridDrafter(ModelDrafter(draft, target.vocab_size))
            rounds = list(speculative_decode(CachedModel(target), drafter, prompt, Speculation(k=4), Sampling(), 40,
                                             policy=Stopping(stop, which)))
            assert [t for r in rounds for t in r.tokens] == expected
            lengths |= {len(r.drafted) for r in rounds if r.source == MODEL}
    assert {1, 4} <= lengths  # the stops really cut drafts short, and let others run to k


@pytest.mark.parametrize("stop", EXTREMES[:2])
def test_sampling_stays_exact_under_confidence_stops(stop):
    vocab, runs, prompt = 8, 1500, [3, 5, 7, 3, 5, 6, 4, 3, 5]
    sampling = Sampling(temperature=0.9, top_k=6, top_p=0.95)
    target = tiny_model("llama", seed=21, vocab=vocab, hidden=32)
    draft = perturbed(target, 0.5, seed=4)
    lane, drafter = CachedModel(target), HybridDrafter(ModelDrafter(draft, vocab))
    counts = torch.zeros(vocab, vocab)
    for seed in range(runs):
        s = Sampling(sampling.temperature, sampling.top_k, sampling.top_p, seed)
        rounds = speculative_decode(lane, drafter, prompt, Speculation(k=4), s, 3, policy=Stopping(stop, "alternate"))
        tokens = [t for r in rounds for t in r.tokens]
        counts[tokens[0], tokens[1]] += 1
    stat, dof = chi_square(counts, joint(target, sampling, prompt, vocab), runs)
    assert stat < critical(dof), (stat, dof)
    wrong, wrong_dof = chi_square(counts, joint(draft, sampling, prompt, vocab), runs)
    assert wrong > critical(wrong_dof), "the test cannot tell the draft's distribution from the target's"


def test_a_text_that_keeps_more_than_the_calibration_says_shifts_it_up_and_a_new_request_forgets():
    """TextShift: positions kept beyond their predicted acceptance move delta up, rejected ones down;
    the MAP stays bounded (a prior, SHIFT_LIMIT) when every position was kept; reset forgets."""
    from specdec.engine.confidence import SHIFT_LIMIT, TextShift
    up, down = TextShift(), TextShift()
    assert up.delta == 0.0 and shifted(0.6, up.delta) == 0.6
    up.observe([0.6, 0.7, 0.8, 0.7, 0.6], accepted=5)  # all kept at about 0.7 predicted
    down.observe([0.9, 0.9, 0.9], accepted=0)  # the first, predicted 0.9, rejected
    assert 0.3 < up.delta < SHIFT_LIMIT and down.delta < -0.3
    first = up.delta
    for _ in range(20):  # round after round kept whole: more sure, never unbounded
        up.observe([0.7] * 8, accepted=8)
    assert first < up.delta <= SHIFT_LIMIT
    for _ in range(40):  # then tokens the calibration was sure of, kept: they say little, and the
        up.observe([0.999] * 8, accepted=8)  # old rounds fade (SHIFT_DECAY)
    assert 0.0 <= up.delta < first
    assert shifted(0.5, up.delta) > 0.5 and abs(shifted(shifted(0.8, 1.3), -1.3) - 0.8) < 1e-9
    # The MAP: the gradient of the log posterior at delta is zero (one round, undecayed).
    one = TextShift()
    one.observe([0.5, 0.8, 0.3], accepted=2)
    p = [1 / (1 + math.exp(-(math.log(a / (1 - a)) + one.delta))) for a in (0.5, 0.8, 0.3)]
    assert abs((1 - p[0]) + (1 - p[1]) - p[2] - one.delta) < 1e-6
    up.reset()
    assert up.delta == 0.0 and not up.positions


def test_the_stop_rule_drafts_deeper_on_a_text_that_copies():
    """The cost policy's stop rule reads a(c) through this request's offset: after rounds that kept
    every token at middling confidence, the same confidences draft on where the pair's calibration
    alone stops; start_request puts delta back to 0."""
    costs = CostModel(decay=1.0)
    for n in range(1, 18):
        for i in (1, 2):
            costs.observe(chain_round(i, n - 1, 0, (0.5,) * (n - 1), verify_s=0.3 + 0.02 * n), "timing")
    policy = CostPolicy(k_max=16, costs=costs)
    for i in range(6):  # the pair: tokens at 0.7 kept half the time
        policy.observe(chain_round(10 + i, 4, 2, (0.7,) * 4, draft_s=0.03), MODEL)
    costs.start_request()
    before = policy.choose([MODEL]).stop
    for i in range(3):  # this text: every token at 0.7 kept
        policy.observe(chain_round(20 + i, 4, 4, (0.7,) * 4, draft_s=0.03), MODEL)
    after = policy.choose([MODEL]).stop
    assert costs.source(MODEL).text.delta > 0.5
    assert after.accept(0.7) > before.accept(0.7) + 0.1
    depth = lambda rule: next((j for j in range(1, 17) if not rule.keep_drafting([0.7] * j)), 16)  # noqa: E731
    assert depth(after) > depth(before)
    costs.start_request()
    assert costs.source(MODEL).text.delta == 0.0
