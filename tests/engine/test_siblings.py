"""A greedy model chain with its second choice as a leaf (confidence.StopRule.sibling): where the
rule adds one, at which position, exactness under a sibling every round, sampled rounds left as
chains, and a sibling round teaching the cost model exactly what the chain alone would have."""
import pytest

from helpers import chain_round as timed_round, perturbed, tiny_model
from specdec.engine.config import Sampling, Speculation, TreeShape
from specdec.engine.confidence import StopRule
from specdec.engine.decoding import speculative_decode, standard_decode
from specdec.engine.drafters import ModelDrafter, make_drafter
from specdec.engine.events import ACCEPTED, BONUS, CORRECTED, RoundEvent, TreeRound
from specdec.engine.kvcache import CachedModel
from specdec.engine.policy import Choice, CostModel, CostPolicy, chain_verdict

pytestmark = pytest.mark.usefixtures("one_thread")
PROMPT = [5, 9, 14, 5, 9, 14, 22, 31, 5, 9, 14]
MODEL = "draft-model"


def rule(pass_seconds, siblings=True, horizon=4):
    """Acceptance read as the confidence itself; no draft or overhead cost: only v(n) decides."""
    return StopRule(lambda c: c, (0.9,), 0.0, pass_seconds, horizon=horizon, siblings=siblings)


# 1. Where the rule adds a sibling ---------------------------------------------------------------

CONFIDENCES, SECONDS = (0.9, 0.5, 0.95), (0.05, 0.4, 0.03)
# P(sibling i kept) = s_{i-1} (1 - a(c_i)) q2_i / (1 - q1_i): 0.05, 0.36, 0.0135; E_3 = 1 + 0.9 + 0.45 + 0.4275
KEPT, EXPECTED = (1 * 0.1 * 0.5, 0.9 * 0.5 * 0.8, 0.45 * 0.05 * 0.6), 1 + 0.9 + 0.45 + 0.4275


def test_a_free_row_takes_the_sibling_likeliest_to_be_kept():
    assert rule(lambda n: 1.0).sibling(CONFIDENCES, SECONDS) == 1  # the unsure second token, not the first


def test_the_sibling_is_added_exactly_while_its_tokens_pay_for_the_wider_pass():
    """(E + kept) / v(5) > E / v(4) with v(4) = 1: the row is worth it below v(5) = 1 + kept / E."""
    break_even = 1 + KEPT[1] / EXPECTED
    assert rule(lambda n: 1.0 if n <= 4 else break_even - 1e-6).sibling(CONFIDENCES, SECONDS) == 1
    assert rule(lambda n: 1.0 if n <= 4 else break_even + 1e-6).sibling(CONFIDENCES, SECONDS) is None


def test_no_sibling_when_the_rule_prices_none_or_the_draft_gives_the_second_choice_nothing():
    assert rule(lambda n: 1.0, siblings=False).sibling(CONFIDENCES, SECONDS) is None
    assert rule(lambda n: 1.0).sibling(CONFIDENCES, (0.0, 0.0, 0.0)) is None
    assert rule(lambda n: 1.0).sibling((), ()) is None


# 2. Exactness, a sibling every round it can -----------------------------------------------------

class Siblings:
    """A scripted policy: k = 4 from the given source (or each in turn) every round; the draft model's
    stop rule never stops early and prices every pass alike, so its greedy chain adds a sibling each round."""

    name = "scripted"

    def __init__(self, which=0):
        self.which, self.round, self.stop = which, 0, rule(lambda n: 1.0)

    def choose(self, sources):
        self.round += 1
        index = (self.round if self.which == "alternate" else self.which) % len(sources)
        return Choice(4, sources[index], stop=self.stop if sources[index] == MODEL else None)  # (as the cost
        # policy's: only a model chain reads a stop rule)

    def observe(self, round, source, free=None):
        pass


def sibling_kept(round: RoundEvent) -> bool:
    return round.tree is not None and len(round.tree.tokens) - 1 in round.tree.path


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_greedy_output_is_the_targets_with_a_sibling_every_round(arch):
    kept = 0
    for seed in range(3):
        target = tiny_model(arch, seed=7 + seed)
        draft = perturbed(target, 0.3, seed=seed)
        expected = [e.token for e in standard_decode(CachedModel(target), PROMPT, Sampling(), 40)]
        lane = CachedModel(target)
        rounds = list(speculative_decode(lane, ModelDrafter(draft, target.vocab_size, siblings=True), PROMPT,
                                         Speculation(k=4), Sampling(), 40, policy=Siblings()))
        assert [t for r in rounds for t in r.tokens] == expected
        assert all(r.tree is not None and r.tree.chain == MODEL for r in rounds if r.drafted)
        kept += sum(map(sibling_kept, rounds))
        for r in filter(sibling_kept, rounds):  # the sibling is shown as kept, the target's token after it a bonus
            assert r.fates[-2:] == (ACCEPTED, BONUS)
    assert kept > 0  # the sibling was really taken, and the caches rolled to its path


def test_greedy_output_is_the_targets_with_siblings_among_every_other_source():
    target = tiny_model("llama", seed=7)
    expected = [e.token for e in standard_decode(CachedModel(target), PROMPT, Sampling(), 40)]
    lane = CachedModel(target)
    drafter = make_drafter("mixed", perturbed(target, 0.3), target.vocab_size, target=lane, tree=TreeShape(8, 2))
    rounds = list(speculative_decode(lane, drafter, PROMPT, Speculation(k=4), Sampling(), 40,
                                     policy=Siblings("alternate")))
    assert [t for r in rounds for t in r.tokens] == expected
    assert any(r.tree is not None and r.tree.chain == r.source == MODEL for r in rounds)


def test_a_sampled_chain_adds_no_sibling():
    target = tiny_model("llama", seed=7)
    drafter = ModelDrafter(perturbed(target, 0.3), target.vocab_size, siblings=True)
    rounds = list(speculative_decode(CachedModel(target), drafter, PROMPT, Speculation(k=4),
                                     Sampling(temperature=0.8, seed=3), 30, policy=Siblings()))
    assert rounds and all(r.tree is None for r in rounds)
    assert all(r.tree is None for r in speculative_decode(  # nor without a target that verifies trees
        CachedModel(target), ModelDrafter(perturbed(target, 0.3), target.vocab_size), PROMPT, Speculation(k=4),
        Sampling(), 30, policy=Siblings()))


# 3. What the cost model learns from a sibling round ---------------------------------------------

CHAIN, CHAIN_CONFIDENCES = (10, 11, 12, 13), (0.9, 0.8, 0.5, 0.7)


def chain_round(accepted: int) -> RoundEvent:
    fates = (ACCEPTED,) * accepted + ((BONUS,) if accepted == len(CHAIN) else (CORRECTED,))
    return RoundEvent(1, 4, CHAIN, accepted, CHAIN[:accepted] + (99,), fates, 0.04, 0.2, (), False, MODEL,
                      confidences=CHAIN_CONFIDENCES)


def sibling_round(path: tuple[int, ...], at: int = 2) -> RoundEvent:
    """The chain with a sibling (token 20) beside its node `at`, the target keeping `path`."""
    tree = TreeRound(CHAIN + (20,), (-1, 0, 1, 2, at - 1), path, chain=MODEL)
    tokens = tuple(tree.tokens[n] for n in path) + (99,)
    return RoundEvent(1, 4, tree.tokens, len(path), tokens, (ACCEPTED,) * len(path) + (BONUS,), 0.04, 0.2, (),
                      False, MODEL, tree=tree, confidences=CHAIN_CONFIDENCES)


def learned(round: RoundEvent) -> dict:
    costs = CostModel()
    costs.observe(round, MODEL)
    source = costs.source(MODEL).to_json()
    return {key: source[key] for key in ("draft", "kept", "calibration", "after")} | \
        {"shift": costs.source(MODEL).text.delta}


@pytest.mark.parametrize("path, chain_kept", [
    ((0, 1, 4), 2),  # the chain's third token rejected, its sibling kept
    ((0, 1), 2),  # rejected there, and the sibling too
    ((0, 1, 2, 3), 4),  # the whole chain kept: the sibling never mattered
    ((), 0),  # the first token rejected
])
def test_a_sibling_round_teaches_the_chain_what_the_chain_alone_would_have(path, chain_kept):
    sibling = sibling_round(path)
    assert chain_verdict(sibling, MODEL) == (len(CHAIN), chain_kept)
    assert learned(sibling) == learned(chain_round(chain_kept))


def test_only_a_chains_own_tree_is_read_as_that_chain():
    assert chain_verdict(chain_round(2), MODEL) is None
    assert chain_verdict(sibling_round((0, 1, 4)), "draft-tree:8") is None  # a draft tree's round is its own
    first = sibling_round((4,), at=0)  # a sibling beside the first token, kept
    assert chain_verdict(first, MODEL) == (4, 0)


@pytest.mark.parametrize("siblings", [True, False])
def test_the_cost_policys_stop_rule_prices_a_siblings_row_off_the_table(monkeypatch, siblings):
    """The rule reads v up to the horizon + 2 (a chain drafted to its horizon, plus a sibling), each
    width as measured rather than the widest's, and adds siblings exactly when the policy's flag says."""
    monkeypatch.setattr(CostPolicy, "SIBLINGS", siblings)
    costs = CostModel(decay=1.0)
    for n in range(1, 10):  # passes over 1..9 tokens, each timed twice, dearer the wider
        for i in (1, 2):
            costs.observe(timed_round(i, n - 1, 0, (0.5,) * (n - 1), draft_s=0.01, verify_s=1.0 + 0.02 * n), "timing")
    for i in range(3):  # 12 tested positions: calibrated
        costs.observe(timed_round(10 + i, 4, 3, (0.95, 0.9, 0.97, 0.1), draft_s=0.01, verify_s=1.1), MODEL)
    rule = CostPolicy(k_max=16, costs=costs).stop_rule(MODEL, 6)
    assert rule.siblings is siblings
    assert [rule.pass_seconds(n) for n in (7, 8)] == costs.pass_seconds_many([7, 8])
    assert rule.pass_seconds(8) > rule.pass_seconds(7)  # the sibling's row read, not the widest before it
