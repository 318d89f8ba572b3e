"""Rolling a KV cache back to the accepted prefix gives the cache a fresh computation would."""
import pytest
import torch

from helpers import tiny_model
from specdec.engine.kvcache import CachedModel, common_prefix


def layers(cache):
    return [(layer.keys, layer.values) for layer in cache.layers]


def assert_same_cache(a: CachedModel, b: CachedModel):
    assert a.ids == b.ids
    assert a.cache.get_seq_length() == b.cache.get_seq_length() == len(a.ids)
    for (ka, va), (kb, vb) in zip(layers(a.cache), layers(b.cache)):
        assert torch.allclose(ka, kb, atol=1e-5) and torch.allclose(va, vb, atol=1e-5)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("accepted", [0, 2, 5])  # none, some, all of 5 drafted tokens
def test_rollback_equals_recompute(arch, accepted):
    model = tiny_model(arch, seed=1)
    prefix, drafts = list(range(10, 30)), [40, 41, 42, 43, 44]
    correction = 50
    rolled = CachedModel(model)
    rolled.logits(prefix + drafts, len(drafts) + 1)  # verify pass: the cache now holds all drafts
    # Next round: committed = prefix + accepted drafts + correction; then 3 new drafts.
    committed = prefix + drafts[:accepted] + [correction]
    next_ids = committed + [60, 61, 62]
    got = rolled.logits(next_ids, 4)
    fresh = CachedModel(model)
    want = fresh.logits(next_ids, 4)
    assert torch.allclose(got, want, atol=1e-5)
    assert_same_cache(rolled, fresh)


def test_crop_then_extend_matches_fresh():
    model = tiny_model("llama", seed=2)
    ids = list(range(5, 25))
    lane = CachedModel(model)
    lane.logits(ids, 1)
    lane.crop(12)
    fresh = CachedModel(model)
    fresh.logits(ids[:13], 1)
    fresh.crop(12)
    assert_same_cache(lane, fresh)


def test_common_prefix():
    assert common_prefix([1, 2, 3], [1, 2, 3, 4]) == 3
    assert common_prefix([1, 2, 3], [1, 5, 3]) == 1
    assert common_prefix([], [1]) == 0
    assert common_prefix([9], [1]) == 0


def test_logits_arguments_are_checked():
    lane = CachedModel(tiny_model("llama"))
    with pytest.raises(ValueError, match="n <= len"):
        lane.logits([1, 2], 3)
