"""A chain round of the draft model also tests the draft tree of the same model at its first position
(Draft.tree_roots, CostModel.observe_tree_roots): the tree's root children are the draft's likeliest
tokens there, read off the chain's own first distribution. These tests check that those are the
children a real tree round proposes (greedy and sampled), that the mixed drafter marks only its chain's
rounds, that the cost model learns the verdict once a round and nothing else, and that greedy output
is unchanged."""
import pytest
import torch

from helpers import perturbed, tiny_model
from specdec.engine.config import Sampling, Speculation, TreeShape
from specdec.engine.decoding import speculative_decode, standard_decode
from specdec.engine.drafters import make_drafter
from specdec.engine.events import RoundEvent
from specdec.engine.kvcache import CachedModel
from specdec.engine.policy import CostModel, CostPolicy
from specdec.engine.tree_verify import ROOT

pytestmark = pytest.mark.usefixtures("one_thread")
SAMPLED = Sampling(temperature=0.9, top_k=20, top_p=0.9, seed=3)


def mixed_pair(shape=TreeShape(16, 4)):
    target = tiny_model("llama", seed=3)
    lane = CachedModel(target)
    drafter = make_drafter("mixed", perturbed(target, 0.05, seed=4), target.vocab_size, target=lane, tree=shape)
    return lane, drafter


def depth_one(draft) -> tuple[int, ...]:
    return tuple(token for token, parent in zip(draft.tree.tokens, draft.tree.parents) if parent == ROOT)


@pytest.mark.parametrize("sampling", [Sampling(), SAMPLED], ids=["greedy", "sampled"])
def test_a_chain_rounds_tree_roots_are_the_children_a_tree_round_proposes(sampling):
    """At states along a text, the chain's tree_roots equal the depth-1 nodes of the tree the tree
    source proposes at the same state (the tiny tree keeps every root child: budget 16, branching 4)."""
    _, drafter = mixed_pair()
    ids = torch.randint(3, 96, (10,), generator=torch.Generator().manual_seed(2)).tolist()
    generator = torch.Generator().manual_seed(0)
    for step in range(6):
        chain = drafter.propose(ids, 3, sampling, generator, "draft-model")
        tree = drafter.propose(ids, 3, sampling, generator, "draft-tree:16")
        assert chain.tree_roots is not None and chain.tree_roots[0] == "draft-tree:16"
        assert chain.tree_roots[1] == depth_one(tree)
        assert len(chain.tree_roots[1]) == 4
        assert chain.tree_roots[1][0] == chain.tokens[0] or not sampling.greedy  # greedy: its argmax first
        ids = ids + [chain.tokens[0], 7 + step]


def test_a_smaller_budget_roots_fewer_children():
    _, drafter = mixed_pair(TreeShape(2, 4))
    ids = list(range(5, 17))
    chain = drafter.propose(ids, 3, Sampling(), None, "draft-model")
    tree = drafter.propose(ids, 1, Sampling(), None, "draft-tree:2")
    assert chain.tree_roots == ("draft-tree:2", depth_one(tree)) and len(depth_one(tree)) == 2


def test_only_the_chain_of_the_trees_model_carries_roots():
    lane, drafter = mixed_pair()
    ids = [5, 9, 14, 5, 9, 14, 22, 31, 5, 9]
    assert drafter.propose(ids, 3, Sampling(), None, "draft-tree:16").tree_roots is None
    assert drafter.propose(ids, 3, Sampling(), None, "prompt-lookup").tree_roots is None
    alone = make_drafter("draft-model", perturbed(lane.model, 0.05, seed=4), lane.model.vocab_size)
    assert alone.propose(ids, 3, Sampling(), None).tree_roots is None  # no tree to stand for


def chain_round(tokens, accepted, roots, i=1):
    drafted = tuple(range(50, 53))
    fates = ("accepted",) * accepted + ("corrected" if accepted < 3 else "bonus",)
    return RoundEvent(i, 3, drafted, accepted, tuple(tokens), fates, 0.03, 0.3, (), False, "draft-model",
                      confidences=(0.9, 0.8, 0.7), tree_roots=("draft-tree:16", roots))


def test_the_tree_learns_its_first_position_from_a_chain_round_and_nothing_else():
    model = CostModel(decay=1.0, prior_weight=0.0)
    model.observe(chain_round((60,), 0, (61, 60, 62, 63)), "draft-model")  # the chain missed, a sibling holds it
    tree = model.source("draft-tree:16")
    assert [k.mean for k in tree.kept] == [1.0] and tree.kept[0].weight == 1
    assert tree.draft.mean is None and tree.width.mean is None  # its cost and width: its own rounds only
    model.observe(chain_round((50, 51, 52, 53), 3, (50, 64, 65, 66), 2), "draft-model")
    model.observe(chain_round((70,), 0, (50, 64, 65, 66), 3), "draft-model")  # the target's token is no root
    assert tree.kept[0].mean == pytest.approx(2 / 3) and len(tree.kept) == 1  # position 1 only
    assert model.source("draft-model").kept[0].mean == pytest.approx(1 / 3)  # the chain's own verdicts


def test_a_tree_thin_behind_one_round_follows_the_chain_rounds_of_the_text():
    """The policy's draw of the tree's alpha_1 moves to what the chain rounds show: a tree measured once
    at 1.0 is priced at the rate its roots hold the target's token, not at one observation's draw."""
    model = CostModel(decay=0.9)
    model.source("draft-tree:16").observe(4, 4, 0.05)
    policy = CostPolicy(k_max=8, costs=model)
    assert model.position_alphas("draft-tree:16", 1)[0] == pytest.approx(2 / 3)  # one round, the prior's 2 at 0.5
    assert max(policy.draw_alpha_1("draft-tree:16") for _ in range(50)) > 0.9  # so thin, a draw can promise anything
    for i in range(20):
        model.observe(chain_round((70 + i,), 0, (50, 64, 65, 66), i + 1), "draft-model")
    assert model.position_alphas("draft-tree:16", 1)[0] < 0.3
    assert max(policy.draw_alpha_1("draft-tree:16") for _ in range(50)) < 0.5


@pytest.mark.parametrize("sampling", [Sampling(), SAMPLED], ids=["greedy", "sampled"])
def test_auto_with_tree_roots_keeps_greedy_output_and_learns_the_tree(sampling):
    lane, drafter = mixed_pair(TreeShape(8, 2))
    prompt = [5, 9, 14, 5, 9, 14, 22, 31, 5, 9, 14]
    policy = CostPolicy(k_max=8, costs=CostModel())
    rounds = list(speculative_decode(lane, drafter, prompt, Speculation(policy="cost", k=4, k_max=8),
                                     sampling, 40, policy=policy))
    chained = [r for r in rounds if r.source == "draft-model"]
    assert chained and all(r.tree_roots[0] == "draft-tree:8" for r in chained)
    assert policy.costs.source("draft-tree:8").kept[0].weight > 0
    if sampling.greedy:
        plain = [e.token for e in standard_decode(lane, prompt, sampling, 40)]
        assert [t for r in rounds for t in r.tokens] == plain
