"""The mixed drafter (auto's): every source the pair has, one picked each round. Switching between
chains and trees, models and lookups every round changes nothing that is generated."""
import pytest
import torch

from chi_square import chi_square, critical, joint
from helpers import perturbed, tiny_model
from specdec.engine.config import Sampling, Speculation, TreeShape
from specdec.engine.decoding import speculative_decode, standard_decode
from specdec.engine.sources import Source
from specdec.engine.drafters import MixedDrafter, make_drafter
from specdec.engine.kvcache import CachedModel
from specdec.engine.policy import Choice

pytestmark = pytest.mark.usefixtures("one_thread")
PROMPT = [5, 9, 14, 5, 9, 14, 22, 31, 5, 9, 14]


class Cycling:
    """Each round the next source in turn (and k from a cycle, 0 = a plain step): the extreme of
    switching, chosen before the round's draws, as any policy must."""

    name = "cycling"
    wants_free_drafts = True  # the loop asks the free sources each round, as for the cost policy

    def __init__(self, ks=(4, 2, 0, 3, 1, 2)):
        self.round, self.ks, self.used, self.free_seen = 0, ks, {}, 0

    def choose(self, sources):
        """The offered source used least so far (the first of equals): each round another, and one
        offered only now and then (lookup, where the context repeats) is taken when it is."""
        self.round += 1
        source = min(sources, key=lambda s: self.used.get(s, 0))
        self.used[source] = self.used.get(source, 0) + 1
        return Choice(self.ks[self.round % len(self.ks)], source)

    def observe(self, round, source, free=None):
        self.free_seen += len(free or {})


def mixed(target, draft, lane):
    return make_drafter("mixed", draft, target.vocab_size, target=lane, tree=TreeShape(8, 2))


def test_mixed_offers_lookups_only_where_the_context_repeats_and_recycling_where_its_table_has_a_row(llama):
    lane = CachedModel(llama)
    drafter = mixed(llama, perturbed(llama, 0.02), lane)
    assert isinstance(drafter, MixedDrafter)
    # An empty table has no row for the last token: token recycling would draft nothing, so it is not offered.
    assert drafter.sources(PROMPT) == ("prompt-lookup", "lookup-tree:8", "draft-model", "draft-tree:8")
    assert drafter.sources([5, 9, 14, 22]) == ("draft-model", "draft-tree:8")
    drafter.observe([14, 22], torch.randn(2, llama.vocab_size))  # a pass read 14 and 22: their rows fill
    smaller = ("recycling:4", "recycling:2")  # recycling's smaller trees too (no draft model to pay), last
    assert drafter.sources(PROMPT) == ("prompt-lookup", "lookup-tree:8", "draft-model", "draft-tree:8", "recycling:8",
                                       *smaller)
    # 22 never occurred before: the table drafts alone, a case of its own (recycling.py, sources.py).
    table_only = ("recycling/table:8", "recycling/table:4", "recycling/table:2")
    assert drafter.sources([5, 9, 14, 22]) == ("draft-model", "draft-tree:8", *table_only)
    assert drafter.sources([5, 9, 14, 21]) == ("draft-model", "draft-tree:8")  # 21 never read: no row
    alone = make_drafter("mixed", None, llama.vocab_size, target=lane, tree=TreeShape(8, 2))
    assert alone.sources([5, 9, 14, 21]) == ()  # nothing to draft from: the policy decodes plainly
    alone.observe([21], torch.randn(1, llama.vocab_size))
    assert alone.sources([5, 9, 14, 21]) == table_only
    assert alone.propose([5, 9, 14, 21], 2, Sampling(), None, "recycling/table:4").tree is not None
    assert alone.sources(PROMPT) == ("prompt-lookup", "lookup-tree:8")  # 14 not read by this table


def test_prompt_lookups_one_token_match_is_a_case_of_its_own(llama):
    """A copy found by the last token alone is learned apart from one found by 2-3 (lookup.py), and
    routed to prompt lookup by the mixed and the hybrid drafters alike."""
    short = [5, 9, 14, 22, 31, 14]  # only the last token, 14, occurred before
    for drafter in (mixed(llama, perturbed(llama, 0.02), CachedModel(llama)),
                    make_drafter("hybrid", perturbed(llama, 0.02), llama.vocab_size)):
        assert drafter.sources(short)[0] == "prompt-lookup/short"
        assert drafter.sources(PROMPT)[0] == "prompt-lookup"  # 5 9 14 occurred before
        assert drafter.propose(short, 2, Sampling(), None, "prompt-lookup/short").tokens == [22, 31]


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_greedy_stays_exact_when_the_source_changes_every_round(arch):
    target = tiny_model(arch, seed=7)
    draft = perturbed(target, 0.03)
    expected = [e.token for e in standard_decode(CachedModel(target), PROMPT, Sampling(), 48)]
    lane = CachedModel(target)
    policy = Cycling()
    rounds = list(speculative_decode(lane, mixed(target, draft, lane), PROMPT, Speculation(k=4), Sampling(), 48,
                                     policy=policy))
    assert [t for r in rounds for t in r.tokens] == expected
    assert policy.free_seen > 0  # the free sources were asked beside every choice, and changed nothing
    used = {r.source for r in rounds if r.source}
    assert {Source(s).drafter for s in used} == {"prompt-lookup", "lookup-tree", "recycling", "draft-model", "draft-tree"}
    assert len({s for s in used if s.startswith("recycling")}) >= 2  # more than one of its tree sizes


def test_sampling_stays_exact_when_the_source_changes_every_round():
    vocab, runs, prompt = 8, 1500, [3, 5, 7, 3, 5, 6, 4, 3, 5]
    sampling = Sampling(temperature=0.9, top_p=0.95)
    target = tiny_model("llama", seed=21, vocab=vocab, hidden=32)
    draft = perturbed(target, 0.5, seed=4)
    lane = CachedModel(target)
    drafter = mixed(target, draft, lane)
    counts = torch.zeros(vocab, vocab)
    for seed in range(runs):
        s = Sampling(sampling.temperature, sampling.top_k, sampling.top_p, seed)
        policy = Cycling(ks=(2, 1, 0, 2)[seed % 4:] + (2, 1, 0, 2)[: seed % 4])
        tokens = [t for r in speculative_decode(lane, drafter, prompt, Speculation(k=2), s, 3, policy=policy)
                  for t in r.tokens]
        counts[tokens[0], tokens[1]] += 1
    stat, dof = chi_square(counts, joint(target, sampling, prompt, vocab), runs)
    assert stat < critical(dof), (stat, dof)
    wrong, wrong_dof = chi_square(counts, joint(draft, sampling, prompt, vocab), runs)
    assert wrong > critical(wrong_dof), "the test cannot tell the draft's distribution from the target's"


def test_every_drafter_reads_its_options_from_one_object():
    """Issue #19: DrafterOptions gathers what any drafter may read; each registered drafter builds
    from it alone, and one that lacks what it reads says which."""
    from specdec.engine.config import TreeShape
    from specdec.engine.drafters import DRAFTERS, FACTORIES, DrafterOptions, MissingDraftModel, make_drafter
    from specdec.engine.kvcache import CachedModel
    from helpers import tiny_model, word_tokenizer

    model = tiny_model("llama", seed=0)
    tokenizer = word_tokenizer(96)
    options = DrafterOptions(96, tiny_model("llama", seed=1), target=CachedModel(model), layers=(0,),
                             tokenizers=(tokenizer, tokenizer), tree=TreeShape(8, 2))
    assert set(FACTORIES) == set(DRAFTERS)
    for name in DRAFTERS:
        assert make_drafter(name, options).name == name
    assert make_drafter("draft-tree", options).shape == TreeShape(8, 2)
    with pytest.raises(MissingDraftModel, match="the hybrid drafter needs a draft model"):
        make_drafter("hybrid", DrafterOptions(96))
    assert [m.name for m in make_drafter("mixed", DrafterOptions(96)).members] == ["prompt-lookup"]


def test_the_draft_models_chain_and_tree_share_one_cache_so_the_prompt_is_read_once(llama):
    """A tree round reads the prompt into the draft's cache; the chain round after it, on the path
    the tree's first node began, reads nothing again (a cache of its own would read it all)."""
    from specdec.engine.drafters import DraftTreeDrafter, ModelDrafter

    drafter = mixed(llama, perturbed(llama, 0.02), CachedModel(llama))
    chain = next(m for m in drafter.members if isinstance(m, ModelDrafter))
    tree = next(m for m in drafter.members if isinstance(m, DraftTreeDrafter))
    assert chain.draft is tree.draft
    grown = drafter.propose(PROMPT, 3, Sampling(), None, "draft-tree:8")
    assert grown.catch_up == len(PROMPT)  # the request's first draft reads the prompt
    ids = PROMPT + [grown.tokens[0]]
    assert drafter.propose(ids, 2, Sampling(), None, "draft-model").catch_up == 0
    assert drafter.propose(ids + [7, 9], 2, Sampling(), None, "draft-tree:8").catch_up <= 2
    with pytest.raises(ValueError, match="same model"):
        DraftTreeDrafter(perturbed(llama, 0.5), llama.vocab_size, cache=chain.draft)
