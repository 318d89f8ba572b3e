"""Token trees: the structure; one target pass over a tree gives every branch's logits and, once
gathered, the cache a plain run of the accepted branch would; greedy acceptance follows the argmax.
Sampled acceptance: tests/engine/test_tree_sampling.py."""

import pytest
import torch
from transformers import DynamicCache

from helpers import tiny_model
from specdec.engine.tree_verify import (
    Tree, TreeVerdict, accept_greedy, accepted_positions, check_tree_attention, gather_cache, merge_prefixes,
    tree_inputs,
)


pytestmark = pytest.mark.usefixtures("one_thread")


# --- structure -----------------------------------------------------------------------------------


def uniform_q(n: int, v: int = 4) -> torch.Tensor:
    return torch.full((n, v), 1.0 / v)


@pytest.mark.parametrize("kwargs,message", [
    (dict(tokens=(1, 2), parents=(-1,)), "one parent per token"),
    (dict(tokens=(1, 2), parents=(1, -1)), "topological"),  # parent after its child
    (dict(tokens=(1,), parents=(0,)), "topological"),  # its own parent
    (dict(tokens=(1,), parents=(-2,)), "topological"),
    (dict(tokens=(-1,), parents=(-1,)), ">= 0"),
    (dict(tokens=(1,), parents=(-1,), draws="beam"), "draws must be"),
    (dict(tokens=(1,), parents=(-1,), draws="iid"), r"needs q of shape \[1, V\]"),
    (dict(tokens=(1,), parents=(-1,), q=uniform_q(2), draws="iid"), r"got \(2, 4\)"),
    (dict(tokens=(1,), parents=(-1,), q=uniform_q(1)), "pass q=None"),
    (dict(tokens=(1, 2), parents=(-1, -1), q=torch.eye(4)[:2], draws="iid"), "share their q row"),
    (dict(tokens=(1, 1), parents=(-1, -1), q=uniform_q(2), draws="without-replacement"), "repeat a token"),
])
def test_invalid_trees_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Tree(**kwargs)


def test_depth_children_path():
    tree = Tree((10, 11, 12, 13, 14), (-1, -1, 0, 2, 0))
    assert tree.children(-1) == (0, 1) and tree.children(0) == (2, 4) and tree.children(3) == ()
    assert [tree.depth(i) for i in range(-1, 5)] == [0, 1, 1, 2, 3, 2]
    assert tree.path(3) == (0, 2, 3) and tree.path(1) == (1,) and tree.path(-1) == ()
    assert len(tree) == 5 and tree.draws == "top" and tree.q is None


def test_merge_prefixes_shares_prefixes_in_topological_order():
    branches = [[5, 6, 7], [5, 6, 8], [5, 9], [4], [5, 6, 7], []]
    tree = merge_prefixes(branches)
    assert tree.tokens == (5, 6, 7, 8, 9, 4)
    assert tree.parents == (-1, 0, 1, 1, 0, -1)
    assert all(parent < node for node, parent in enumerate(tree.parents))
    paths = {tuple(tree.tokens[i] for i in tree.path(node)) for node in range(len(tree))}
    assert all(tuple(b) in paths for b in branches if b)
    assert len(merge_prefixes([])) == 0


# --- one target pass over a tree -----------------------------------------------------------------


def test_tree_inputs_exact():
    # root(5) -> 7 -> 8 -> 6, and root -> 9; two cached prefix positions
    tree = Tree((7, 8, 9, 6), (-1, 0, -1, 1))
    ids, positions, mask = tree_inputs(2, tree, 5, dtype=torch.bfloat16)
    assert torch.equal(ids, torch.tensor([[5, 7, 8, 9, 6]]))
    assert torch.equal(positions, torch.tensor([[2, 3, 4, 3, 5]]))
    seen = torch.tensor([
        # p0 p1 root 7  8  9  6
        [1, 1, 1, 0, 0, 0, 0],  # root
        [1, 1, 1, 1, 0, 0, 0],  # 7
        [1, 1, 1, 1, 1, 0, 0],  # 8
        [1, 1, 1, 0, 0, 1, 0],  # 9
        [1, 1, 1, 1, 1, 0, 1],  # 6
    ], dtype=torch.bool)
    low = torch.finfo(torch.bfloat16).min
    assert mask.dtype == torch.bfloat16 and mask.shape == (1, 1, 5, 7)
    assert torch.equal(mask[0, 0], torch.where(seen, 0.0, low).to(torch.bfloat16))


def test_tree_inputs_root_only():
    ids, positions, mask = tree_inputs(0, Tree((), ()), 5)
    assert ids.tolist() == [[5]] and positions.tolist() == [[0]] and mask.tolist() == [[[[0.0]]]]


VOCAB = 50
PREFIX = [3, 17, 4, 22, 9, 31, 12]  # cached before the tree pass
LAST = 40  # the last committed token: the root, fed with the tree
# Branches repeat tokens at different depths (6, 7), so positions matter; depths up to 4.
BRANCHES = [[5, 6, 7], [5, 8], [9, 6, 7, 10], [6]]
ATOL = 1e-5  # fp32, with allclose's rtol 1e-5: observed at most 9e-6 on logits up to 5 (the tree
# pass sums attention over more, masked, keys than a plain run, so rounding differs)


@pytest.fixture(scope="module", params=["eager", "sdpa"])
def model(request):
    model = tiny_model("llama", seed=0, vocab=VOCAB)  # hidden 64, 2 layers, 4 heads (2 KV), fp32
    model.set_attn_implementation(request.param)
    check_tree_attention(model.config)
    return model


def prefilled(model, ids: list[int]) -> DynamicCache:
    cache = DynamicCache(config=model.config)
    model(input_ids=torch.tensor([ids]), past_key_values=cache, use_cache=True)
    return cache


def tree_pass(model, tree: Tree, mask_dtype=None) -> tuple[torch.Tensor, DynamicCache]:
    """[1 + n, V] logits of one pass over the root and the tree, and the cache after it."""
    cache = prefilled(model, PREFIX)
    ids, positions, mask = tree_inputs(len(PREFIX), tree, LAST)
    if mask_dtype is torch.bool:
        mask = mask == 0
    out = model(input_ids=ids, position_ids=positions, attention_mask=mask, past_key_values=cache,
                use_cache=True)
    return out.logits[0], cache


def branch_tokens(tree: Tree, node: int) -> list[int]:
    return [tree.tokens[i] for i in tree.path(node)]


def plain_logits(model, ids: list[int]) -> torch.Tensor:
    return model(input_ids=torch.tensor([ids])).logits[0, -1]


@torch.inference_mode()
def test_tree_pass_equals_plain_runs_of_each_branch(model):
    tree = merge_prefixes(BRANCHES)
    logits, cache = tree_pass(model, tree)
    assert cache.get_seq_length() == len(PREFIX) + 1 + len(tree)
    for node in range(-1, len(tree)):
        want = plain_logits(model, PREFIX + [LAST] + branch_tokens(tree, node))
        assert torch.allclose(logits[node + 1], want, atol=ATOL), (node, (logits[node + 1] - want).abs().max())


@torch.inference_mode()
def test_boolean_mask_is_silently_wrong_under_eager(model):
    """Why the mask is additive: eager adds the mask to the scores, so True/False become +1/+0 and
    nothing is masked, with no error. sdpa reads a boolean mask correctly."""
    tree = merge_prefixes(BRANCHES)
    logits, _ = tree_pass(model, tree, mask_dtype=torch.bool)
    want = plain_logits(model, PREFIX + [LAST] + branch_tokens(tree, 1))
    error = (logits[2] - want).abs().max().item()
    if model.config._attn_implementation == "eager":
        assert error > 1e-2
    else:
        assert error < ATOL


def test_flash_attention_is_refused():
    config = tiny_model("llama", seed=0, vocab=VOCAB).config
    config._attn_implementation = "flash_attention_2"
    with pytest.raises(ValueError, match="ignores a 4D tree mask"):
        check_tree_attention(config)


# --- the cache after a tree pass -----------------------------------------------------------------

# node of BRANCHES' tree whose path is accepted: none, a depth-1 leaf at the end (a gap before it),
# an inner node, a depth-4 branch, and the first-child chain (contiguous: the crop path)
ACCEPTED = {"root": -1, "leaf": 8, "inner": 5, "deep": 7, "chain": 2}


@pytest.mark.parametrize("case", ACCEPTED)
@torch.inference_mode()
def test_gathered_cache_equals_recomputed(model, case):
    tree = merge_prefixes(BRANCHES)
    assert branch_tokens(tree, ACCEPTED["deep"]) == [9, 6, 7, 10]  # the cases mean what they say
    path = tree.path(ACCEPTED[case])
    _, cache = tree_pass(model, tree)
    gather_cache(cache, accepted_positions(len(PREFIX), path))
    committed = PREFIX + [LAST] + branch_tokens(tree, ACCEPTED[case])
    fresh = prefilled(model, committed)
    assert cache.get_seq_length() == fresh.get_seq_length() == len(committed)
    for got, want in zip(cache.layers, fresh.layers):
        assert torch.allclose(got.keys, want.keys, atol=ATOL)
        assert torch.allclose(got.values, want.values, atol=ATOL)
    # Decoding goes on from the gathered cache as from the fresh one (default positions from its length).
    after = [model(input_ids=torch.tensor([[11, 12]]), past_key_values=c, use_cache=True).logits[0]
             for c in (cache, fresh)]
    assert torch.allclose(after[0], after[1], atol=ATOL)


def test_accepted_positions():
    assert accepted_positions(3, ()) == [0, 1, 2, 3]
    assert accepted_positions(3, (0, 4, 6)) == [0, 1, 2, 3, 4, 8, 10]


def test_gather_cache_refuses_what_it_cannot_gather():
    k = torch.zeros(1, 2, 6, 4)
    sliding = DynamicCache(ddp_cache_data=[(k, k, torch.tensor(4))])
    with pytest.raises(ValueError, match="DynamicSlidingWindowLayer"):
        gather_cache(sliding, [0, 1])
    full = DynamicCache(ddp_cache_data=[(k, k)])
    for keep in ([0, 2, 1], [0, 0], [0, 6], [-1, 0]):
        with pytest.raises(ValueError, match="increasing positions"):
            gather_cache(full, keep)
    with pytest.raises(ValueError, match="DynamicCache"):
        gather_cache(object(), [0])
    gather_cache(full, [0, 3, 5])
    assert full.get_seq_length() == 3


# --- greedy acceptance ---------------------------------------------------------------------------


def test_accept_greedy_follows_the_argmax():
    # root -> 5 (node 0) -> 6 (1) -> 7 (2); 5 -> 8 (3); root -> 9 (4); root -> 5 again (5)
    tree = Tree((5, 6, 7, 8, 9, 5), (-1, 0, 1, 0, -1, -1))
    assert accept_greedy(tree, [5, 6, 7, 2, 0, 0, 0]) == TreeVerdict((0, 1, 2), 2)  # to a leaf: bonus
    assert accept_greedy(tree, [5, 8, 3, 0, 4, 0, 0]) == TreeVerdict((0, 3), 4)
    assert accept_greedy(tree, [5, 1, 0, 0, 0, 0, 0]) == TreeVerdict((0,), 1)  # correction at node 0
    assert accept_greedy(tree, [9, 0, 0, 0, 0, 3, 0]) == TreeVerdict((4,), 3)
    assert accept_greedy(tree, torch.tensor([1, 0, 0, 0, 0, 0, 0])) == TreeVerdict((), 1)
    with pytest.raises(ValueError, match="need 7 argmaxes"):
        accept_greedy(tree, [5])


@torch.inference_mode()
def test_tree_holding_the_greedy_continuation_gets_it_accepted(model):
    greedy = []
    for _ in range(4):
        greedy.append(int(plain_logits(model, PREFIX + [LAST] + greedy).argmax()))
    g0, g1, g2, g3 = greedy

    def other(token: int) -> int:  # a token that is not the argmax there
        return (token + 1) % VOCAB

    branches = [[other(g0), g1], [g0, other(g1), g2], [g0, g1, other(g2), 4], [g0, g1, g2]]
    tree = merge_prefixes(branches)
    logits, _ = tree_pass(model, tree)
    verdict = accept_greedy(tree, logits.argmax(-1))
    assert branch_tokens(tree, verdict.path[-1]) == [g0, g1, g2] and verdict.token == g3
