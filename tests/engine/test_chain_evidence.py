"""A greedy draft tree's likeliest path is the chain's draft (events.TreeRound.as_chain), so each
round of the tree teaches the draft-model chain of the same model (CostModel.observe_chain). These
tests check the verdict on hand-built trees, that it is the chain's own verdict on real draft trees
and chains of one tiny model, that the cost model learns it (and only greedy), and that prompt
lookup, like a tree, shows its depth again on each request (CostPolicy.depth_reach)."""
import pytest
import torch

from helpers import perturbed, tiny_model, tree_round
from specdec import Sampling
from specdec.engine.drafters import DraftTreeDrafter, ModelDrafter
from specdec.engine.config import TreeShape
from specdec.engine.events import RoundEvent, TreeRound
from specdec.engine.policy import CostModel, CostPolicy
from specdec.engine.tree_verify import ROOT

pytestmark = pytest.mark.usefixtures("one_thread")

# Root children 0 (likelier) and 1; node 0's children 2 and 3 (likelier); node 3's child 4 (a leaf).
PARENTS = (ROOT, ROOT, 0, 0, 3)
REACH = (0.6, 0.3, 0.2, 0.36, 0.18)


@pytest.mark.parametrize("path, verdict", [
    ((0, 3, 4), (3, 3)),  # the likeliest path to its leaf: all kept, nothing deeper tried
    ((0, 3), (3, 2)),  # the target's next token is not node 4: rejected at depth 3
    ((0, 2), (2, 1)),  # the path leaves the likeliest child at depth 2
    ((1,), (1, 0)),  # a less likely root child: the chain's first token is rejected
    ((), (1, 0)),  # no node kept
])
def test_the_likeliest_path_is_read_as_a_chain(path, verdict):
    depth, accepted, confidences = TreeRound(tuple(range(10, 15)), PARENTS, path, REACH).as_chain()
    assert (depth, accepted) == verdict
    assert confidences == pytest.approx((0.6, 0.6, 0.5)[:depth])  # each reach over its parent's


def test_a_tree_without_reach_reads_as_no_chain():
    assert TreeRound(tuple(range(10, 15)), PARENTS, (0, 3)).as_chain() == (0, 0, ())


def greedy_continuation(target, ids: list[int], n: int) -> list[int]:
    out = list(ids)
    with torch.no_grad():
        for _ in range(n):
            out.append(int(target(torch.tensor([out])).logits[0, -1].argmax()))
    return out[len(ids):]


def test_a_real_draft_trees_verdict_is_its_chains_own():
    """From states along a text: the greedy tree's likeliest path holds the chain's tokens, and the
    verdict read off the tree's greedy path (the target's argmax at each depth among the children)
    is the one the chain's own greedy verification gives."""
    target = tiny_model("llama", seed=3)
    draft = perturbed(target, 0.02, seed=4)
    tree_drafter = DraftTreeDrafter(draft, target.vocab_size, TreeShape(12, 3), chain="draft-model")
    chain_drafter = ModelDrafter(draft, target.vocab_size, max_guesses=0)
    prompt = torch.randint(3, 96, (12,), generator=torch.Generator().manual_seed(1)).tolist()
    text = prompt + greedy_continuation(target, prompt, 24)
    kinds = set()
    for end in range(len(prompt), len(text) - 8, 2):
        ids = text[:end]
        tree_draft = tree_drafter.propose(ids, 6, Sampling(), None)
        assert tree_draft.chain == "draft-model"
        truth = text[end:end + 8]  # the target's greedy tokens after ids
        path, node = [], ROOT
        for token in truth:  # greedy tree verification: follow the child that is the target's token
            child = next((n for n, p in enumerate(tree_draft.tree.parents)
                          if p == node and tree_draft.tokens[n] == token), None)
            if child is None:
                break
            path.append(child)
            node = child
        depth, accepted, confidences = TreeRound(tuple(tree_draft.tokens), tree_draft.tree.parents, tuple(path),
                                                 tree_draft.reach).as_chain()
        chain = chain_drafter.propose(ids, depth, Sampling(), None)
        kept = next((j for j, (a, b) in enumerate(zip(chain.tokens, truth)) if a != b), depth)
        assert accepted == kept
        assert confidences == pytest.approx(chain.confidences, abs=1e-4)
        kinds.add("all kept" if accepted == depth else "rejected")
    assert kinds == {"all kept", "rejected"}  # both verdicts were checked


def test_only_a_greedy_tree_stands_for_the_chain():
    target = tiny_model("llama", seed=3)
    drafter = DraftTreeDrafter(perturbed(target, 0.02, seed=4), target.vocab_size, TreeShape(8, 2), chain="draft-model")
    ids = list(range(5, 17))
    assert drafter.propose(ids, 4, Sampling(), None).chain == "draft-model"
    assert drafter.propose(ids, 4, Sampling(temperature=0.7, seed=1), torch.Generator().manual_seed(0)).chain is None
    assert DraftTreeDrafter(drafter.draft.model, target.vocab_size).propose(ids, 4, Sampling(), None).chain is None


def test_a_tree_round_teaches_the_chain_its_verdict_and_confidences_not_its_cost():
    model = CostModel(decay=1.0, prior_weight=0.0)
    model.observe(tree_round(1, TreeRound(tuple(range(10, 15)), PARENTS, (0, 2), REACH, chain="draft-model"), "draft-tree:8"),
                  "draft-tree:8")
    chain = model.source("draft-model")
    assert [k.mean for k in chain.kept] == [1.0, 0.0]  # kept at depth 1, rejected at depth 2
    assert chain.calibration.evidence == 2 and chain.draft.mean is None
    assert "draft-model" in model.observed
    other = CostModel(decay=1.0, prior_weight=0.0)
    other.observe(tree_round(1, TreeRound(tuple(range(10, 15)), PARENTS, (0, 2), REACH), "draft-tree:8"), "draft-tree:8")
    assert "draft-model" not in other.sources  # no chain named: nothing learned for one


def test_prompt_lookup_shows_its_depth_again_on_each_request_a_model_chain_does_not():
    """Prompt lookup's deep positions are learned on text that copies; a new request starts it at
    MIN_REACH, and each round that tests its depth doubles the reach. The draft model keeps its
    carried reach (its draft stops on its own confidence)."""
    model = CostModel(decay=1.0)
    for name in ("prompt-lookup", "draft-model"):
        for i in range(3):
            model.observe(RoundEvent(10 + i, 16, tuple(range(16)), 16, tuple(range(17)), ("accepted",) * 16 + ("bonus",),
                                     0.01, 0.3, (), False), name)
    model.free.add("prompt-lookup")  # the loop asks it for free drafts (observe_free)
    policy = CostPolicy(k_max=32, costs=model)
    assert policy.depth_reach("prompt-lookup") == policy.depth_reach("draft-model") == 32
    model.start_request()
    assert policy.depth_reach("prompt-lookup") == CostPolicy.MIN_REACH
    assert policy.depth_reach("draft-model") == 32
    model.observe(RoundEvent(20, 4, (1, 2, 3, 4), 4, (1, 2, 3, 4, 5), ("accepted",) * 4 + ("bonus",), 0.0, 0.2, (),
                             False), "prompt-lookup")
    assert policy.depth_reach("prompt-lookup") == 8
