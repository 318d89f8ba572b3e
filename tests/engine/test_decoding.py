"""Greedy speculative decoding is token-identical to standard decoding; EOS and budget edges."""
import pytest
import torch

from helpers import perturbed, tiny_model
from specdec.engine.drafters import fit_vocab
from specdec import ACCEPTED, BONUS, CORRECTED, PLAIN, CachedModel, ModelDrafter, PromptLookupDrafter, Sampling, \
    Speculation, speculative_decode, standard_decode

GREEDY = Sampling()


def prompts(n: int, vocab: int = 96):
    g = torch.Generator().manual_seed(1234)
    out = []
    for i in range(n):
        body = torch.randint(3, vocab, (6 + 3 * i,), generator=g).tolist()
        out.append(body + body[:4] if i % 2 else body)  # some repeat themselves, for prompt lookup
    return out


@pytest.fixture(scope="module", params=["llama", "qwen2"])
def models(request):
    target = tiny_model(request.param, seed=7)
    return {
        "target": target,
        "same": perturbed(target, 0.0),  # every draft accepted
        "close": perturbed(target, 0.03),  # a mix of acceptances and rejections
        "far": tiny_model(request.param, seed=99),  # almost nothing accepted
    }


def run_spec(target, drafter, prompt, k, sampling=GREEDY, max_new=40, eos=(), adaptive=False):
    lane = CachedModel(target)
    return list(speculative_decode(lane, drafter, prompt, Speculation(k=k, adaptive=adaptive), sampling, max_new, eos))


def run_std(target, prompt, sampling=GREEDY, max_new=40, eos=()):
    return [e.token for e in standard_decode(CachedModel(target), prompt, sampling, max_new, eos)]


@pytest.mark.parametrize("k", range(1, 9))
def test_greedy_speculative_equals_standard(models, k):
    target = models["target"]
    seen = {"accepted": 0, "rejected": 0, "full": 0}
    for prompt in prompts(4):
        expected = run_std(target, prompt)
        drafters = [ModelDrafter(models[name], target.vocab_size) for name in ("same", "close", "far")]
        for drafter in drafters + [PromptLookupDrafter()]:
            rounds = run_spec(target, drafter, prompt, k)
            assert [t for r in rounds for t in r.tokens] == expected, (drafter.name, k, prompt)
            for r in rounds:
                seen["accepted"] += r.accepted
                seen["rejected"] += r.accepted < len(r.drafted)
                seen["full"] += bool(r.drafted) and r.accepted == len(r.drafted)
    # The comparison only means something if every path of the rule was exercised.
    assert all(seen.values()), seen


def test_adaptive_k_stays_exact_and_moves(models):
    target = models["target"]
    prompt = prompts(1)[0]
    rounds = run_spec(target, ModelDrafter(models["close"], target.vocab_size), prompt, 3, max_new=60,
                      adaptive=True)
    assert [t for r in rounds for t in r.tokens] == run_std(target, prompt, max_new=60)
    assert len({r.k for r in rounds}) > 1


def test_fates_describe_the_round(models):
    target = models["target"]
    for r in run_spec(target, ModelDrafter(models["close"], target.vocab_size), prompts(1)[0], 4):
        assert r.fates[: r.accepted] == (ACCEPTED,) * r.accepted
        assert r.tokens[: r.accepted] == r.drafted[: r.accepted]
        last = PLAIN if not r.drafted else BONUS if r.accepted == len(r.drafted) else CORRECTED
        assert r.fates[-1] == last
        assert len(r.tokens) == r.accepted + 1  # no EOS, budget not reached inside a round
        assert len(r.alpha) == len(r.drafted) and all(0 <= a <= 1 + 1e-6 for a in r.alpha)


@pytest.mark.parametrize("max_new", [1, 2, 3, 5, 9, 17])
def test_max_new_tokens_is_never_exceeded(models, max_new):
    target = models["target"]
    prompt = prompts(1)[0]
    expected = run_std(target, prompt, max_new=max_new)
    assert len(expected) == max_new
    for draft in ("same", "close"):
        rounds = run_spec(target, ModelDrafter(models[draft], target.vocab_size), prompt, 8, max_new=max_new)
        assert [t for r in rounds for t in r.tokens] == expected
        assert rounds[-1].finished and not any(r.finished for r in rounds[:-1])
        produced = 0
        for r in rounds:  # nothing is drafted that the budget could not take
            assert len(r.drafted) <= max_new - produced - 1
            produced += len(r.tokens)


def test_eos_inside_an_accepted_run_ends_generation(models):
    target = models["target"]
    prompt = prompts(1)[0]
    free_run = run_std(target, prompt, max_new=30)
    eos = free_run[12]  # a token the target will produce; with an identical draft it lands mid-round
    stop = free_run.index(eos)
    expected = free_run[: stop + 1]
    assert run_std(target, prompt, max_new=30, eos=[eos]) == expected
    rounds = run_spec(target, ModelDrafter(models["same"], target.vocab_size), prompt, 8, max_new=30, eos=[eos])
    assert [t for r in rounds for t in r.tokens] == expected
    last = rounds[-1]
    assert last.finished and last.tokens[-1] == eos
    assert len(last.tokens) < last.accepted + 1  # the round had more accepted tokens; they were dropped


def test_seeded_sampling_is_reproducible(models):
    target = models["target"]
    s = Sampling(temperature=0.8, top_p=0.95, seed=11)
    prompt = prompts(1)[0]
    runs = [run_spec(target, ModelDrafter(models["close"], target.vocab_size), prompt, 4, s) for _ in range(2)]
    assert [r.tokens for r in runs[0]] == [r.tokens for r in runs[1]]
    assert run_std(target, prompt, s) == run_std(target, prompt, s)
    other = run_spec(target, ModelDrafter(models["close"], target.vocab_size), prompt, 4,
                     Sampling(temperature=0.8, top_p=0.95, seed=12))
    assert [r.tokens for r in other] != [r.tokens for r in runs[0]]


def test_draft_with_other_vocabulary_size_stays_in_target_range():
    """Pairs pad their embedding matrices differently. A larger draft vocabulary is cut to the
    target's (the draft never proposes ids the target lacks); a smaller one is padded with -inf."""
    target = tiny_model("qwen2", seed=5, vocab=96)
    draft = tiny_model("qwen2", seed=6, vocab=112)
    prompt = prompts(1)[0]
    rounds = run_spec(target, ModelDrafter(draft, 96), prompt, 4, Sampling(temperature=1.5, seed=2), max_new=60)
    assert all(t < 96 for r in rounds for t in r.drafted)
    assert [t for r in run_spec(target, ModelDrafter(draft, 96), prompt, 4) for t in r.tokens] == run_std(target, prompt)
    padded = fit_vocab(torch.zeros(2, 80), 96)
    assert padded.shape == (2, 96) and torch.isinf(padded[:, 80:]).all() and (padded[:, :80] == 0).all()
    assert fit_vocab(torch.zeros(112), 96).shape == (96,)


def test_int8_draft_changes_speed_not_output(models):
    """A quantized draft is still verified by the full-precision target: the output cannot change."""
    from specdec.models.int8 import quantize_int8

    target = models["target"]
    draft = quantize_int8(perturbed(target, 0.0))
    assert not any(isinstance(m, torch.nn.Linear) and type(m) is torch.nn.Linear for m in draft.modules())
    for prompt in prompts(3):
        rounds = run_spec(target, ModelDrafter(draft, target.vocab_size), prompt, 4)
        assert [t for r in rounds for t in r.tokens] == run_std(target, prompt)
        assert sum(r.accepted for r in rounds) > 0


def test_quantize_settings_are_checked():
    from specdec.models.loading import check_quantize

    with pytest.raises(ValueError, match="choose one of"):
        check_quantize("int4", torch.device("cpu"))
    with pytest.raises(ValueError, match="CPU only"):
        check_quantize("int8", torch.device("cuda"))
    check_quantize(None, torch.device("cuda"))


@pytest.mark.parametrize("sampling", [GREEDY, Sampling(temperature=1.0, seed=4)])
def test_confidence_stop_shortens_drafts_and_keeps_greedy_exact(models, sampling):
    target = models["target"]
    prompt = prompts(1)[0]
    full = ModelDrafter(models["close"], target.vocab_size)
    early = ModelDrafter(models["close"], target.vocab_size, confidence=0.9)
    rounds_full = run_spec(target, full, prompt, 6, sampling)
    rounds_early = run_spec(target, early, prompt, 6, sampling)
    assert all(len(r.drafted) == r.k for r in rounds_full)
    assert any(0 < len(r.drafted) < r.k for r in rounds_early)
    if sampling.greedy:
        assert [t for r in rounds_early for t in r.tokens] == run_std(target, prompt)
