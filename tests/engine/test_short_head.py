"""The draft's short head (engine/short_head.py): the first rows of its LM head and the context's ids.

1. Its logits are the whole head's on the kept ids, for each kind of head (eager, packed, int8), and
   -inf elsewhere; it goes whole where the context is mostly outside the cut.
2. Greedy output is the target's, token for token, with drafts cut short; sampled output has the
   target's distribution (seeded chi-square, with the power check).
"""
import copy

import pytest
import torch

from chi_square import chi_square, critical, joint
from helpers import perturbed, tiny_model
from specdec.engine import short_head
from specdec.engine.config import Sampling, Speculation, TreeShape
from specdec.engine.decoding import speculative_decode, standard_decode
from specdec.engine.drafters import ModelDrafter, make_drafter
from specdec.engine.kvcache import CachedModel
from specdec.engine.policy import Choice
from specdec.engine.short_head import FREE_OUTSIDE, ShortHead
from specdec.models.fast import FastLinear, prepack
from specdec.models.int8 import quantize_int8

VOCAB, ROWS = 256, 64
CONTEXT = [3, 5, 70, 9, 200, 11, 70, 4]  # two ids past the first ROWS: 70 and 200


# 1. The logits --------------------------------------------------------------------------------------

def heads():
    eager = tiny_model("llama", seed=3, vocab=VOCAB)
    packed = copy.deepcopy(eager)
    prepack(packed, min_weights=0, dense_rows=0)  # every pass on the packed kernels
    return {"eager": eager, "packed": packed, "int8": quantize_int8(eager)}


@pytest.mark.parametrize("kind", ["eager", "packed", "int8"])
def test_the_kept_ids_logits_are_the_whole_heads_and_the_rest_minus_infinity(kind):
    model = heads()[kind]
    whole, short = CachedModel(model), CachedModel(model, head_rows=ROWS)
    assert isinstance(short.head.rows.first, FastLinear) == (kind == "packed")
    expected, got = whole.logits(CONTEXT, 3), short.logits(CONTEXT, 3)
    kept = torch.zeros(VOCAB, dtype=torch.bool)
    kept[:ROWS], kept[[70, 200]] = True, True
    assert torch.isfinite(got).all(0).equal(kept)
    assert torch.allclose(got[:, kept], expected[:, kept], atol=1e-5 * expected.abs().max().item(), rtol=0)
    # A tree pass reads its nodes' ids too, and a new request starts from the first rows again.
    tree_logits = short.extend_tree(CONTEXT, [(150, -1)])
    assert torch.isfinite(tree_logits[0, 150])
    short.reset()
    assert not torch.isfinite(short.logits([3, 5, 9], 1)[0, 70:]).any()


def test_a_context_mostly_past_the_cut_reads_the_whole_head():
    model = tiny_model("llama", seed=3, vocab=VOCAB)
    whole, short = CachedModel(model), CachedModel(model, head_rows=ROWS)
    few = [3, 5] + list(range(100, 100 + FREE_OUTSIDE))  # FREE_OUTSIDE ids past the cut cost nothing
    assert not torch.isfinite(short.logits(few, 1)).all()
    many = few + list(range(180, 190))
    assert torch.allclose(short.logits(many, 1), whole.logits(many, 1), atol=1e-5)
    assert torch.allclose(short.logits(few, 1), whole.logits(few, 1), atol=1e-5)  # whole until reset
    short.reset()
    assert not torch.isfinite(short.logits(few, 1)).all()


def test_heads_that_keep_their_whole_vocabulary():
    assert ShortHead.of(tiny_model("llama", vocab=2 * ROWS - 1), ROWS) is None  # too small to pay
    assert ShortHead.of(tiny_model("llama", vocab=VOCAB), None) is None
    unplain = tiny_model("llama", vocab=VOCAB)
    unplain.config.model_type = "gemma2"  # soft-capped logits: not a plain projection
    assert ShortHead.of(unplain, ROWS) is None
    assert ShortHead.of(tiny_model("qwen2", vocab=VOCAB), ROWS) is not None


def test_a_heads_rows_are_read_once(monkeypatch):
    """A drafter is made per request; reading an int8 head's rows unpacks its weights (seconds for the
    0.5B draft), so every short head on one model shares them, and a model of its own reads its own."""
    model = heads()["int8"]
    built, read = [], short_head.HeadRows.of
    monkeypatch.setattr(short_head.HeadRows, "of", lambda head, rows: built.append(rows) or read(head, rows))
    first = ShortHead.of(model, ROWS)
    assert ShortHead.of(model, ROWS).rows is first.rows and built == [ROWS]
    ShortHead.of(model, 2 * ROWS - 60)
    assert built == [ROWS, 2 * ROWS - 60]
    ShortHead.of(quantize_int8(tiny_model("llama", seed=3, vocab=VOCAB)), ROWS)
    assert built == [ROWS, 2 * ROWS - 60, ROWS]
    # Nor does a request's gather read the packed head again: its rows come from what was read.
    def unpack():
        raise AssertionError("the int8 head's packed weight was unpacked after HeadRows.of")
    monkeypatch.setattr(model.get_output_embeddings(), "weight", unpack)
    short = CachedModel(model, head_rows=ROWS)
    assert torch.isfinite(short.logits(CONTEXT, 1)[0, [70, 200]]).all()


# 2. Exactness ------------------------------------------------------------------------------------------

PROMPT = [5, 9, 13, 70, 9, 13, 21]


@pytest.fixture
def cut(monkeypatch):
    """A short head of ROWS rows that never goes whole: a random model's tokens are mostly past the cut."""
    monkeypatch.setattr(short_head, "ROWS", ROWS)
    monkeypatch.setattr(short_head, "FREE_OUTSIDE", 10**6)


def cut_drafts(rounds, rows) -> int:
    """Rounds whose target token at the first rejection lay past the first rows: the cut was felt."""
    return sum(1 for r in rounds if r.accepted < len(r.drafted) and r.tokens[r.accepted] >= rows)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_greedy_output_is_the_targets_with_a_short_draft_head(arch, cut):
    felt = 0
    for seed in range(3):
        target = tiny_model(arch, seed=7 + seed, vocab=VOCAB)
        draft = perturbed(target, 0.3, seed=seed)
        expected = [e.token for e in standard_decode(CachedModel(target), PROMPT, Sampling(), 40)]
        drafter = ModelDrafter(draft, VOCAB)
        assert drafter.draft.head is not None
        rounds = list(speculative_decode(CachedModel(target), drafter, PROMPT, Speculation(k=4), Sampling(), 40))
        assert [t for r in rounds for t in r.tokens] == expected
        assert all(t < ROWS or t in PROMPT + expected for r in rounds for t in r.drafted)
        assert not drafter.draft.head.whole
        felt += cut_drafts(rounds, ROWS)
    assert felt > 0


class EverySource:
    """Each round the next of the drafter's sources, k = 4."""

    name = "every-source"

    def __init__(self):
        self.rounds = 0

    def choose(self, sources):
        self.rounds += 1
        return Choice(4, sources[self.rounds % len(sources)])

    def observe(self, round, source):
        pass


def test_greedy_output_is_the_targets_with_a_short_head_under_every_source(cut):
    target = tiny_model("llama", seed=7, vocab=VOCAB)
    expected = [e.token for e in standard_decode(CachedModel(target), PROMPT, Sampling(), 40)]
    lane = CachedModel(target)
    drafter = make_drafter("mixed", perturbed(target, 0.3), VOCAB, target=lane, tree=TreeShape(8, 2))
    rounds = list(speculative_decode(lane, drafter, PROMPT, Speculation(k=4), Sampling(), 40, policy=EverySource()))
    assert [t for r in rounds for t in r.tokens] == expected
    sources = {r.source.split(":")[0] for r in rounds if r.drafted}
    assert {"draft-model", "draft-tree"} <= sources, sources


SMALL, SMALL_ROWS, RUNS = 8, 2, 2000
LOW_PROMPT = [0, 1, 1, 0, 1]  # nothing past the first SMALL_ROWS ids: the first draft sees ids 0 and 1 alone


def test_speculative_sampling_with_a_short_draft_head_matches_the_target(monkeypatch):
    monkeypatch.setattr(short_head, "ROWS", SMALL_ROWS)
    target = tiny_model("llama", seed=21, vocab=SMALL, hidden=32)
    draft = perturbed(target, 0.5, seed=4)
    sampling = Sampling(temperature=1.0)
    counts = torch.zeros(SMALL, SMALL)
    accepted = cut = 0
    for seed in range(RUNS):
        drafter = ModelDrafter(draft, SMALL)
        s = Sampling(sampling.temperature, seed=seed)
        rounds = list(speculative_decode(CachedModel(target), drafter, LOW_PROMPT, Speculation(k=2), s, 3))
        tokens = [t for r in rounds for t in r.tokens]
        counts[tokens[0], tokens[1]] += 1
        accepted += sum(r.accepted for r in rounds)
        cut += tokens[0] >= SMALL_ROWS  # the first token came from the residual, past the draft's cut
    assert accepted > RUNS // 20 and cut > RUNS // 20
    stat, dof = chi_square(counts, joint(target, sampling, LOW_PROMPT, SMALL), RUNS)
    assert stat < critical(dof), (stat, dof)
    wrong, wrong_dof = chi_square(counts, joint(draft, sampling, LOW_PROMPT, SMALL), RUNS)
    assert wrong > critical(wrong_dof), "the test cannot tell the draft's distribution from the target's"
