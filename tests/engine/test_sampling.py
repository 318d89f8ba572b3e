import math

import pytest
import torch

from specdec.engine.config import Sampling, Speculation
from specdec.engine.sampling import probs_from_logits, sample_from


def test_temperature_scales_logits():
    logits = torch.tensor([1.0, 2.0, 3.0])
    probs = probs_from_logits(logits, Sampling(temperature=0.5))
    assert torch.allclose(probs, torch.softmax(logits / 0.5, -1))


def test_top_k_keeps_k_largest():
    logits = torch.tensor([0.1, 3.0, 2.0, -1.0, 2.5])
    probs = probs_from_logits(logits, Sampling(temperature=1.0, top_k=2))
    assert (probs > 0).tolist() == [False, True, False, False, True]
    assert math.isclose(probs.sum().item(), 1.0, rel_tol=1e-6)


def test_top_p_keeps_smallest_nucleus():
    probs_in = torch.tensor([0.5, 0.3, 0.15, 0.05])
    logits = probs_in.log()
    kept = probs_from_logits(logits, Sampling(temperature=1.0, top_p=0.8)) > 0
    assert kept.tolist() == [True, True, False, False]  # 0.5 + 0.3 reaches 0.8
    kept = probs_from_logits(logits, Sampling(temperature=1.0, top_p=0.81)) > 0
    assert kept.tolist() == [True, True, True, False]
    kept = probs_from_logits(logits, Sampling(temperature=1.0, top_p=0.1)) > 0
    assert kept.tolist() == [True, False, False, False]  # the top token always stays


def test_processing_is_batched_per_row():
    logits = torch.randn(3, 10, generator=torch.Generator().manual_seed(0))
    s = Sampling(temperature=0.7, top_k=5, top_p=0.9)
    batched = probs_from_logits(logits, s)
    for i in range(3):
        assert torch.allclose(batched[i], probs_from_logits(logits[i], s))


def test_inverse_cdf_draw():
    probs = torch.tensor([0.0, 0.25, 0.0, 0.75])
    assert sample_from(probs, 0.0) == 1
    assert sample_from(probs, 0.2499) == 1
    assert sample_from(probs, 0.25) == 3
    assert sample_from(probs, 0.9999) == 3


@pytest.mark.parametrize("kwargs,needle", [
    (dict(temperature=float("nan")), "temperature"),
    (dict(temperature=-1.0), "temperature"),
    (dict(top_p=0.0), "top_p"),
    (dict(top_p=float("nan")), "top_p"),
    (dict(top_p=1.5), "top_p"),
    (dict(top_k=-3), "top_k"),
])
def test_bad_sampling_settings_name_the_limit(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        Sampling(**kwargs)


def test_bad_k_names_the_limit():
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 16\]"):
        Speculation(k=0)


@pytest.mark.parametrize("bad", [-0.1, 1.0, float("nan")])
def test_bad_confidence_names_the_limit(bad):
    with pytest.raises(ValueError, match=r"confidence must be in \[0, 1\)"):
        Speculation(k=4, confidence=bad)


def sorted_nucleus(probs, top_p):
    """The nucleus by a full sort of every row: the reference outside_nucleus must match."""
    top, order = torch.sort(probs, dim=-1, descending=True)
    drop = (top.cumsum(-1) - top) >= top_p
    drop[..., 0] = False
    return drop.scatter(-1, order, drop)


def test_the_nucleus_from_the_top_candidates_is_the_full_sorts(monkeypatch):
    """With 8 candidates out of 96 tokens: peaked rows are settled by their top 8, a flat row is sorted
    whole, and in one batch each row gets the nucleus a full sort gives it, as it would alone."""
    from specdec.engine import sampling

    monkeypatch.setattr(sampling, "NUCLEUS_CANDIDATES", 8)
    generator = torch.Generator().manual_seed(3)
    peaked = torch.randn(5, 96, generator=generator) * 4
    flat = torch.randn(1, 96, generator=generator) * 0.1
    logits = torch.cat([peaked, flat])
    for top_p in (0.05, 0.5, 0.9, 0.99):
        probs = torch.softmax(logits, -1)
        assert torch.equal(sampling.outside_nucleus(probs, top_p), sorted_nucleus(probs, top_p))
        for row in range(len(logits)):
            assert torch.equal(sampling.outside_nucleus(probs[row], top_p), sorted_nucleus(probs[row], top_p))
    assert (~sorted_nucleus(torch.softmax(flat, -1), 0.9)).sum() > 8  # the flat row needed its sort
