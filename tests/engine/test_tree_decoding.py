"""Token trees in decoding: the tree drafters, the one-pass verification, the caches after it, and
exactness (greedy identity, seeded sampling against the target's exact joint distribution)."""
import pytest
import torch

from helpers import perturbed, tiny_model
from test_sampling_e2e import RUNS, VOCAB, chi_square, critical, joint
from specdec import ACCEPTED, BONUS, CORRECTED, PLAIN, CachedModel, Sampling, Speculation, UnsupportedModel, \
    speculative_decode, standard_decode
from specdec.engine.config import TreeShape
from specdec.engine.drafters import DraftTreeDrafter, LookupTreeDrafter, make_drafter
from specdec.engine.tree_verify import ROOT, Tree, merge_prefixes

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: faster on one thread

GREEDY = Sampling()
SHAPES = [TreeShape(1, 1), TreeShape(8, 3), TreeShape(32, 8)]


def prompts(n: int, vocab: int = 96):
    g = torch.Generator().manual_seed(77)
    out = []
    for i in range(n):
        body = torch.randint(3, vocab, (8 + 2 * i,), generator=g).tolist()
        # Repeats with different continuations, so lookup finds several matches that disagree.
        out.append(body + body[:3] + body[5:7] + body[:3] if i % 2 else body)
    return out


@pytest.fixture(scope="module", params=["llama", "qwen2"])
def models(request):
    target = tiny_model(request.param, seed=7)
    return {"target": target, "same": perturbed(target, 0.0), "close": perturbed(target, 0.03),
            "far": tiny_model(request.param, seed=99)}


def run(target, drafter, prompt, k, sampling=GREEDY, max_new=40, eos=(), shape=TreeShape()):
    spec = Speculation(k=k, tree=shape)
    return list(speculative_decode(CachedModel(target), drafter, prompt, spec, sampling, max_new, eos))


def standard(target, prompt, sampling=GREEDY, max_new=40, eos=()):
    return [e.token for e in standard_decode(CachedModel(target), prompt, sampling, max_new, eos)]


def off_first_child(r) -> bool:
    """The round accepted a node that is not its parent's first child: a chain would have missed it."""
    children = {}
    for node, parent in enumerate(r.tree.parents):
        children.setdefault(parent, []).append(node)
    return any(node != children[r.tree.parents[node]][0] for node in r.tree.path)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"b{s.budget}x{s.branching}")
def test_greedy_tree_decoding_equals_standard(models, shape):
    target = models["target"]
    seen = dict.fromkeys(["accepted", "corrected", "leaf bonus", "off first child", "plain"], 0)
    for prompt in prompts(3):
        expected = standard(target, prompt)
        drafters = [DraftTreeDrafter(models[name], target.vocab_size, shape) for name in ("same", "close", "far")]
        for drafter in drafters + [LookupTreeDrafter(shape)]:
            for k in (2, 5):
                rounds = run(target, drafter, prompt, k, shape=shape)
                assert [t for r in rounds for t in r.tokens] == expected, (drafter.name, k, prompt)
                for r in rounds:
                    seen["plain"] += r.fates == (PLAIN,)
                    if r.tree is None:
                        continue
                    assert len(r.tree.tokens) <= shape.budget and r.tree.depth <= k
                    seen["accepted"] += r.accepted
                    seen["corrected"] += r.fates[-1] == CORRECTED
                    seen["leaf bonus"] += r.fates[-1] == BONUS
                    seen["off first child"] += off_first_child(r)
    if shape.branching == 1:
        seen.pop("off first child")  # a chain: every node is a first child
    assert all(seen.values()), seen


def test_fates_and_events_describe_the_tree(models):
    target = models["target"]
    drafter = DraftTreeDrafter(models["close"], target.vocab_size, TreeShape(8, 3))
    for r in run(target, drafter, prompts(1)[0], 4):
        tree = Tree(r.tree.tokens, r.tree.parents)
        assert r.drafted == tree.tokens and r.accepted == len(r.tree.path) and r.alpha == ()
        assert r.tree.path == tree.path(r.tree.path[-1] if r.tree.path else ROOT)  # a path from the root
        assert r.tokens[:-1] == tuple(tree.tokens[n] for n in r.tree.path)
        assert r.fates == (ACCEPTED,) * r.accepted + (BONUS if not tree.children(
            r.tree.path[-1] if r.tree.path else ROOT) else CORRECTED,)
        reach = r.tree.reach
        assert len(reach) == len(tree) and all(0 < x <= 1 for x in reach)
        assert all(reach[n] <= reach[p] + 1e-7 for n, p in enumerate(tree.parents) if p != ROOT)


def test_draft_tree_is_the_likeliest_nodes_within_shape(models):
    """The kept nodes are the budget likeliest of everything drafted; each expanded node has at most
    `branching` children; the tree reaches depth k when the budget allows."""
    target, shape = models["target"], TreeShape(12, 3)
    drafter = DraftTreeDrafter(models["close"], target.vocab_size, shape)
    draft = drafter.propose(prompts(1)[0], 4, GREEDY, torch.Generator())
    tree = draft.tree
    assert len(tree) == 12 and max(tree.depth(n) for n in range(len(tree))) <= 4
    assert all(len(tree.children(n)) <= 3 for n in range(-1, len(tree)))
    # the draft cache holds the expanded frontier (3 per depth below the last), not the whole tree
    assert len(drafter.draft.slots) == 3 * 3
    wide = DraftTreeDrafter(models["close"], target.vocab_size, TreeShape(256, 3)).propose(
        prompts(1)[0], 4, GREEDY, torch.Generator())
    assert len(wide.tree) == 3 + 3 * 3 * 3  # every node drafted: 3 at depth 1, then 3 expanded x 3 children
    ranked = sorted(wide.reach, reverse=True)
    assert sorted(draft.reach, reverse=True) == pytest.approx(ranked[:12])


def test_lookup_tree_branches_at_every_match():
    ids = [5, 6, 7, 9, 5, 6, 8, 4, 5, 6, 7, 3, 5, 6]
    drafter = LookupTreeDrafter(TreeShape(32, 1))
    # "5 6" occurred three times before the end, followed by 7 9, 8 4, 7 3: latest first
    assert drafter.branches(ids, 2)[:3] == [[7, 3], [8, 4], [7, 9]]
    tree = drafter.propose(ids, 2, GREEDY, torch.Generator()).tree
    assert tree.tokens[:4] == (7, 3, 8, 4) and tree.children(0) == (1, 4)  # 7 -> {3, 9}: prefix merged
    small = LookupTreeDrafter(TreeShape(3, 1)).propose(ids, 2, GREEDY, torch.Generator()).tree
    assert small == merge_prefixes([[7, 3], [8, 4]], 3)
    assert LookupTreeDrafter().propose([1, 2, 3], 4, GREEDY, torch.Generator()).tokens == []  # no match
    assert LookupTreeDrafter().propose(ids, 0, GREEDY, torch.Generator()).tokens == []


def test_merge_prefixes_respects_the_budget():
    assert merge_prefixes([[1, 2, 3], [1, 4], [5]], 3) == Tree((1, 2, 3), (-1, 0, 1))
    assert merge_prefixes([[1, 2, 3], [1, 4], [5]], 4) == Tree((1, 2, 3, 4), (-1, 0, 1, 0))
    assert len(merge_prefixes([[1, 2], [3, 4]], None)) == 4


@pytest.mark.parametrize("max_new", [1, 2, 3, 7])
def test_budget_and_eos_end_inside_a_tree_path(models, max_new):
    target = models["target"]
    prompt = prompts(1)[0]
    drafter = DraftTreeDrafter(models["same"], target.vocab_size, TreeShape(16, 4))
    rounds = run(target, drafter, prompt, 6, max_new=max_new)
    assert [t for r in rounds for t in r.tokens] == standard(target, prompt, max_new=max_new)
    assert all(r.tree is None or r.tree.depth <= max_new - 1 for r in rounds)
    free = standard(target, prompt, max_new=30)
    eos = free[9]
    rounds = run(target, drafter, prompt, 6, max_new=30, eos=[eos])
    assert [t for r in rounds for t in r.tokens] == free[: free.index(eos) + 1]


# --- caches --------------------------------------------------------------------------------------


def fresh_cache(model, ids):
    lane = CachedModel(model)
    lane.logits(ids, 1)
    return lane.cache


def assert_cache_equal(cache, ids, model):
    want = fresh_cache(model, ids)
    assert cache.get_seq_length() == len(ids)
    for got, expected in zip(cache.layers, want.layers):
        assert torch.allclose(got.keys, expected.keys, atol=1e-5)
        assert torch.allclose(got.values, expected.values, atol=1e-5)


BRANCHES = [[5, 6, 7], [5, 8], [9, 6, 7, 10], [6]]


@pytest.mark.parametrize("accepted", [[], [5], [5, 6, 7], [5, 8], [9, 6, 7, 10], [6], [9, 6]])
@pytest.mark.parametrize("then", [[], [11], [11, 12]])
@torch.inference_mode()
def test_target_cache_keeps_only_the_accepted_path(llama, accepted, then):
    """After a tree pass the next call settles the cache: the accepted path, gathered into place,
    whatever its shape; then it goes on as a cache built from scratch over the committed ids."""
    prompt = [3, 4, 12, 13, 14]
    tree = merge_prefixes(BRANCHES)
    lane = CachedModel(llama)
    logits = lane.verify_tree(prompt, tree)
    plain = CachedModel(llama)
    for node in range(ROOT, len(tree)):
        branch = [tree.tokens[i] for i in tree.path(node)]
        assert torch.allclose(logits[node + 1], plain.logits(prompt + branch, 1)[0], atol=1e-5)
    committed = prompt + accepted + then
    lane.settle(committed)
    assert lane.ids == prompt + accepted and lane.slots == []
    assert_cache_equal(lane.cache, prompt + accepted, llama)
    if then:
        assert torch.allclose(lane.logits(committed, 1), plain.logits(committed, 1), atol=1e-5)


@torch.inference_mode()
def test_draft_cache_grown_by_depth_settles_to_the_path(llama):
    """A draft feeds its tree a depth at a time (extend_tree); what it had cached of the accepted
    path is kept, the other branches are dropped, and the rest is caught up."""
    prompt = [3, 4, 12, 13]
    lane = CachedModel(llama)
    lane.logits(prompt, 1)
    first = lane.extend_tree(prompt, [(5, ROOT), (9, ROOT)])  # slots 0, 1
    second = lane.extend_tree(prompt, [(6, 1), (8, 0), (7, 1)])  # slots 2, 3, 4 under 9, 5, 9
    plain = CachedModel(llama)
    for logits, branch in zip([*first, *second], [[5], [9], [9, 6], [5, 8], [9, 7]]):
        assert torch.allclose(logits, plain.logits(prompt + branch, 1)[0], atol=1e-5)
    out = lane.logits(prompt + [9, 6, 20, 21], 1)  # path 9 -> 6 cached, then 20 and 21 fed
    assert torch.allclose(out, plain.logits(prompt + [9, 6, 20, 21], 1), atol=1e-5)
    assert_cache_equal(lane.cache, prompt + [9, 6, 20, 21], llama)
    with pytest.raises(ValueError, match="read ids with logits"):
        lane.extend_tree(prompt + [9], [(1, ROOT)])


# --- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["heuristic", "cost"])
def test_tree_drafters_under_moving_policies_stay_exact(models, policy):
    """heuristic moves the depth; cost picks depth and budget per round, from acceptance measured per
    budget and verify costs by width. Neither looks at the round's own draws: output unchanged."""
    target = models["target"]
    prompt = prompts(2)[1]
    expected = standard(target, prompt, max_new=60)
    for drafter in (DraftTreeDrafter(models["close"], target.vocab_size, TreeShape(16, 3)),
                    LookupTreeDrafter(TreeShape(16, 3))):
        spec = Speculation(k=3, policy=policy, tree=TreeShape(16, 3))
        rounds = list(speculative_decode(CachedModel(target), drafter, prompt, spec, GREEDY, 60))
        assert [t for r in rounds for t in r.tokens] == expected, (policy, drafter.name)
        if drafter.name == "lookup-tree":
            continue
        if policy == "heuristic":
            assert len({r.k for r in rounds}) > 1
        else:  # every budget measured, then chosen by the numbers, never deeper than it can be
            sources = {r.source for r in rounds if r.source}
            assert sources == set(drafter.sources(prompt)), sources
            for r in rounds:
                if r.tree is not None:
                    budget = int(r.source.split(":")[1])
                    assert len(r.tree.tokens) <= budget and r.k <= budget


def test_a_path_ending_at_a_leaf_ends_the_trees_yield():
    """root -> A (a leaf), root -> B -> C. Accepting A yields 2 tokens: the tree has nothing below A,
    so for the cost model, which prices this tree's tokens per round, depth 2 was missed (alpha_2 =
    P(L >= 2 | L >= 1), L the accepted path's length). The heuristic still sees a bonus and widens."""
    from specdec import RoundEvent
    from specdec.engine.events import TreeRound
    from specdec.engine.policy import CostModel, HeuristicPolicy

    def event(path, fates):
        tree = TreeRound((5, 6, 7), (-1, -1, 1), path)
        return RoundEvent(1, 2, (5, 6, 7), len(path), (0,) * len(fates), fates, 0.1, 0.1, (), False, tree=tree)

    leaf, inner, whole = event((0,), (ACCEPTED, BONUS)), event((1,), (ACCEPTED, CORRECTED)), \
        event((1, 2), (ACCEPTED, ACCEPTED, BONUS))
    assert leaf.draft_length == inner.draft_length == 2 and (leaf.tested_length, inner.tested_length) == (1, 2)
    heuristic = HeuristicPolicy(3, 16)
    heuristic.observe(leaf, "draft-tree:3")
    assert heuristic.k == 5
    costs = CostModel(decay=1.0)  # no decay: the four rounds weigh alike
    for round in (leaf, inner, whole, whole):
        costs.observe(round, "draft-tree:3")
    kept = costs.source("draft-tree:3").kept
    assert [k.weight > 0 for k in kept] == [True, True]
    # Four rounds yielded 2, 2, 3 and 3 tokens: alpha_2 is 2 of 4, and E(2) their mean.
    assert kept[1].mean == pytest.approx(0.5)
    assert (kept[0].mean, kept[1].mean) == (1.0, 0.5)  # E(2) = 1 + 1 + 0.5: the mean of 2, 2, 3, 3


def test_budget_sources_and_widths():
    from specdec.engine.drafters.tree_drafters import budget_sources
    from specdec.engine.policy import tree_budget, verify_width

    assert budget_sources("draft-tree", 16) == ("draft-tree:16", "draft-tree:8", "draft-tree:4", "draft-tree:2")
    assert budget_sources("lookup-tree", 12) == ("lookup-tree:12", "lookup-tree:8", "lookup-tree:4", "lookup-tree:2")
    assert budget_sources("draft-tree", 1) == ("draft-tree:1",)
    assert tree_budget("draft-tree:8") == 8 and tree_budget("draft-model") is None
    assert verify_width("draft-model", 4) == 5 and verify_width("draft-tree:8", 4) == 9
    assert verify_width("draft-tree:8", 0) == 1  # no draft: a plain step
    drafter = DraftTreeDrafter(tiny_model("llama", seed=2), 96, TreeShape(16, 4))
    draft = drafter.propose([3, 4, 5, 6], 3, GREEDY, torch.Generator(), "draft-tree:4")
    assert len(draft.tree) == 4


def test_a_source_is_a_typed_name_that_owns_its_verify_width():
    """Issue #19: sources.Source is the one place a tree source's ":n" is written and read; drafters
    share their default reset and sources through DrafterBase."""
    from specdec.engine.drafters import PromptLookupDrafter, RecyclingDrafter, AdjacencyTable
    from specdec.engine.sources import Source

    tree, chain = Source("draft-tree", 8), Source("draft-model")
    assert tree == "draft-tree:8" and {tree: 1}["draft-tree:8"] == 1  # a str: dict and JSON key as it is
    assert (tree.drafter, tree.budget, tree.verify_width(3), tree.verify_width(0)) == ("draft-tree", 8, 9, 1)
    assert (chain.drafter, chain.budget, chain.verify_width(3)) == ("draft-model", None, 4)
    assert Source("draft-tree:8").budget == 8  # read back from its JSON form
    case = Source("recycling", 8, "table")  # a case keeps its evidence apart (sources.py)
    assert case == "recycling/table:8" and Source("recycling/table:8") == case
    assert (case.family, case.drafter, case.case, case.budget, case.verify_width(2)) == \
        ("recycling/table", "recycling", "table", 8, 9)
    assert (tree.family, tree.case, chain.family, chain.case) == ("draft-tree", None, "draft-model", None)
    with pytest.raises(ValueError, match="at least one node"):
        Source("draft-tree", 0)
    assert PromptLookupDrafter().sources([1, 2]) == (Source("prompt-lookup"),)
    assert RecyclingDrafter(AdjacencyTable(96), TreeShape(16, 4)).sources([1, 1])[0] == "recycling:16"


def test_models_that_cannot_hold_a_tree_are_refused():
    target = tiny_model("llama", seed=1)
    target.set_attn_implementation("eager")
    run(target, LookupTreeDrafter(), [3, 4, 5, 3, 4], 2, max_new=3)  # eager honours the mask
    target.config._attn_implementation = "flash_attention_2"
    with pytest.raises(UnsupportedModel, match="ignores a tree's 4D mask"):
        run(target, LookupTreeDrafter(), [3, 4, 5, 3, 4], 2, max_new=3)
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(0)
    sliding = MistralForCausalLM(MistralConfig(vocab_size=96, hidden_size=32, intermediate_size=64,
                                               num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                               sliding_window=8)).eval()
    with pytest.raises(UnsupportedModel, match="sliding window"):
        run(sliding, LookupTreeDrafter(), [3, 4, 5, 3, 4], 2, max_new=3)


@pytest.mark.parametrize("kwargs,message", [
    (dict(budget=0), "budget must be an integer in"), (dict(budget=257), "budget must be an integer in"),
    (dict(branching=0), "branching must be an integer in"), (dict(branching=2.0), "branching must be an integer"),
])
def test_tree_shape_is_checked(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TreeShape(**kwargs)


def test_registry_builds_tree_drafters(llama):
    shape = TreeShape(6, 2)
    built = make_drafter("draft-tree", perturbed(llama, 0.0), llama.vocab_size, tree=shape)
    assert isinstance(built, DraftTreeDrafter) and built.shape == shape
    assert make_drafter("lookup-tree", None, llama.vocab_size, tree=shape).shape == shape
    with pytest.raises(ValueError, match="needs a draft model"):
        make_drafter("draft-tree", None, llama.vocab_size)


# --- sampling: exact for the target --------------------------------------------------------------

PROMPT = [3, 5, 7, 3, 5, 6, 4, 3, 5, 2, 3, 5]  # "3 5" three times with different continuations


@pytest.mark.parametrize("sampling,drafter_kind", [
    (Sampling(temperature=0.8, top_k=6, top_p=0.9), "draft-tree"),
    (Sampling(temperature=1.0), "lookup-tree"),
])
def test_tree_sampling_matches_target(sampling, drafter_kind):
    target = tiny_model("llama", seed=21, vocab=VOCAB, hidden=32)
    draft = perturbed(target, 0.5, seed=4)
    lane = CachedModel(target)
    shape = TreeShape(6, 3)
    drafter = DraftTreeDrafter(draft, VOCAB, shape) if drafter_kind == "draft-tree" else LookupTreeDrafter(shape)
    counts = torch.zeros(VOCAB, VOCAB)
    accepted = rejected = off_first = 0
    for seed in range(RUNS):
        s = Sampling(sampling.temperature, sampling.top_k, sampling.top_p, seed)
        rounds = list(speculative_decode(lane, drafter, PROMPT, Speculation(k=2, tree=shape), s, 3))
        tokens = [t for r in rounds for t in r.tokens]
        counts[tokens[0], tokens[1]] += 1
        accepted += sum(r.accepted for r in rounds)
        rejected += sum(r.fates[-1] == CORRECTED for r in rounds)
        off_first += sum(off_first_child(r) for r in rounds if r.tree)
    assert accepted > RUNS // 20 and rejected > RUNS // 20 and off_first > RUNS // 50  # every branch ran
    stat, dof = chi_square(counts, joint(target, sampling, PROMPT), RUNS)
    assert stat < critical(dof), (stat, dof)
    if drafter_kind == "draft-tree":
        wrong, wrong_dof = chi_square(counts, joint(draft, sampling, PROMPT), RUNS)
        assert wrong > critical(wrong_dof), "the test cannot tell the draft's distribution from the target's"


def test_round_sources_leave_the_engine_as_plain_str(llama):
    """orjson (Gradio's JSON) refuses a str subclass as a dict key: the rounds' sources, which the
    stats count by, and the cost model's keys are plain str."""
    import orjson

    from specdec.engine.run_stats import summarize
    from specdec.engine.config import Speculation
    from specdec.engine.drafters import LookupTreeDrafter
    from specdec.engine.decoding import speculative_decode
    from specdec.engine.kvcache import CachedModel

    prompt = [5, 6, 7, 8, 5, 6, 7, 8, 5, 6, 7]
    rounds = list(speculative_decode(CachedModel(llama), LookupTreeDrafter(TreeShape(8, 2)), prompt,
                                     Speculation(k=3), GREEDY, 12))
    assert any(r.source for r in rounds) and all(type(r.source) is str for r in rounds)
    orjson.dumps(summarize([], rounds, 3).to_json()["sources"])


def alibi_models():
    from transformers import BloomConfig, BloomForCausalLM, FalconConfig, FalconForCausalLM

    torch.manual_seed(0)
    yield BloomForCausalLM(BloomConfig(vocab_size=96, hidden_size=32, n_layer=2, n_head=2, initializer_range=0.2)).eval()
    yield FalconForCausalLM(FalconConfig(vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                         alibi=True, new_decoder_architecture=False, initializer_range=0.2)).eval()


@pytest.mark.parametrize("index", [0, 1])
def test_alibi_models_refuse_trees_by_name_and_auto_drafts_chains_for_them(index):
    """ALiBi models build their position biases from a 2D padding mask (transformers'
    build_alibi_tensor unpacks its shape), so a tree's 4D mask broke their forward; they are refused
    up front like a sliding window, and auto's mixed drafter offers them chains only, still exact."""
    from specdec.engine.drafters import MixedDrafter, PromptLookupDrafter
    from specdec.engine.drafters.options import DrafterOptions
    from specdec.engine.policy import make_policy

    target = list(alibi_models())[index]
    prompt = [3, 4, 5, 6, 3, 4, 5, 6, 3, 4]
    with pytest.raises(UnsupportedModel, match="ALiBi position biases"):
        run(target, LookupTreeDrafter(), prompt, 2, max_new=3)
    lane = CachedModel(target)
    mixed = MixedDrafter.from_options(DrafterOptions(96, perturbed(target, 0.0), target=lane))
    assert not any(isinstance(m, (LookupTreeDrafter, DraftTreeDrafter)) for m in mixed.members)
    expected = [e.token for e in standard_decode(CachedModel(target), prompt, Sampling(), 16)]
    rounds = list(speculative_decode(lane, mixed, prompt, Speculation(k=4, k_max=8, policy="cost"), Sampling(), 16,
                                     policy=make_policy("cost", 4, 8)))
    assert [t for r in rounds for t in r.tokens] == expected and sum(r.accepted for r in rounds) > 0
    assert isinstance(mixed.members[0], PromptLookupDrafter)
