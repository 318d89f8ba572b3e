"""Drafts end at EOS: nothing after one can be kept, so drafting or verifying it is wasted work.

Model drafters stop drafting after an EOS, the draft tree does not grow below one, and the engine
cuts any other chain (prompt lookup copying a turn's end) after its first. Greedy output stays
token-identical to standard decoding, and sampled output keeps the target's distribution (a
chi-square over the first two tokens, EOS ending a run after one, with a power check)."""
import pytest
import torch

from chi_square import chi_square, critical, joint
from helpers import perturbed, tiny_model
from specdec import CachedModel, ModelDrafter, PromptLookupDrafter, Sampling, Speculation, speculative_decode, \
    standard_decode
from specdec.engine.config import TreeShape
from specdec.engine.drafters import DraftTreeDrafter, SelfDrafter
from specdec.engine.drafters.base import Draft, DrafterBase

GREEDY = Sampling()
PROMPT = [5, 9, 14, 3, 27, 9, 14, 3, 40, 9, 14]  # repeats itself, so prompt lookup drafts


@pytest.fixture(scope="module")
def target():
    return tiny_model("qwen2", seed=7)


def std(target, prompt, max_new, eos=(), sampling=GREEDY):
    return [e.token for e in standard_decode(CachedModel(target), prompt, sampling, max_new, eos)]


@pytest.mark.parametrize("kind", ["model", "self"])
def test_a_model_draft_ends_at_eos(target, kind):
    def drafter(eos_ids=frozenset()):
        if kind == "self":
            return SelfDrafter(CachedModel(target), (0,), eos_ids=eos_ids)
        return ModelDrafter(perturbed(target, 0.0), target.vocab_size, eos_ids=eos_ids)

    whole = drafter().propose(PROMPT, 8, GREEDY, None)
    eos = whole.tokens[2]
    cut = whole.tokens.index(eos) + 1
    ending = drafter(frozenset({eos})).propose(PROMPT, 8, GREEDY, None)
    assert len(whole.tokens) == 8 and ending.tokens == whole.tokens[:cut]
    assert len(ending.confidences) == cut and ending.logits.shape[0] == cut


def test_a_draft_tree_does_not_grow_below_eos(target):
    drafter = DraftTreeDrafter(perturbed(target, 0.05), target.vocab_size, TreeShape(24, 3))
    grown = drafter.propose(PROMPT, 5, GREEDY, None).tree
    eos = grown.tokens[0]  # the likeliest first token: the tree grows below it unless it is an EOS
    assert any(parent == 0 for parent in grown.parents)
    ending = DraftTreeDrafter(perturbed(target, 0.05), target.vocab_size, TreeShape(24, 3), eos_ids=frozenset({eos}))
    tree = ending.propose(PROMPT, 5, GREEDY, None).tree
    assert not any(parent >= 0 and tree.tokens[parent] == eos for parent in tree.parents)
    assert len(tree) > 3  # it still grew below the other first tokens


class Oracle(DrafterBase):
    """Drafts the target's own greedy run without EOS (a copy of text that goes on past the turn's end)."""

    name = "oracle"

    def __init__(self, prompt, run):
        self.prompt, self.run = prompt, run

    def propose(self, ids, k, sampling, generator, source=None):
        done = len(ids) - len(self.prompt)
        return Draft(self.run[done:done + k], None)


def test_the_engine_cuts_any_chain_after_its_first_eos(target):
    free = std(target, PROMPT, 40)
    eos = free[5]
    expected = free[: free.index(eos) + 1]
    rounds = list(speculative_decode(CachedModel(target), Oracle(PROMPT, free), PROMPT, Speculation(k=8), GREEDY,
                                     40, [eos]))
    assert [t for r in rounds for t in r.tokens] == expected
    assert len(rounds) == 1 and rounds[0].drafted == tuple(expected)  # cut after EOS: 6 tokens of 8 verified
    q = torch.eye(6)[[1, 2, 3, 4]]
    draft = Draft([1, 2, 3, 4], q, confidences=(0.9, 0.8, 0.7, 0.6))
    cut = draft.through_eos({2})
    assert cut.tokens == [1, 2] and torch.equal(cut.q, q[:2]) and cut.confidences == (0.9, 0.8)
    assert draft.through_eos({5}) is draft and draft.through_eos(frozenset()) is draft


@pytest.mark.parametrize("kind", ["model", "self", "tree", "lookup"])
def test_greedy_output_with_eos_in_the_drafts_is_standard(target, kind):
    free = std(target, PROMPT, 60)
    # The target's commonest token in a free run: drafts meet it often, mid-chain and mid-tree.
    eos = max(set(free), key=free.count)
    expected = std(target, PROMPT, 60, [eos])
    assert len(expected) < 60 and expected[-1] == eos
    eos_ids = frozenset({eos})
    drafter = {"model": lambda: ModelDrafter(perturbed(target, 0.03), target.vocab_size, eos_ids=eos_ids),
               "self": lambda: SelfDrafter(CachedModel(target), (0,), eos_ids=eos_ids),
               "tree": lambda: DraftTreeDrafter(perturbed(target, 0.03), target.vocab_size, TreeShape(16, 3),
                                                eos_ids=eos_ids),
               "lookup": PromptLookupDrafter}[kind]()
    for prompt in (PROMPT, PROMPT + expected + PROMPT):  # the second holds an answer, its EOS and more
        want = std(target, prompt, 60, [eos])
        rounds = list(speculative_decode(CachedModel(target), drafter, prompt, Speculation(k=6), GREEDY, 60, [eos]))
        assert [t for r in rounds for t in r.tokens] == want
        for r in rounds:  # no chain goes on past an EOS; no tree node hangs below one
            if r.tree is None:
                assert eos not in r.drafted[:-1]
            else:
                assert not any(p >= 0 and r.tree.tokens[p] == eos for p in r.tree.parents)


VOCAB, RUNS = 8, 2000
SMALL_PROMPT = [3, 5, 7, 3, 5, 6, 4, 3, 5]  # ends in a repeated bigram


def test_sampling_with_eos_drafts_matches_the_target():
    """EOS is the target's likeliest first token, so drafts of 3 hold it often and are cut there."""
    target = tiny_model("llama", seed=21, vocab=VOCAB, hidden=32)
    draft = perturbed(target, 0.5, seed=4)
    sampling = Sampling(temperature=1.0)
    exact = joint(target, sampling, SMALL_PROMPT, VOCAB)
    eos = int(exact.sum(1).argmax())
    lane, drafter = CachedModel(target), ModelDrafter(draft, VOCAB, eos_ids=frozenset({eos}))
    counts = torch.zeros(VOCAB, VOCAB)
    cut = 0
    for seed in range(RUNS):
        s = Sampling(sampling.temperature, seed=seed)
        rounds = list(speculative_decode(lane, drafter, SMALL_PROMPT, Speculation(k=3), s, 3, [eos]))
        tokens = [t for r in rounds for t in r.tokens]
        counts[tokens[0], tokens[1] if tokens[0] != eos else 0] += 1  # a run ended by EOS: one cell
        cut += any(eos in r.drafted and len(r.drafted) < r.k for r in rounds)
    assert cut > RUNS // 20  # drafts really were cut at EOS, often

    for model, fits in ((target, True), (draft, False)):  # the draft's own distribution must be told apart
        stat, dof = chi_square(counts, ending_at(joint(model, sampling, SMALL_PROMPT, VOCAB), eos), RUNS)
        assert (stat < critical(dof)) == fits, (model is target, stat, dof)


def ending_at(probs: torch.Tensor, eos: int) -> torch.Tensor:
    """P(y1, y2) where a first EOS ends the run: its row collapses into one cell, (eos, 0)."""
    ended = probs.clone()
    ended[eos] = 0.0
    ended[eos, 0] = probs[eos].sum()
    return ended
