"""Token recycling (drafters/recycling.py): the table holds the target's own top next tokens, the
tree follows it breadth first, and neither the table's state nor the tree's shape ever changes what
is generated, greedy or sampled."""
import pytest
import torch

from chi_square import chi_square, critical, joint
from helpers import loaded, tiny_model, word_tokenizer
from specdec.engine.config import Sampling, Speculation, TreeShape
from specdec.engine.decoding import speculative_decode, standard_decode
from specdec.engine.drafters import AdjacencyTable, RecyclingDrafter, make_drafter
from specdec.engine.kvcache import CachedModel
from specdec.engine.pair import Pair, Request

pytestmark = pytest.mark.usefixtures("one_thread")


def test_the_table_keeps_the_top_candidates_after_each_token_read():
    table = AdjacencyTable(10, width=3)
    logits = torch.tensor([[0, 9, 8, 7, 0, 0, 0, 0, 0, 0.0],   # after token 4: 1, 2, 3
                           [5, 0, 0, 0, 0, 0, 0, 0, 6, 7.0]])  # after token 6: 9, 8, 0
    table.update([4, 6], logits)
    assert table.rows[4].tolist() == [1, 2, 3] and table.rows[6].tolist() == [9, 8, 0]
    assert table.rows[0].tolist() == [-1, -1, -1] and table.filled == 2
    assert table.children(6, 2) == [9, 8] and table.children(0, 2) == []
    table.update([4], logits[1:])  # the latest pass wins
    assert table.rows[4].tolist() == [9, 8, 0]


def test_a_token_read_after_another_grows_from_their_two_token_row_first():
    """The same pass fills a row per (previous token, token): "6 after 4" and "6 after 5" keep their
    own candidates, and a context the table has not seen backs off to the token's own row."""
    table = AdjacencyTable(10, width=2, pair_slots=7)
    after_4 = torch.zeros(1, 10)
    after_4[0, [1, 2]] = torch.tensor([9.0, 8])
    after_5 = torch.zeros(1, 10)
    after_5[0, [3, 7]] = torch.tensor([9.0, 8])
    table.update([6], after_4, previous=[4])
    table.update([6], after_5, previous=[5])  # the one-token row of 6 is now the latest: 3, 7
    assert table.children(6, 2, previous=4) == [1, 2] and table.children(6, 2, previous=5) == [3, 7]
    assert table.children(6, 2, previous=9) == [3, 7] and table.children(6, 2) == [3, 7]  # back-off
    # 5 * 10 + 6 = 56 and 7 * 10 + 7 = 77 share slot 0 of 7: the newer key evicts the older, and the
    # slot never answers for the context it no longer holds.
    table.update([7], after_4, previous=[7])
    assert table.children(7, 2, previous=7) == [1, 2] and table.children(6, 2, previous=5) == [3, 7]
    assert table.children(6, 2, previous=5) == table.children(6, 2)  # backed off, not 77's row
    table.update([2], after_5, previous=[-1])  # no previous token: the one-token row only
    assert table.children(2, 2) == [3, 7] and int((table.pair_keys >= 0).sum()) == 2


def test_a_pass_reads_each_token_after_its_own_paths_previous():
    """What the decoding loop tells a learning drafter: the last committed token after the one before
    it, a chain node after the node before it, a tree node after its parent."""
    from specdec.engine.decoding import _read
    from specdec.engine.drafters.base import Draft
    from specdec.engine.tree_verify import Tree

    assert _read([3, 8, 5], Draft([6, 2], None)) == ([5, 6, 2], [8, 5, 6])
    tree = Tree((6, 2, 9, 4), (-1, -1, 0, 2))  # 5 -> {6 -> 9 -> 4, 2}
    assert _read([8, 5], Draft(list(tree.tokens), None, tree=tree)) == ([5, 6, 2, 9, 4], [8, 5, 5, 6, 9])
    assert _read([5], Draft([], None)) == ([5], [-1])


def test_each_pass_scores_the_rows_it_overwrites_by_rank():
    """Before a row is refreshed, its rank-r candidate is checked against the target's new argmax:
    that is how often following rank r would have been accepted greedily."""
    table = AdjacencyTable(10, width=3)
    first = torch.zeros(2, 10)
    first[0, [1, 2, 3]] = torch.tensor([9.0, 8, 7])  # after 4: 1, 2, 3
    first[1, [5, 6, 7]] = torch.tensor([9.0, 8, 7])  # after 6: 5, 6, 7
    table.update([4, 6], first)
    assert table.hits.rows == 0  # nothing was in the rows to score
    second = torch.zeros(3, 10)
    second[0, 2] = second[1, 7] = second[2, 0] = 9.0  # the target now says: 4 -> 2, 6 -> 7, 0 -> 0
    table.update([4, 6, 0], second)
    # Two filled rows scored (row 0 was empty): ranks 1 and 2 were each right once (4 -> 2, 6 -> 7).
    assert table.hits.rows == pytest.approx(2.0) and table.hits.hits == pytest.approx([0.0, 1.0, 1.0])


def ring_table(rates) -> AdjacencyTable:
    table = AdjacencyTable(10, width=3)
    for token in range(10):
        table.rows[token] = torch.tensor([(token + 1) % 10, (token + 2) % 10, (token + 3) % 10])
    table.hits.hits, table.hits.rows = [r * 1e6 for r in rates], 1e6  # rates measured on many rows
    return table


def test_the_tree_keeps_the_nodes_of_highest_path_score_within_budget_and_depth():
    """First candidates that hit often: a deep chain along them. Candidates alike: a wide bushy tree."""
    chain = RecyclingDrafter(ring_table([0.9, 0.05, 0.01]), TreeShape(budget=4, branching=2))
    assert grown(chain, root=0, depth=8, budget=4) == ([1, 2, 3, 4], [-1, 0, 1, 2])
    assert grown(chain, root=0, depth=2, budget=4) == ([1, 2, 2, 3], [-1, 0, -1, 0])  # depth caps the chain
    bushy = RecyclingDrafter(ring_table([0.4, 0.4, 0.01]), TreeShape(budget=6, branching=2))
    tokens, parents = grown(bushy, root=0, depth=3, budget=6)
    assert tokens == [1, 2, 2, 3, 3, 4] and parents == [-1, -1, 0, 0, 1, 1]  # level by level
    assert grown(bushy, root=0, depth=1, budget=6) == ([1, 2], [-1, -1])
    for drafter in (chain, bushy):  # parents always come first
        tokens, parents = grown(drafter, root=0, depth=5, budget=6)
        assert all(p < i for i, p in enumerate(parents))


def grown(drafter: RecyclingDrafter, **how) -> tuple[list[int], list[int]]:
    tree = drafter.grow(**how)
    return tree.tokens, tree.parents


def test_the_context_offers_what_followed_its_last_tokens_before_scored_by_match_length():
    """Beside the table's candidates, the node on the context's path offers the token that followed
    the same tokens earlier (prompt lookup's continuation): copied text the table never saw. A
    candidate both offer is one node; where the context's hit rate beats the table's, its chain goes
    deep first."""
    from specdec.engine.drafters.recycling import Continuation, context_continuation

    ids = [7, 8, 5, 0, 9, 6, 7, 8, 5]
    assert context_continuation(ids, 3) == Continuation((0, 9, 6), 3)  # "7 8 5" occurred before
    assert context_continuation([4, 2, 4], 2) == Continuation((2, 4), 1)
    assert context_continuation([1, 2, 3], 2) is None
    drafter = RecyclingDrafter(ring_table([0.5, 0.05, 0.01]), TreeShape(budget=5, branching=1))
    drafter.table.context_hits.hits, drafter.table.context_hits.tests = [0, 0, 0.9e6], [1, 1, 1e6]
    tree = drafter.grow(root=5, depth=3, budget=5, context=Continuation((0, 9, 6), 3))
    # The context's chain 0 -> 9 -> 6 (h = 0.9 a step), then the table's first candidates (h = 0.5):
    # 5 -> 6 at the root; 0 -> 1 merges with nothing; 9's table child 0 is a separate node.
    assert (tree.tokens, tree.parents) == ([0, 9, 6, 6, 1], [-1, 0, 1, -1, 0])
    assert tree.matches == [3, 3, 3, 0, 0] and tree.origins == ["context"] * 3 + ["table"] * 2
    merged = drafter.grow(root=5, depth=3, budget=3, context=Continuation((6, 7), 3))  # 6 is also the table's
    assert (merged.tokens, merged.parents, merged.matches) == ([6, 7, 8], [-1, 0, 1], [3, 3, 0])
    assert merged.origins == ["both", "both", "table"]


def test_each_pass_scores_the_context_candidates_it_read():
    """The pass that reads a recycling tree says, for each context node, whether the target chose its
    token after reading its parent: that is the context's hit rate for its match length."""
    drafter = RecyclingDrafter(ring_table([0.1, 0.05, 0.01]), TreeShape(budget=3, branching=1))
    ids = [7, 8, 5, 0, 9, 6, 7, 8, 5]
    draft = drafter.propose(ids, 2, Sampling(), None, "recycling:3")
    tokens, parents = list(draft.tree.tokens), list(draft.tree.parents)
    assert tokens[:2] == [0, 9] and parents[:2] == [-1, 0]  # the context's chain, prior h = 0.5 for 3 tokens
    logits = torch.zeros(len(tokens) + 1, 10)
    logits[0, 0] = 1.0  # after the root the target chose 0 (the context's first token: a hit)
    logits[1, 3] = 1.0  # after 0 it chose 3, not 9: a miss
    before = drafter.table.context_hits.rates()[2]
    drafter.observe([5] + tokens, logits, [8, 5] + [([5] + tokens)[p + 1] for p in parents[1:]])
    hits = drafter.table.context_hits
    assert hits.tests[2] == pytest.approx(1.99) and hits.hits[2] == pytest.approx(0.99)  # decayed per test
    assert hits.rates()[2] == pytest.approx((0.99 + 0.5 * 4) / (1.99 + 4)) and before == pytest.approx(0.5)
    drafter.observe([5] + tokens, logits, None)  # a pass that read no new proposal scores nothing
    assert hits.tests[2] == pytest.approx(1.99)


def test_recycling_offers_its_smaller_trees_and_drafts_the_one_asked_for():
    drafter = RecyclingDrafter(ring_table([0.4, 0.4, 0.01]), TreeShape(budget=16, branching=2))
    # The last token occurred before: the table and the context draft, in the sources' plain case.
    assert drafter.sources([0, 5, 0]) == ("recycling:16", "recycling:8", "recycling:4", "recycling:2")
    # It did not: the table alone, a case of its own, so the policy learns its acceptance apart.
    assert drafter.sources([5, 0]) == ("recycling/table:16", "recycling/table:8", "recycling/table:4",
                                       "recycling/table:2")
    draft = drafter.propose([5, 0], 3, Sampling(), None, "recycling/table:4")
    assert draft.tree is not None and len(draft.tokens) == 4  # a smaller budget from the policy
    assert set(draft.origins) == {"table"}
    with pytest.raises(ValueError, match="branching must be at most 3"):
        RecyclingDrafter(drafter.table, TreeShape(8, 4))


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("shape", [TreeShape(4, 1), TreeShape(8, 2), TreeShape(16, 4), TreeShape(24, 8)])
def test_greedy_recycling_equals_standard_decoding(arch, shape):
    """200 tokens, EOS inside a path at times: the standard lane's tokens, whatever the table."""
    target = tiny_model(arch, seed=7)
    prompt = [5, 9, 14, 5, 9, 14, 22, 31, 5, 9]
    for eos in ((), (17,)):
        expected = [e.token for e in standard_decode(CachedModel(target), prompt, Sampling(), 200, eos)]
        drafter = make_drafter("recycling", None, target.vocab_size, tree=shape)
        rounds = list(speculative_decode(CachedModel(target), drafter, prompt, Speculation(k=6), Sampling(), 200, eos))
        assert [t for r in rounds for t in r.tokens] == expected
        assert sum(r.accepted for r in rounds) > 0 and drafter.table.filled > 0


def test_a_warm_table_changes_speed_not_output():
    """One request cold, others, the first again: the same greedy tokens, drafted from a table the
    other requests filled (more accepted), and the standard lane never touched it."""
    tokenizer = word_tokenizer(96)
    pair = Pair(loaded(tiny_model("llama", seed=11), tokenizer))
    request = Request("w5 w9 w14 w22 w31", 64, raw=True, drafter="recycling", spec=Speculation(k=4))
    standard = [e.token for e in pair.standard(request)]
    assert pair.recycling_table().filled == 0  # the standard lane feeds nothing
    cold = list(pair.speculative(request))
    for other in ("w7 w3 w40 w41", "w60 w5 w9 w8"):
        list(pair.speculative(Request(other, 64, raw=True, drafter="recycling", spec=Speculation(k=4))))
    warm = list(pair.speculative(request))
    assert [t for r in cold for t in r.tokens] == [t for r in warm for t in r.tokens] == standard
    assert sum(r.accepted for r in warm) > sum(r.accepted for r in cold)


def test_a_table_of_its_own_leaves_the_pairs_untouched():
    """Pair.recycling_from, what the bench's lanes use (each its own session, a cold lane an empty
    table): inside, that table and, named, cost evidence of its own; after, the pair's table as it was."""
    pair = Pair(loaded(tiny_model("llama", seed=11), word_tokenizer(96)))
    request = Request("w5 w9 w14 w22 w31", 48, raw=True, drafter="recycling", spec=Speculation(k=4, policy="cost"))
    warm_tokens = [t for r in pair.speculative(request) for t in r.tokens]
    warm = pair.recycling_table()
    filled, rows = warm.filled, warm.rows.clone()
    with pair.recycling_from(evidence="cold") as cold:
        assert pair.recycling_table() is cold and cold is not warm and cold.filled == 0
        assert pair.setup_key(request).endswith("|table=cold")
        cold_tokens = [t for r in pair.speculative(request) for t in r.tokens]
    assert cold.filled > 0 and pair.recycling_table() is warm
    assert warm.filled == filled and torch.equal(warm.rows, rows)
    assert len(pair.costs) == 2 and not pair.setup_key(request).endswith("cold")  # its evidence kept apart
    assert cold_tokens == warm_tokens


def test_a_warm_up_on_the_timed_request_teaches_its_table_nothing():
    """Pair.warm_up is often the request about to be timed (the app's first, a bench's first
    question): its speculative lane drafts from a throwaway table, so the timed run's first round
    cannot draft back the answer's first tokens. Measured: a pair that ran the same short request
    first (what the warm-up did before) accepts more in its first rounds than the warmed-up pair."""
    request = Request("w5 w9 w14 w22 w31", 24, raw=True, drafter="recycling", spec=Speculation(k=4))
    warmed, never, leaked = (Pair(loaded(tiny_model("llama", seed=11), word_tokenizer(96))) for _ in range(3))
    warmed.warm_up(request, tokens=8)
    assert warmed._recycling_table is None and list(warmed.costs) == [warmed.setup_key(request)]  # evidence kept
    list(leaked.speculative(Request(request.prompt, 8, raw=True, drafter="recycling", spec=Speculation(k=4))))
    assert leaked.recycling_table().filled > 0
    early = [[r.accepted for r in list(pair.speculative(request))[:3]] for pair in (warmed, never, leaked)]
    assert early[0] == early[1] and sum(early[0]) < sum(early[2])


@pytest.mark.parametrize("sampling", [Sampling(temperature=1.0), Sampling(temperature=0.8, top_k=5, top_p=0.9)])
def test_sampled_recycling_keeps_the_target_distribution(sampling):
    vocab, runs, prompt = 8, 1500, [3, 5, 7, 3, 5, 6, 4, 3, 5]
    target = tiny_model("llama", seed=21, vocab=vocab, hidden=32)
    lane = CachedModel(target)
    drafter = make_drafter("recycling", None, vocab, tree=TreeShape(6, 2))
    counts, accepted = torch.zeros(vocab, vocab), 0
    for seed in range(runs):
        s = Sampling(sampling.temperature, sampling.top_k, sampling.top_p, seed)
        rounds = list(speculative_decode(lane, drafter, prompt, Speculation(k=2), s, 3))
        tokens = [t for r in rounds for t in r.tokens]
        counts[tokens[0], tokens[1]] += 1
        accepted += sum(r.accepted for r in rounds)
    assert accepted > runs // 10  # the table's candidates were tried and kept often
    stat, dof = chi_square(counts, joint(target, sampling, prompt, vocab), runs)
    assert stat < critical(dof), (stat, dof)
    # Power: the same counts against a distribution one token's mass away from the target's.
    wrong = joint(target, sampling, prompt, vocab)
    wrong = torch.roll(wrong, 1, dims=1)
    stat_wrong, dof_wrong = chi_square(counts, wrong, runs)
    assert stat_wrong > critical(dof_wrong), "the test cannot tell a wrong distribution from the target's"
