"""Nested trees: a drafter whose smaller budget's tree is its bigger tree's first nodes (token
recycling's best-first growth, lookup-tree's budget-cut trie) lets one verified round teach the cost
policy every smaller budget (events.TreeRound.first, CostModel.observe_smaller_trees). These tests
check the three things that rest on: the trees are nested; the first nodes accept, greedy, exactly
what the smaller tree accepts when verified itself, and sampled, with the smaller tree's own
distribution (exact enumeration against seeded draws, with a power check); and the cost model
learns each smaller budget from it and nothing else."""
from dataclasses import replace

import pytest
import torch

from chi_square import chi_square, critical
from helpers import tiny_model, tree_round
from specdec import CachedModel, Sampling, Speculation, speculative_decode
from specdec.engine.config import TreeShape
from specdec.engine.drafters import LookupTreeDrafter, make_drafter
from specdec.engine.events import RoundEvent, TreeRound
from specdec.engine.policy import CostModel
from specdec.engine.sources import Source
from specdec.engine.tree_verify import ROOT, Tree, accept_greedy, accept_sampled

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: faster on one thread

BUDGETS = (1, 2, 3, 4, 8, 15)


def contexts(n: int, vocab: int = 96) -> list[list[int]]:
    """Token sequences with repeats (so lookup and the context match) and fresh tokens."""
    g = torch.Generator().manual_seed(5)
    out = []
    for i in range(n):
        body = torch.randint(3, vocab, (6 + i,), generator=g).tolist()
        out.append(body + body[: 2 + i % 3] + body[1:4] + body[: 2 + i % 2])
    return out


@pytest.fixture(scope="module")
def warm_recycling():
    """A tiny target, a recycling drafter whose table its own decoding filled, and states along
    that decoding (where the table's rows are the target's own guesses, so paths run deep)."""
    target = tiny_model("llama", seed=7)
    drafter = make_drafter("recycling", None, target.vocab_size, tree=TreeShape(16, 4))
    states = []
    for prompt in contexts(3):
        rounds = speculative_decode(CachedModel(target), drafter, prompt, Speculation(k=5), Sampling(), 60)
        tokens = [t for r in rounds for t in r.tokens]
        states += [prompt + tokens[:j] for j in range(4, 40, 5)]
    return target, drafter, states


def test_recycling_and_lookup_trees_are_nested(warm_recycling):
    """The tree a smaller budget proposes is the bigger tree's first nodes, from the same state."""
    _, recycling, states = warm_recycling
    lookup = LookupTreeDrafter(TreeShape(16, 4))
    checked = 0
    for drafter in (recycling, lookup):
        for ids in states:
            big = drafter.propose(ids, 5, Sampling(), None, f"{drafter.name}:16")
            if big.tree is None:
                continue
            assert big.nested
            for b in BUDGETS:
                small = drafter.propose(ids, 5, Sampling(), None, f"{drafter.name}:{b}")
                assert small.tree.tokens == big.tree.tokens[:b] and small.tree.parents == big.tree.parents[:b]
                checked += 1
    assert checked > 40


def verified(target, ids: list[int], tree: Tree) -> tuple[int, ...]:
    """The greedy path the target accepts in tree, from a fresh cache."""
    return accept_greedy(tree, CachedModel(target).verify_tree(ids, tree).argmax(-1)).path


def test_greedy_first_nodes_accept_what_the_smaller_tree_accepts(warm_recycling):
    target, drafter, states = warm_recycling
    seen = {"cut short": 0, "same": 0}
    for ids in states:
        big = drafter.propose(ids, 5, Sampling(), None, "recycling:16")
        path = verified(target, ids, big.tree)
        whole = TreeRound(big.tree.tokens, big.tree.parents, path, nested=True)
        for b in BUDGETS:
            small = drafter.propose(ids, 5, Sampling(), None, f"recycling:{b}")
            first = whole.first(b)
            assert first.path == verified(target, ids, small.tree)
            assert (first.tokens, first.parents) == (small.tree.tokens, small.tree.parents)
            seen["cut short" if len(first.path) < len(path) else "same"] += 1
    assert seen["cut short"] > 0 and seen["same"] > 0  # both cases exercised


def test_only_a_nested_tree_has_first_nodes():
    with pytest.raises(ValueError, match="nested"):
        TreeRound((1, 2), (-1, 0), (0,)).first(1)


# A fixed "top" tree over a vocabulary of 6, and the target's rows at each query (root, then nodes).
TREE = Tree((1, 2, 3, 4, 1, 5, 2), (ROOT, ROOT, 0, 0, 1, 2, 4))
SMALL = 4  # its first 4 nodes: 1 -> (3, 4) and 2


def rows(seed: int = 3, vocab: int = 6) -> torch.Tensor:
    """Random rows, but the root likes token 2 (node 1) and node 1's query token 1 (node 4, past the
    smaller tree): the whole tree's path often leaves the smaller tree there."""
    g = torch.Generator().manual_seed(seed)
    p = torch.rand(len(TREE) + 1, vocab, generator=g) ** 2
    p[0, 2], p[2, 1] = p[0].sum(), 2 * p[2].sum()
    return (p / p.sum(-1, keepdim=True)).double()


def exact_paths(tree: Tree, p: torch.Tensor) -> dict[tuple[int, ...], float]:
    """P(accepted path) of a one-hot ("top") tree: child c of a node is taken with the target's
    probability of its token there (the sibling-by-sibling rule with one-hot q), else none is."""
    out: dict[tuple[int, ...], float] = {}

    def walk(node: int, path: tuple[int, ...], weight: float) -> None:
        row, stop = p[node + 1], weight
        for child in tree.children(node):
            taken = weight * float(row[tree.tokens[child]])
            walk(child, path + (child,), taken)
            stop -= taken
        out[path] = out.get(path, 0.0) + stop

    walk(ROOT, (), 1.0)
    return out


def test_sampled_first_nodes_accept_with_the_smaller_trees_distribution():
    """Seeded draws of the whole tree's verdict, cut to its first nodes, against the smaller tree's
    exact distribution of accepted paths; the power check: cutting by depth instead (the whole
    tree's path kept to the smaller tree's depth, another plausible shortcut) is rejected."""
    p, runs = rows(), 4000
    small = Tree(TREE.tokens[:SMALL], TREE.parents[:SMALL])
    truth = exact_paths(small, p[: SMALL + 1])
    assert sum(truth.values()) == pytest.approx(1.0)
    paths = sorted(truth)
    counts, by_depth = torch.zeros(len(paths)), torch.zeros(len(paths))
    g = torch.Generator().manual_seed(11)
    for _ in range(runs):
        u = torch.rand(len(TREE) + 1, generator=g).tolist()
        verdict = accept_sampled(TREE, p.float(), u[:-1], u[-1])
        whole = TreeRound(TREE.tokens, TREE.parents, verdict.path, nested=True)
        counts[paths.index(whole.first(SMALL).path)] += 1
        depth = TreeRound(small.tokens, small.parents, ()).depth
        cut = verdict.path[:depth]
        by_depth[paths.index(cut) if cut in truth else 0] += 1
    expected = torch.tensor([truth[path] for path in paths])
    stat, dof = chi_square(counts, expected, runs)
    assert stat < critical(dof), (stat, dof)
    wrong, wrong_dof = chi_square(by_depth, expected, runs)
    assert wrong > critical(wrong_dof), (wrong, "the test cannot tell a wrong cut from the right one")


def test_a_nested_round_teaches_each_smaller_budget_of_its_drafter_and_nothing_else():
    """recycling:16's round: recycling:8, :4, :2 (known to the model) learn the verdicts of its first
    nodes; a bigger budget, the same drafter's table-only case, another drafter's tree and the draft
    model learn nothing; a tree that is
    not nested teaches no other source."""
    # A chain 0 -> 1 -> 2 -> 3 (nodes 0-3), siblings 4-7, and the path 0, 1, 8, 9 (a leaf) past them.
    tree = TreeRound(tuple(range(20, 30)), (ROOT, 0, 1, 2, ROOT, 0, 1, 6, 1, 8), (0, 1, 8, 9), nested=True)
    model = CostModel(decay=1.0, prior_weight=0.0)
    names = ("recycling:16", "recycling:32", "recycling:8", "recycling:4", "recycling:2", "lookup-tree:8",
             "draft-model", "recycling/table:8")
    for name in names:
        model.source(name)
    model.observe(tree_round(1, tree, "recycling:16"), "recycling:16")
    learned = {name: [k.mean for k in model.source(name).kept] for name in names}
    assert learned["recycling:16"] == [1.0] * 4  # its own: the path to a leaf, 4 deep
    assert learned["recycling:8"] == [1.0, 1.0, 0.0]  # nodes 0-7: node 8 is cut, node 1's children tried
    assert learned["recycling:4"] == [1.0, 1.0, 0.0]  # the chain 0-3: rejected at node 2
    # nodes 0, 1: a chain accepted to its leaf; asked 4 deep, it offered nothing at position 3
    assert learned["recycling:2"] == [1.0, 1.0, 0.0]
    assert learned["recycling:32"] == learned["lookup-tree:8"] == learned["draft-model"] == []
    assert learned["recycling/table:8"] == []  # the same drafter in another case (sources.py): kept apart
    assert [model.source(f"recycling:{b}").width.mean for b in (2, 4, 8)] == [3, 5, 9]
    assert model.source("recycling:8").draft.mean is None  # its draft cost only from its own rounds
    plain = CostModel(decay=1.0, prior_weight=0.0)
    plain.source("draft-tree:8")
    not_nested = TreeRound(tree.tokens, tree.parents, tree.path)
    plain.observe(tree_round(1, not_nested, "draft-tree:16"), "draft-tree:16")
    assert plain.source("draft-tree:8").kept == []


# --- free drafts: what a free source would have drafted, judged against the round's tokens --------

def chain_draft(tokens):
    from specdec.engine.drafters.base import Draft

    return Draft(list(tokens), None)


def plain_round(i: int, token: int) -> RoundEvent:
    from specdec.engine.events import PLAIN

    return RoundEvent(i, 0, (), 0, (token,), (PLAIN,), 0.0, 0.1, (), False)


def test_a_free_draft_teaches_its_first_position_once_and_plain_rounds_age_the_rest():
    model = CostModel(decay=0.5, prior_weight=0.0)
    for name in ("prompt-lookup", "draft-model"):
        model.source(name).observe(2, 2, None)  # positions 1 and 2 kept once: weight 1 each
    model.observe(plain_round(1, 4), "", free={"prompt-lookup": chain_draft([4, 5, 6])})
    lookup, other = model.source("prompt-lookup"), model.source("draft-model")
    assert [k.mean for k in lookup.kept] == [1.0, 1.0]
    # Position 1 decayed once as it learned (not aged first as well); position 2 aged, as everything
    # a plain round does not test; the draft model, not free, aged whole.
    assert [k.weight for k in lookup.kept] == [1.5, 0.5] and [k.weight for k in other.kept] == [0.5, 0.5]
    model.observe(plain_round(2, 9), "", free={"prompt-lookup": chain_draft([4, 5])})
    assert lookup.kept[0].mean == pytest.approx(1.5 * 0.5 / (1.5 * 0.5 + 1))  # its first token was not 9
    assert lookup.draft.mean is None and lookup.width.mean is None  # cost and width: its own rounds only


def test_a_free_tree_stands_for_its_smaller_budgets_and_no_source_learns_twice_a_round():
    from specdec.engine.drafters.base import Draft

    tree = Tree((4, 7, 5, 6, 8), (ROOT, ROOT, 0, 2, 3))  # root children 4 (node 0) and 7 (node 1)
    model = CostModel(decay=1.0, prior_weight=0.0)
    for name in ("recycling:8", "recycling:4", "recycling:2", "recycling:1"):
        model.source(name)
    # The round drafted recycling:2 and kept nothing: it learned that, and nothing else may overwrite it.
    model.observe(tree_round(1, TreeRound((9, 3), (ROOT, ROOT), (), nested=True), "recycling:2"), "recycling:2",
                  free={"recycling:8": Draft(list(tree.tokens), None, tree=tree, nested=True)})
    kept = {b: [k.mean for k in model.source(f"recycling:{b}").kept] for b in (8, 4, 2, 1)}
    assert kept[8] == [0.0] and kept[4] == [0.0] and kept[1] == [0.0]  # the round's first token was 0
    # Another round whose first token is 7: a root child among the first 8 and 4 nodes, not the first 1.
    model.observe(plain_round(2, 7), "", free={"recycling:8": Draft(list(tree.tokens), None, tree=tree, nested=True)})
    kept = {b: [k.mean for k in model.source(f"recycling:{b}").kept] for b in (8, 4, 2, 1)}
    assert kept[8] == [0.5] and kept[4] == [0.5] and kept[1] == [0.0] and kept[2] == [0.5]


def test_sampled_free_drafts_are_judged_with_the_targets_probability():
    """A fixed free draft judged against the first token of sampled rounds a draft model drafted (its
    own q): the kept share estimates the target's probability of the draft's first token, as the
    draft's own rounds would; against the draft model's probability it is rejected (power)."""
    from helpers import perturbed
    from specdec import ModelDrafter
    from specdec.engine.sampling import probs_from_logits

    vocab, prompt, runs = 8, [3, 5, 7, 3, 5, 6], 3000
    sampling = Sampling(temperature=1.0)
    target = tiny_model("llama", seed=21, vocab=vocab, hidden=32)
    draft = perturbed(target, 0.5, seed=4)
    lane, drafter = CachedModel(target), ModelDrafter(draft, vocab)
    p = probs_from_logits(lane.logits(prompt, 1)[0], sampling)
    q = probs_from_logits(CachedModel(draft).logits(prompt, 1)[0], sampling)
    token = int((p - q).abs().argmax())  # where the two differ most: the power check's lever
    model = CostModel(decay=1.0, prior_weight=0.0)
    for seed in range(runs):
        event = next(iter(speculative_decode(lane, drafter, prompt, Speculation(k=2), Sampling(1.0, seed=seed), 3)))
        # (judged as a later round would be: round 0's acceptance is not learned, CostModel.observe)
        model.observe(replace(event, round=1), "draft-model", free={"prompt-lookup": chain_draft([token, 1])})
    kept = model.source("prompt-lookup").kept[0]
    assert kept.weight == runs and len(model.source("prompt-lookup").kept) == 1
    z = lambda prob: (kept.total - runs * prob) / (runs * prob * (1 - prob)) ** 0.5  # noqa: E731
    assert abs(z(float(p[token]))) < 3.3, (kept.total / runs, float(p[token]))
    assert abs(z(float(q[token]))) > 3.3, ("the test cannot tell the draft's probability from the target's",
                                           float(q[token]), float(p[token]))


class Recording:
    """Each round the next offered source in turn, k from a cycle (0: a plain step), whatever the
    rounds show (deterministic, unlike the cost policy, whose choices follow measured times); it
    records the free drafts the loop hands it."""

    name, wants_free_drafts = "recording", True

    def __init__(self, ks=(3, 2, 0, 4, 1)):
        from itertools import cycle

        self.ks, self.turn, self.free = cycle(ks), 0, []

    def choose(self, sources):
        from specdec.engine.policy import NOTHING_TO_DRAFT, Choice

        self.turn += 1
        return Choice(next(self.ks), sources[self.turn % len(sources)]) if sources else NOTHING_TO_DRAFT

    def observe(self, round, source, free=None):
        self.free.append((round.source, dict(free or {})))


def test_the_loop_hands_the_policy_what_the_unchosen_free_sources_would_have_drafted():
    """The mixed drafter's free members (lookup, lookup-tree, recycling) are asked each round, never
    the chosen source, never a member not offered; asking changes neither the output nor the
    recycling drafter's own bookkeeping of the tree it drafted."""
    from specdec.engine.drafters import MixedDrafter, PromptLookupDrafter, LookupTreeDrafter, ModelDrafter
    from specdec.engine.drafters.recycling import RecyclingDrafter, AdjacencyTable
    from specdec.engine import standard_decode

    target = tiny_model("llama", seed=7)
    prompt = contexts(1)[0]
    expected = [e.token for e in standard_decode(CachedModel(target), prompt, Sampling(), 60)]
    recycling = RecyclingDrafter(AdjacencyTable(target.vocab_size), TreeShape(8, 2))
    drafter = MixedDrafter([PromptLookupDrafter(), LookupTreeDrafter(TreeShape(8, 2)),
                            ModelDrafter(tiny_model("llama", seed=8), target.vocab_size), recycling])
    policy = Recording()
    rounds = list(speculative_decode(CachedModel(target), drafter, prompt, Speculation(k=3, k_max=8), Sampling(), 60,
                                     policy=policy))
    assert [t for r in rounds for t in r.tokens] == expected
    asked = [(chosen, set(free)) for chosen, free in policy.free]
    assert all(chosen not in free for chosen, free in asked)
    assert {Source(s).drafter for _, free in asked for s in free} == {"prompt-lookup", "lookup-tree", "recycling"}
    assert any(chosen == "" and free for chosen, free in asked)  # plain rounds judge them too
    assert any(chosen.startswith("recycling") and any(Source(s).drafter == "prompt-lookup" for s in free)
               for chosen, free in asked)
    proposed = recycling.propose(prompt + expected[:10], 3, Sampling(), None)
    peeked = recycling.peek(prompt + expected[:20], 3)
    assert proposed.tokens and peeked.tokens != proposed.tokens
    assert recycling._proposed.tokens == list(proposed.tokens)  # peeking left the drafted tree's bookkeeping
