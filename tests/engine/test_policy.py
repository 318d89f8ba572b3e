"""The k policies: the cost model learns what it should and nothing it should not, the cost policy
picks the (source, k) the numbers favour (k = 0 included) and finds its way back, and no policy or
drafter mix changes what is generated: greedy stays token-identical, sampling keeps the target's
distribution (the chi-square half lives in test_sampling_e2e)."""
import random
import statistics

import pytest

from helpers import loaded, perturbed, tiny_model, word_tokenizer
from specdec import CachedModel, ModelDrafter, Pair, PromptLookupDrafter, Request, Sampling, Speculation, \
    speculative_decode, standard_decode
from specdec.engine.drafters import HybridDrafter, make_drafter, needs_draft_model
from specdec.engine.events import ACCEPTED, CORRECTED, RoundEvent, TreeRound
from specdec.engine.verify_costs import VerifyCosts
from specdec.engine.policy import CARRIED_EVIDENCE, CARRIED_FREE_DEPTH, Choice, CostModel, CostPolicy, FixedPolicy, \
    HeuristicPolicy, make_policy
from specdec.engine.sources import Source

MODEL, LOOKUP = "draft-model", "prompt-lookup"


def rnd(i, drafted, accepted, draft_s=0.0, verify_s=0.1, policy_s=0.0, catch_up=1):
    fates = (ACCEPTED,) * accepted + ((CORRECTED,) if accepted < drafted else ())
    return RoundEvent(i, drafted, tuple(range(drafted)), accepted, tuple(range(accepted + 1)), fates,
                      draft_s + policy_s, verify_s, (), False, policy_seconds=policy_s, catch_up=catch_up)


def teach(v: dict, c: float, alpha: float, depth: int, source=MODEL, rounds=200, decay=1.0) -> CostModel:
    """A cost model taught only through observe(): pass seconds v[n], c seconds per drafted token,
    and rounds of `depth` drafts accepted position by position with probability alpha (exact
    long-run shares, laid out deterministically)."""
    model = CostModel(decay=decay)
    model.seed_verify(VerifyCosts(tuple(sorted(v)), tuple(v[n] for n in sorted(v)), context=64))
    for n, seconds in v.items():
        for i in (1, 2):  # the first pass at a width is never learned from
            model.observe(rnd(i, n - 1, 0, draft_s=c * (n - 1), verify_s=seconds), source)
    model.sources.pop(source)  # forget the acceptance those timing rounds implied
    # Accepted length L with P(L >= j) = alpha^j, j <= depth, as exact shares of `rounds`.
    shares = [alpha ** j - (alpha ** (j + 1) if j < depth else 0) for j in range(depth + 1)]
    i = 3
    for accepted, share in enumerate(shares):
        for _ in range(round(share * rounds)):
            model.observe(rnd(i, depth, accepted, draft_s=c * depth, verify_s=v[depth + 1]), source)
            i += 1
    return model


def test_cost_model_ignores_prefill_and_first_use_of_a_width():
    model = CostModel(decay=1.0)
    model.observe(rnd(0, 4, 4, draft_s=9.0, verify_s=9.0), MODEL)  # round 0 carries the prefill
    assert model.pass_seconds(5) is None and model.source(MODEL).draft.mean is None
    assert model.source(MODEL).alpha(1) is None  # and how the answer opens, not how it goes on
    model.observe(rnd(1, 4, 1, draft_s=0.4, verify_s=5.0), MODEL)  # first pass of width 5: warm-up
    assert model.pass_seconds(5) is None and model.source(MODEL).draft.mean == pytest.approx(0.1)
    model.observe(rnd(2, 4, 1, draft_s=0.4, verify_s=0.2, policy_s=0.05), MODEL)
    assert model.pass_seconds(5) == pytest.approx(0.2)
    assert model.pass_seconds(9) == pytest.approx(0.2)  # the nearest measured width stands in
    assert model.source(MODEL).draft.mean == pytest.approx(0.1)  # choosing k is not drafting
    assert model.overhead.mean == pytest.approx(0.05 / 2)


def test_a_draft_reading_a_long_backlog_is_not_priced_by_it(models):
    """The draft model's first round reads the whole prompt: a prefill, not its cost per token."""
    target, draft = models
    drafter, prompt = ModelDrafter(draft, target.vocab_size), repetitive()
    first = drafter.propose(prompt, 2, Sampling(), None)
    assert first.catch_up == len(prompt)
    assert drafter.propose(prompt + first.tokens[:1] + [7], 2, Sampling(), None).catch_up == 1
    model = CostModel(decay=1.0)
    model.observe(rnd(1, 2, 1, draft_s=9.0, catch_up=len(prompt)), MODEL)
    assert model.source(MODEL).draft.mean is None and model.source(MODEL).alpha(1) is not None
    model.observe(rnd(2, 2, 1, draft_s=0.2, catch_up=2), MODEL)
    assert model.source(MODEL).draft.mean == pytest.approx(0.1)


def test_acceptance_by_position_counts_only_tested_positions():
    model = CostModel(decay=1.0, prior_weight=0.0)
    for i, (m, n) in enumerate([(3, 3), (3, 1), (3, 0), (2, 2)]):
        model.observe(rnd(i + 1, m, n), MODEL)
    s = model.source(MODEL)
    assert s.alpha(1) == pytest.approx(3 / 4)  # tested 4 times, kept 3
    assert s.alpha(2) == pytest.approx(2 / 3)  # tested only when position 1 was kept
    assert s.alpha(3) == pytest.approx(1 / 1)  # (3, 1) stopped before it; (2, 2) drafted only 2
    assert s.alpha(4) is None
    assert model.expected_tokens(MODEL, 2) == pytest.approx(1 + 0.75 + 0.75 * 2 / 3)
    assert model.expected_tokens(MODEL, 5) == pytest.approx(1 + 0.75 + 0.5 + 0.5 + 0.5 + 0.5)


def test_little_evidence_is_shrunk_towards_the_prior():
    """One fully accepted round is no promise that 16 drafts will be: a Beta(1, 1)-like prior."""
    model = CostModel(decay=1.0, prior_alpha=0.5, prior_weight=2.0)
    model.observe(rnd(1, 4, 4), MODEL)
    assert model.expected_tokens(MODEL, 1) == pytest.approx(1 + 2 / 3)
    for i in range(200):
        model.observe(rnd(2 + i, 4, 4), MODEL)
    assert model.expected_tokens(MODEL, 1) > 1.99


def test_thompson_draws_spread_with_thin_evidence_and_gather_with_thick():
    """Two rounds at 50% leave alpha_1 wide open; two hundred pin it near 0.5. Both centre on the
    prior-shrunk mean (a Beta posterior), and the same seed draws the same values."""
    thin, thick = CostModel(decay=1.0), CostModel(decay=1.0)
    for i, accepted in enumerate([1, 0]):
        thin.observe(rnd(1 + i, 1, accepted), MODEL)
    for i in range(200):
        thick.observe(rnd(1 + i, 1, i % 2), MODEL)

    def draws(model, seed=0):
        rng = random.Random(seed)
        return [model.draw_alpha_1(MODEL, rng) for _ in range(2000)]

    for model, spread in [(thin, (0.18, 0.28)), (thick, (0.02, 0.05))]:
        drawn = draws(model)
        assert statistics.mean(drawn) == pytest.approx(0.5, abs=0.02)
        assert spread[0] < statistics.stdev(drawn) < spread[1]  # Beta(2, 2): 0.22; Beta(101, 101): 0.035
    assert draws(thin, 7) == draws(thin, 7) != draws(thin, 8)


def test_unmeasured_widths_are_read_off_the_measured_ones():
    model = CostModel(decay=0.5)
    for width, seconds in [(1, 1.0), (3, 2.0), (5, 2.2)]:
        for i in range(30):  # the first pass at a width is not learned from; the rest outweigh its guess
            model.observe(rnd(i + 1, width - 1, 0, verify_s=seconds), MODEL)
    assert model.pass_seconds(3) == pytest.approx(2.0)  # measured
    assert model.pass_seconds(2) == pytest.approx(1.5)  # between its neighbours
    assert model.pass_seconds(4) == pytest.approx(2.1)  # a table, not one line: 3 -> 5 is flatter
    assert model.pass_seconds(9) == pytest.approx(2.2)  # past the widest: as the widest, to be tried


def test_one_long_pass_does_not_price_a_width_out_but_a_lasting_change_shows():
    """A shared CPU runs one pass in a few dozen 2-3x long. A width first timed by such a pass starts
    from its neighbours' line and moves by at most OUTLIER; a machine that really got slower is
    followed within a few dozen passes."""
    table = VerifyCosts((1, 3, 5), (1.0, 1.1, 1.2), context=64)
    model = CostModel(decay=0.9)
    model.seed_verify(table)
    for i, seconds in enumerate([9.9, 3.0]):  # width 4: the first pass is not learned from, the next ran long
        model.observe(rnd(i + 1, 3, 0, verify_s=seconds), MODEL)
    assert model.pass_seconds(4) < 1.35  # guessed 1.15, the long pass clipped to OUTLIER x 1.15 (unclipped: 1.65)
    for i in range(40):
        model.observe(rnd(10 + i, 4, 0, verify_s=2.4), MODEL)  # width 5, twice as slow, again and again
    assert model.pass_seconds(5) == pytest.approx(2.4, rel=0.05)


def test_decay_follows_a_change_of_regime():
    model = CostModel(decay=0.8)
    for i in range(1, 30):
        model.observe(rnd(i, 4, 4), MODEL)
    assert model.source(MODEL).alpha(1) > 0.99
    for i in range(30, 45):
        model.observe(rnd(i, 4, 0), MODEL)
    assert model.source(MODEL).alpha(1) < 0.05


def test_cost_policy_drafts_deep_when_drafts_are_cheap_and_good():
    v = {n: 1.0 + 0.05 * (n - 1) for n in range(1, 18)}
    policy = CostPolicy(k_max=16, costs=teach(v, c=0.05, alpha=0.95, depth=8))
    choice = policy.choose([MODEL])
    assert choice.k >= 8 and choice.gain > 2 and choice.source == MODEL and f"k={choice.k}" in choice.reason


def test_cost_policy_falls_back_to_plain_decoding_when_no_draw_pays():
    v = {n: 1.0 + 0.5 * (n - 1) for n in range(1, 10)}
    policy = CostPolicy(k_max=8, costs=teach(v, c=0.6, alpha=0.3, depth=4, decay=0.9))
    choices = [policy.choose([MODEL]) for _ in range(40)]
    # Even the luckiest draw of well-measured evidence does not beat plain decoding.
    assert all(c.k == 0 and c.gain == 1.0 for c in choices)
    assert "plain decoding" in choices[0].reason


def test_a_source_is_tried_in_proportion_to_the_chance_it_pays():
    """Break-even at alpha_1 = 0.6 (k = 1: 1 + alpha tokens in 1.6 steps). Evidence at about 0.43:
    thin (2 of 5 kept), a draw beats plain decoding now and then; thick (87 of 200), never. A
    cautious or a face-value rule would never try the thin one, and it might be the better."""
    v = {n: 1.0 + 0.5 * (n - 1) for n in range(1, 10)}
    drafted = {}
    for name, kept, tested in [("thin", 2, 5), ("thick", 87, 200)]:
        costs = teach(v, c=0.1, alpha=0.5, depth=1, rounds=0)
        for i in range(tested):
            costs.observe(rnd(10 + i, 1, int(i < kept), draft_s=0.1, verify_s=v[2]), MODEL)
        policy = CostPolicy(k_max=1, costs=costs)
        drafted[name] = sum(policy.choose([MODEL]).k > 0 for _ in range(400)) / 400
    assert 0.05 < drafted["thin"] < 0.4 and drafted["thick"] == 0.0


def test_a_thin_good_estimate_is_drafted_and_then_learns():
    """Thin evidence of a good draft (5 rounds at 0.8) is drafted on most draws, and what the rounds
    show settles it: the text turned hard and the policy decodes plainly again."""
    v = {n: 1.0 + 0.5 * (n - 1) for n in range(1, 10)}
    policy = CostPolicy(k_max=8, costs=teach(v, c=0.1, alpha=0.8, depth=4, decay=0.9, rounds=5))
    assert sum(policy.choose([MODEL]).k > 0 for _ in range(20)) >= 12
    for i in range(40):
        policy.observe(rnd(100 + i, 4, 0, draft_s=0.4, verify_s=v[5]), MODEL)
    assert not any(policy.choose([MODEL]).k for _ in range(20))


def test_plain_decoding_is_not_a_trap_evidence_ages_until_a_draw_tries_again():
    """Plenty of evidence that the draft does not pay: plain decoding. But the plain rounds that
    follow age it (this text may not be that text), so its posterior widens and a draw tries it
    within a few dozen rounds, not at once and never not at all."""
    v = {n: 1.0 + 0.5 * (n - 1) for n in range(1, 10)}
    costs = teach(v, c=0.1, alpha=0.3, depth=1, decay=0.9, rounds=0)
    for i in range(60):  # 3 in 10 first tokens kept, spread evenly: a decayed alpha_1 of about 0.3
        costs.observe(rnd(10 + i, 1, int(i % 10 in (0, 4, 7)), draft_s=0.1, verify_s=v[2]), MODEL)
    policy = CostPolicy(k_max=8, costs=costs)
    ks = []
    for i in range(120):
        choice = policy.choose([MODEL])
        ks.append(choice.k)
        if choice.k:
            break
        policy.observe(rnd(300 + i, 0, 0, verify_s=v[1]), MODEL)
    assert ks[-1] >= 1 and 5 <= len(ks) < 120 and not any(ks[:-1])


def test_a_new_request_carries_acceptance_as_a_prior_not_a_verdict():
    """start_request keeps each estimate with at most CARRIED_EVIDENCE observations behind it (the
    calibration with at most CARRIED_CALIBRATION), and leaves the device's costs alone."""
    v = {n: 1.0 + 0.1 * (n - 1) for n in range(1, 10)}
    model = teach(v, c=0.1, alpha=0.4, depth=4, decay=0.99)
    costs = model.source(MODEL)
    costs.calibration.observe([0.9, 0.9, 0.9, 0.9], 1)
    for _ in range(30):
        costs.calibration.observe([0.5], 0)
    before = [costs.alpha(i) for i in (1, 2, 3)], costs.calibration.acceptance(0.9, 0.5, 0.0)
    draft, verify = costs.draft.mean, model.pass_seconds(5)
    model.start_request(evidence=5.0, calibration=20.0)
    assert max(k.weight for k in costs.kept) == pytest.approx(5.0) and costs.calibration.evidence == pytest.approx(20.0)
    after = [costs.alpha(i) for i in (1, 2, 3)], costs.calibration.acceptance(0.9, 0.5, 0.0)
    assert after[0] == pytest.approx(before[0]) and after[1] == pytest.approx(before[1])
    assert (costs.draft.mean, model.pass_seconds(5)) == (draft, verify)


def test_untested_deep_positions_age_towards_the_position_above():
    """Prose taught that position 4 fails; the text turns easy but the drafts stop at 3, so position
    4 is never tested again. It ages each round instead, and alpha_4 (shrunk towards alpha_3) climbs."""
    model = CostModel(decay=0.9)
    for i in range(40):
        model.observe(rnd(i + 1, 4, 3), MODEL)  # positions 1-3 kept, 4 rejected
    deep = lambda: model.expected_tokens_upto(MODEL, 4)  # noqa: E731
    start = deep()[4] - deep()[3]
    for i in range(30):
        model.observe(rnd(100 + i, 3, 3), MODEL)  # only positions 1-3 tested
    assert model.source(MODEL).kept[3].weight < 0.5
    assert deep()[4] - deep()[3] > start + 0.5


def test_cost_policy_reads_the_verify_table_not_a_line():
    """On the 2-core CPU a 5-token pass can cost less than a 3-token one; the policy must see that."""
    v = {1: 1.0, 2: 1.7, 3: 2.1, 4: 1.55, 5: 1.6, 6: 2.4, 7: 2.6, 8: 2.8, 9: 3.0}
    policy = CostPolicy(k_max=8, costs=teach(v, c=0.1, alpha=0.8, depth=8))
    assert policy.choose([MODEL]).k == 4


def test_cost_policy_measures_before_it_trusts():
    policy = CostPolicy(k_max=8)
    first = policy.choose([LOOKUP, MODEL])
    # As deep as the reach allows at first (MIN_REACH): acceptance past position 1 is measured too.
    assert (first.k, first.source, first.gain) == (CostPolicy.MIN_REACH, LOOKUP, None) and "measuring" in first.reason
    costs = policy.costs
    for source in (LOOKUP, MODEL):
        costs.observe(rnd(1, 3, 1, draft_s=0.3), source)
    plain_missing = policy.choose([LOOKUP, MODEL])
    assert plain_missing.k == 0 and "plain decode step" in plain_missing.reason


def test_free_sources_need_no_measuring_round():
    """Once the loop has asked a source for a free draft (a lookup), the policy measures only the
    model sources, and prices the free one at no draft cost until its own rounds time it."""
    from specdec.engine.drafters.base import Draft
    policy = CostPolicy(k_max=8)
    assert policy.choose([LOOKUP, MODEL]).source == LOOKUP  # nothing known: the first source is measured
    policy.costs.observe_free({LOOKUP: Draft([4, 5], None)}, [4, 6])  # it would have kept its first token
    first = policy.choose([LOOKUP, MODEL])
    assert (first.source, first.k) == (MODEL, CostPolicy.MIN_REACH) and "measuring" in first.reason
    policy.costs.observe(rnd(1, 4, 2, draft_s=0.3), MODEL)
    policy.costs.learn_pass(1, 1.0)
    assert policy.costs.source(LOOKUP).draft.mean is None
    rates = policy.rates(LOOKUP, k_max=4)
    assert all(rate > 0 for rate in rates)  # priced: at no draft cost
    assert "measuring" not in policy.choose([LOOKUP, MODEL]).reason


def test_every_tree_and_case_of_a_free_drafter_is_free():
    """Token recycling's free draft is its biggest tree in the round's case; its smaller trees and its
    other case are just as free (no model pass): none of them takes a measuring round."""
    from specdec.engine.drafters.base import Draft
    policy = CostPolicy(k_max=8)
    recycling = ["recycling:16", "recycling:8", "recycling:4", "recycling/table:8"]
    policy.costs.observe_free({"recycling:16": Draft([4, 5], None)}, [4, 6])
    policy.costs.learn_pass(1, 1.0)
    choice = policy.choose(recycling)
    assert "measuring" not in choice.reason
    assert "measuring" in policy.choose(recycling + [MODEL]).reason  # a model source still is measured
    assert not policy.costs.is_free(MODEL) and policy.costs.is_free("recycling/table:2")


def test_sources_are_judged_on_their_own_evidence():
    v = {n: 1.0 + 0.1 * (n - 1) for n in range(1, 10)}
    costs = teach(v, c=0.3, alpha=0.2, depth=4, source=MODEL)
    for i in range(40):  # lookup: free and always right on this (repetitive) text
        costs.observe(rnd(10 + i, 8, 8, draft_s=0.0, verify_s=v[9]), LOOKUP)
    policy = CostPolicy(k_max=8, costs=costs)
    assert policy.choose([MODEL]).k == 0
    assert policy.choose([LOOKUP, MODEL]).source == LOOKUP
    assert policy.choose([LOOKUP, MODEL]).k == 8


def test_heuristic_is_plus_two_minus_one_within_bounds():
    policy = HeuristicPolicy(k=4, k_max=7)
    for drafted, accepted, expected in [(4, 4, 6), (6, 6, 7), (7, 2, 6), (0, 0, 6), (6, 0, 5)]:
        policy.observe(rnd(1, drafted, accepted), MODEL)
        assert policy.choose([MODEL]) == Choice(expected, MODEL)
    low = HeuristicPolicy(k=1, k_max=7)
    low.observe(rnd(1, 1, 0), MODEL)
    assert low.choose([MODEL]).k == 1


def test_policies_by_name_and_speculation_spellings():
    assert isinstance(make_policy("fixed", 3, 8), FixedPolicy) and make_policy("fixed", 3, 8).choose([LOOKUP]).k == 3
    with pytest.raises(ValueError, match="unknown policy 'greedy'; choose one of fixed, heuristic, cost"):
        make_policy("greedy", 3, 8)
    assert Speculation(adaptive=True).policy == "heuristic" and Speculation(policy="heuristic").adaptive
    assert Speculation(policy="cost").adaptive is False
    for bad, message in [({"policy": "fast"}, "unknown policy 'fast'"), ({"policy": ["cost"]}, "unknown policy"),
                         ({"adaptive": True, "policy": "cost"}, "cannot be combined")]:
        with pytest.raises(ValueError, match=message):
            Speculation(**bad)


@pytest.fixture(scope="module", params=["llama", "qwen2"])
def models(request):
    target = tiny_model(request.param, seed=7)
    return target, perturbed(target, 0.03)


def repetitive(n=6):
    return [5, 9, 14, 22, 9, 14, 30, 41] * 2 + list(range(50, 50 + n))


class Scripted:
    """A policy that replays a script of (k, source index) choices, cycling: it forces k = 0
    rounds and switches between a hybrid's sources at set points."""

    name = "scripted"

    def __init__(self, script):
        self.script, self.i = script, 0

    def choose(self, sources):
        k, which = self.script[self.i % len(self.script)]
        self.i += 1
        return Choice(k, sources[min(which, len(sources) - 1)])

    def observe(self, round, source):
        pass


SCRIPT = [(3, 0), (0, 0), (2, 1), (5, 0), (0, 1), (1, 1), (4, 0)]


@pytest.mark.parametrize("policy", ["fixed", "heuristic", "cost", "scripted"])
def test_greedy_stays_identical_under_every_policy_and_drafter(models, policy):
    target, close = models
    far = perturbed(target, 0.3, seed=5)  # mostly rejected: the policies' other regime
    prompt = repetitive()
    expected = [e.token for e in standard_decode(CachedModel(target), prompt, Sampling(), 60)]
    drafters = [PromptLookupDrafter()] + [d for draft in (close, far) for d in
                                          (ModelDrafter(draft, target.vocab_size),
                                           HybridDrafter(ModelDrafter(draft, target.vocab_size)))]
    seen_sources, plain_rounds = set(), 0
    for drafter in drafters:
        chosen = Scripted(SCRIPT) if policy == "scripted" else None
        spec = Speculation(k=3, k_max=8, policy="fixed" if policy == "scripted" else policy)
        rounds = list(speculative_decode(CachedModel(target), drafter, prompt, spec, Sampling(), 60, policy=chosen))
        assert [t for r in rounds for t in r.tokens] == expected, (policy, drafter.name)
        seen_sources |= {r.source for r in rounds if r.source}
        plain_rounds += sum(r.k == 0 for r in rounds[:-1])
    assert {Source(s).drafter for s in seen_sources} == {MODEL, LOOKUP}  # (lookup's cases: lookup.py)
    if policy == "scripted":
        assert plain_rounds > 0  # k = 0 rounds really ran, mid-stream


def test_hybrid_takes_lookup_where_it_matches_and_the_model_elsewhere(models):
    target, draft = models
    hybrid = HybridDrafter(ModelDrafter(draft, target.vocab_size))
    assert hybrid.sources([1, 2, 3, 1, 2]) == (LOOKUP, MODEL)
    assert hybrid.sources([1, 2, 3, 4, 5]) == (MODEL,)
    draft_of = lambda ids, source=None: hybrid.propose(ids, 3, Sampling(), None, source).tokens  # noqa: E731
    assert draft_of([1, 2, 3, 1, 2]) == [3, 1, 2]  # lookup first: it costs nothing
    assert len(draft_of([1, 2, 3, 1, 2], MODEL)) == 3  # the policy may prefer the model
    assert needs_draft_model("hybrid") and not needs_draft_model("prompt-lookup")
    with pytest.raises(ValueError, match="the hybrid drafter needs a draft model"):
        make_drafter("hybrid", None, 96)


def test_pair_auto_picks_the_cost_policy_and_the_best_drafter(models):
    target, draft = models
    tok = word_tokenizer(96)
    load = lambda m: loaded(m, tok)  # noqa: E731
    request = Request("w3 w8 w20 w3 w8", 24, spec=Speculation(k=3, adaptive=True), raw=True)
    with_draft, alone = Pair(load(target), load(draft)).auto(request), Pair(load(target)).auto(request)
    assert (with_draft.drafter, with_draft.spec.policy, with_draft.spec.adaptive) == ("mixed", "cost", False)
    assert (alone.drafter, alone.spec.policy) == ("mixed", "cost") and with_draft.spec.k_max == 32
    assert with_draft.spec.k == 3 and with_draft.max_new_tokens == 24


def test_the_cost_policy_explores_wider_passes_a_step_at_a_time():
    """Widths never run are not bet on: at most 2 drafts beyond the widest pass measured."""
    policy = CostPolicy(k_max=16, costs=teach({1: 1.0, 3: 1.05}, c=0.01, alpha=0.99, depth=2))
    assert policy.choose([MODEL]).k == 4


def test_a_new_request_widens_a_tree_from_min_reach_again():
    """A tree's depth is shown per text: a draft tree grown 8 deep on one request starts the next at
    MIN_REACH (its depth is paid in draft passes, with no confidence to stop them), and each round
    that tests its depth doubles the reach, up to its budget. A chain keeps its reach: its draft
    stops on its own confidence."""
    v = {n: 1.0 + 0.05 * (n - 1) for n in range(1, 18)}
    costs = teach(v, c=0.05, alpha=0.95, depth=8)
    tree = "draft-tree:16"
    for i in range(3):
        costs.observe(rnd(300 + i, 8, 8, draft_s=0.4, verify_s=v[9]), tree)
    policy = CostPolicy(k_max=32, costs=costs)
    assert policy.deepest(MODEL) == policy.deepest(tree) == 16
    costs.start_request()
    assert policy.deepest(tree) == CostPolicy.MIN_REACH and policy.deepest(MODEL) == 16
    costs.observe(rnd(400, 4, 2, draft_s=0.2, verify_s=v[5]), tree)  # tested to position 3
    assert policy.deepest(tree) == 6
    costs.observe(rnd(401, 6, 6, draft_s=0.3, verify_s=v[7]), tree)  # tested to its depth, 6
    assert policy.deepest(tree) == 12
    costs.observe(rnd(402, 12, 12, draft_s=0.6, verify_s=v[13]), tree)
    assert policy.deepest(tree) == 16  # a 16-node tree is at most 16 deep


def test_a_draw_bets_on_thin_but_good_evidence_with_a_wide_draft():
    """A CPU where 2 tokens cost 2 steps but 5 cost barely more: k = 1 can never pay, a wide draft
    can, and a policy that tried k = 1 would never find out."""
    v = {1: 1.0, 2: 2.0, 3: 2.05, 4: 2.1, 5: 2.15}
    costs = teach(v, c=0.1, alpha=0.9, depth=1, rounds=3)  # three rounds of evidence only
    policy = CostPolicy(k_max=8, costs=costs)
    drafts = [c for c in (policy.choose([MODEL]) for _ in range(20)) if c.k]
    assert drafts and all(c.k >= 3 and c.gain > 1.0 for c in drafts)


def test_a_source_not_drafted_is_tried_while_another_drafts():
    """A free but weak source (prompt lookup) pays a little on well-measured evidence; the draft model
    was accepted whole the one time it drafted: thin evidence, but a good chance of being the best.
    Only the source drafted is tested, so a rule that chose on the evidence alone might never try the
    draft model again: the draws try it at once, and once its evidence is in, it is chosen."""
    v = {n: 1.0 + 0.05 * (n - 1) for n in range(1, 18)}
    costs = teach(v, c=0.0, alpha=0.5, depth=2, source=LOOKUP)
    costs.observe(rnd(500, 4, 4, draft_s=0.4, verify_s=v[5]), MODEL)
    policy = CostPolicy(k_max=8, costs=costs)
    choices = [policy.choose([LOOKUP, MODEL]) for _ in range(20)]
    assert MODEL in {c.source for c in choices} and all(c.k >= 1 for c in choices)
    for i in range(6):  # the draft model is accepted whole
        policy.observe(rnd(600 + i, 4, 4, draft_s=0.4, verify_s=v[5]), MODEL)
    assert [policy.choose([LOOKUP, MODEL]).source for _ in range(20)] == [MODEL] * 20


def test_no_rival_well_measured_as_worse_is_tried():
    """The same weak lookup, and a draft model well measured as worse: never tried."""
    v = {n: 1.0 + 0.05 * (n - 1) for n in range(1, 18)}
    costs = teach(v, c=0.0, alpha=0.5, depth=2, source=LOOKUP)
    model = teach(v, c=0.3, alpha=0.3, depth=2)
    costs.sources[MODEL] = model.sources[MODEL]
    policy = CostPolicy(k_max=8, costs=costs)
    assert {policy.choose([LOOKUP, MODEL]).source for _ in range(40)} == {LOOKUP}


def test_draws_below_the_mean_hand_no_rounds_away(monkeypatch):
    """Both sources measured as a new request is (about ten observations each): the draft model at
    alpha 0.8 beats the free lookup at 0.65 on the evidence (2.43 against 2.06 tokens a second). A
    Thompson draw of the model's alpha_1 below its mean explores nothing, it only hands the round to
    the lookup; optimistic draws (no lower than the mean) hand it over only where the lookup's own
    draw beats the model's mean: far fewer rounds, though still some (its evidence is thin too)."""
    v = {n: 1.0 + 0.05 * (n - 1) for n in range(1, 18)}
    costs = teach(v, c=0.0, alpha=0.65, depth=4, source=LOOKUP)
    costs.sources[MODEL] = teach(v, c=0.04, alpha=0.8, depth=4).sources[MODEL]
    costs.start_request(evidence=10.0)
    rival = {}
    for optimistic in (True, False):
        monkeypatch.setattr(CostPolicy, "OPTIMISTIC", optimistic)
        policy = CostPolicy(k_max=8, costs=costs)
        rival[optimistic] = sum(policy.choose([LOOKUP, MODEL]).source == LOOKUP for _ in range(1000)) / 1000
    assert max(policy.rates(MODEL)) > max(policy.rates(LOOKUP))  # the model is the best on the evidence
    assert 0.0 < rival[True] < rival[False] / 3 and rival[False] > 0.1


def test_a_free_source_is_priced_at_its_mean(monkeypatch):
    """A free source's alpha_1 is measured every round whoever drafts (observe_free), so a draw of it
    explores nothing: the setup of the test above, the lookup now known as free, gets no round from
    its draws, and every round where its evidence is the best."""
    v = {n: 1.0 + 0.05 * (n - 1) for n in range(1, 18)}
    costs = teach(v, c=0.0, alpha=0.65, depth=4, source=LOOKUP)
    costs.sources[MODEL] = teach(v, c=0.04, alpha=0.8, depth=4).sources[MODEL]
    costs.free.add(LOOKUP)
    costs.start_request(evidence=10.0)
    chosen = {}
    for at_mean in (True, False):
        monkeypatch.setattr(CostPolicy, "FREE_AT_MEAN", at_mean)
        policy = CostPolicy(k_max=8, costs=costs)
        chosen[at_mean] = sum(policy.choose([LOOKUP, MODEL]).source == LOOKUP for _ in range(1000))
    assert chosen[True] == 0 < chosen[False]
    costs.sources[MODEL] = teach(v, c=0.04, alpha=0.55, depth=4).sources[MODEL]  # now the lookup is best
    costs.start_request(evidence=10.0)
    monkeypatch.setattr(CostPolicy, "FREE_AT_MEAN", True)
    policy = CostPolicy(k_max=8, costs=costs)
    assert max(policy.rates(LOOKUP)) > max(policy.rates(MODEL))
    assert 900 < sum(policy.choose([LOOKUP, MODEL]).source == LOOKUP for _ in range(1000)) < 1000


def asked(i: int, k: int, drafted: int, accepted: int, tree=None) -> RoundEvent:
    """A round asked k deep that drafted `drafted` tokens (a tree's nodes) and kept `accepted`."""
    fates = (ACCEPTED,) * accepted + (CORRECTED,)
    return RoundEvent(i, k, tuple(range(drafted)), accepted, tuple(range(accepted + 1)), fates, 0.0, 0.1, (), False,
                      tree=tree)


def test_a_lookup_or_tree_is_tested_as_deep_as_asked_so_its_price_is_what_it_offers():
    """A lookup asked 4 deep that finds 2 tokens to copy, both kept, yields 3 tokens a round: position
    3 offered nothing, so it counts as missed and E(4) = 3. A draft model that drafted 2 of 4 stopped
    by choice (its stop rule): its positions 3 and 4 are untested, not missed. So is a tree's: a
    4-node recycling tree two deep, its path kept to a leaf every round, yields 3 tokens whatever
    depth it is asked for (before, its unreached positions took the one above's alpha and E(4) read 5)."""
    model = CostModel(decay=1.0, prior_weight=0.0)
    model.free.add(LOOKUP)
    shallow = TreeRound((20, 21, 22, 23), (-1, 0, -1, -1), (0, 1))  # 0 -> 1, and two siblings of 0
    for i in range(1, 21):
        model.observe(asked(i, 4, 2, 2), LOOKUP)
        model.observe(asked(i, 4, 2, 2), MODEL)
        model.observe(asked(i, 4, 4, 2, shallow), "recycling:4")
    assert model.expected_tokens(LOOKUP, 4) == pytest.approx(3.0)
    assert model.expected_tokens("recycling:4", 4) == pytest.approx(3.0)
    assert [k.mean for k in model.source(MODEL).kept] == [1.0, 1.0]  # untested past 2: alpha_3 reads alpha_2's
    assert model.expected_tokens(MODEL, 4) == pytest.approx(5.0)


def test_a_free_sources_deep_positions_carry_little_into_a_new_request():
    """A lookup that copied far on one text (positions 2-4 always kept) and the draft model that did
    as well: the next request keeps position 1 of both with CARRIED_EVIDENCE observations behind it
    (the lookup's is judged anew every round anyway), the draft model's deeper positions too, but
    the lookup's deeper ones with CARRIED_FREE_DEPTH, so its first own round that fails at position
    2 pulls its alpha_2 below the draft model's, which the same failure moves less."""
    model = CostModel(decay=1.0, prior_weight=0.0)
    model.free.add(LOOKUP)
    for i in range(1, 31):
        for source in (LOOKUP, MODEL):
            model.observe(asked(i, 4, 4, 4), source)
    model.start_request()
    weights = {s: [k.weight for k in model.source(s).kept] for s in (LOOKUP, MODEL)}
    assert weights[MODEL] == pytest.approx([CARRIED_EVIDENCE] * 4)
    assert weights[LOOKUP] == pytest.approx([CARRIED_EVIDENCE] + [CARRIED_FREE_DEPTH] * 3)
    for source in (LOOKUP, MODEL):
        model.observe(asked(40, 4, 4, 1), source)  # position 2 rejected
    # One failure against the weight carried: the lookup's 2 of 3 kept, the draft model's 4 of 5.
    lookup, draft = model.source(LOOKUP).alpha(2), model.source(MODEL).alpha(2)
    assert lookup == pytest.approx(CARRIED_FREE_DEPTH / (CARRIED_FREE_DEPTH + 1))
    assert draft == pytest.approx(CARRIED_EVIDENCE / (CARRIED_EVIDENCE + 1))
    assert lookup < 0.7 < 0.75 < draft


def test_a_free_source_that_keeps_less_than_it_promised_on_this_text_is_priced_by_what_it_kept(monkeypatch):
    """The winner's curse (CostModel.observe_yield): a lookup whose first token the free judgments
    keep finding (its running mean stays high) but whose own rounds keep none. Checked against its
    own rounds, its alpha_1 is scaled down to what they kept and the draft model gets the rounds;
    unchecked, the running mean keeps it first. A new request is new text: the check starts afresh.
    A lookup whose rounds keep their first token more often than promised is priced up."""
    from specdec.engine.drafters.base import Draft
    v = {n: 1.0 + 0.05 * (n - 1) for n in range(1, 18)}

    def costs_after(own_kept: int) -> CostModel:
        costs = teach(v, c=0.0, alpha=0.65, depth=4, source=LOOKUP)
        costs.sources[MODEL] = teach(v, c=0.04, alpha=0.55, depth=4).sources[MODEL]
        costs.free.add(LOOKUP)
        costs.start_request(evidence=10.0)
        for i in range(1, 5):
            costs.observe(asked(i, 4, 4, own_kept), LOOKUP)  # its own round
            costs.observe(asked(i, 4, 4, 1), MODEL, free={LOOKUP: Draft([0], None)})  # judged kept
        return costs

    best = {}
    for checked in (True, False):
        monkeypatch.setattr(CostModel, "YIELD_CHECKED", checked)
        policy = CostPolicy(k_max=8, costs=costs_after(own_kept=0))
        best[checked] = max(policy.rates(LOOKUP)) > max(policy.rates(MODEL))
    assert best == {True: False, False: True}
    assert policy.costs.source(LOOKUP).alpha(1) > 0.55  # the running mean alone still reads high
    monkeypatch.setattr(CostModel, "YIELD_CHECKED", True)
    costs = costs_after(own_kept=0)
    assert costs.yield_check(LOOKUP).ratio() < 0.55  # four misses where about 0.6 were promised each
    costs.start_request(evidence=10.0)
    assert costs.yield_check(LOOKUP).ratio() == 1.0
    assert costs_after(own_kept=4).yield_check(LOOKUP).ratio() > 1.2


def test_a_drafters_misses_on_one_of_its_sources_price_down_all_of_them(monkeypatch):
    """One yield check per drafter (CostModel.yield_check): token recycling's 4-node tree, carried in
    at 0.8 from a text it copied, keeps nothing in its first four rounds on the new one; its table
    case's 8-node tree, carried in as high and never drafted yet, is then priced below the draft
    model too. Checked one source at a time, that tree starts unscaled and takes the next round."""
    v = {n: 1.0 + 0.05 * (n - 1) for n in range(1, 18)}
    small, other = "recycling:4", "recycling/table:8"
    best = {}
    for shared in (True, False):
        monkeypatch.setattr(CostModel, "YIELD_SHARED", shared)
        costs = teach(v, c=0.0, alpha=0.8, depth=4, source=small)
        costs.sources[other] = teach(v, c=0.0, alpha=0.8, depth=4, source=other).sources[other]
        costs.sources[MODEL] = teach(v, c=0.04, alpha=0.75, depth=4).sources[MODEL]
        costs.free.add(small)
        costs.start_request()
        for i in range(4):
            costs.observe(asked(300 + i, 4, 4, 0), small)
        policy = CostPolicy(k_max=8, costs=costs)
        assert max(policy.rates(small)) < max(policy.rates(MODEL))  # its own misses count either way
        best[shared] = max(policy.rates(other)) > max(policy.rates(MODEL))
        assert costs.source(other).alpha(1) > 0.75  # its own evidence is untouched: only its price moved
    assert best == {True: False, False: True}


def test_a_model_tree_that_keeps_less_than_its_carried_alphas_promise_is_priced_by_what_it_kept(monkeypatch):
    """A draft tree taught on text it drafted well (alpha 0.85), then a new request on which its own
    first three rounds keep nothing: checked against its own rounds (CostModel.yield_checked), the
    draft model's chain gets the next round; unchecked, the carried alphas keep the tree first. A
    chain's rounds are cut by its stop rule, never checked: its misses leave its sums untouched."""
    v = {n: 1.0 + 0.05 * (n - 1) for n in range(1, 18)}
    tree = "draft-tree:16"
    best = {}
    for checked in (True, False):
        monkeypatch.setattr(CostModel, "YIELD_CHECKED_TREES", checked)
        costs = teach(v, c=0.1, alpha=0.85, depth=4, source=tree)
        costs.sources[MODEL] = teach(v, c=0.05, alpha=0.55, depth=4).sources[MODEL]
        costs.start_request(evidence=8.0)  # a prior heavy enough to keep the tree first unchecked
        for i in range(3):
            costs.observe(asked(300 + i, 4, 16, 0), tree)
            costs.observe(asked(300 + i, 4, 4, 0), MODEL)
        policy = CostPolicy(k_max=8, costs=costs)
        best[checked] = max(policy.rates(tree)) > max(policy.rates(MODEL))
        assert costs.source(tree).alpha(1) > 0.55  # its mean alone, 8 carried rounds against 3
        assert costs.yield_check(MODEL).promised == 0.0
    assert best == {True: False, False: True}


def test_round_0_acceptance_is_not_the_texts(monkeypatch):
    """Round 0 opens the answer: neither the drafting source's acceptance nor a free source's first
    token learns from it, whichever way it went; from round 1 on both do. OPENING_EVIDENCE (the A/B's
    other lane, docs/bench-auto/opening_ab.py) learns round 0's acceptance as any other round's."""
    from specdec.engine.drafters.base import Draft

    free = {"prompt-lookup": Draft([9, 9], None)}
    for opening_evidence in (False, True):
        monkeypatch.setattr(CostModel, "OPENING_EVIDENCE", opening_evidence)
        model = CostModel(decay=1.0, prior_weight=0.0)
        model.observe(rnd(0, 4, 0, draft_s=9.0, verify_s=9.0), MODEL, free)  # a miss opening the answer
        learned = [model.source(MODEL).alpha(1), model.source("prompt-lookup").alpha(1)]
        assert learned == ([0.0, 0.0] if opening_evidence else [None, None])
        assert model.is_free("prompt-lookup")  # known free from round 0 on: it takes no measuring round
        model.observe(rnd(1, 4, 2), MODEL, free)
        assert model.source(MODEL).alpha(1) == (0.5 if opening_evidence else 1.0)
        assert model.source("prompt-lookup").alpha(1) == 0.0  # round 1's first token was not 9
