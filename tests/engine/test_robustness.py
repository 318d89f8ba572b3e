"""Edges that once broke the engine: padded vocabularies, tiny temperatures, sliding-window caches,
models that cannot be rolled back, rounds that draft nothing, and bf16 near-ties."""
import math

import pytest
import torch
from transformers import MistralConfig, MistralForCausalLM

from helpers import loaded, perturbed, tiny_model, word_tokenizer
from specdec import BONUS, PLAIN, CachedModel, ModelDrafter, PromptLookupDrafter, Sampling, Speculation, \
    speculative_decode, standard_decode
from specdec.engine.run_stats import summarize
from specdec.engine.config import MIN_TEMPERATURE
from specdec.engine.kvcache import UnsupportedModel
from specdec.engine.sampling import probs_from_logits, sample_from
from specdec.engine.verdicts import numerical_tie

GREEDY = Sampling()
PROMPT = [5, 9, 14, 22, 9, 14, 30, 41]


def spec_tokens(target_lane, drafter, prompt, sampling=GREEDY, k=4, max_new=40, adaptive=False, eos=()):
    rounds = list(speculative_decode(target_lane, drafter, prompt, Speculation(k=k, adaptive=adaptive), sampling,
                                     max_new, eos))
    return rounds, [t for r in rounds for t in r.tokens]


def std_tokens(lane, prompt, sampling=GREEDY, max_new=40, eos=()):
    return [e.token for e in standard_decode(lane, prompt, sampling, max_new, eos)]


# 1. Vocabularies of different sizes -------------------------------------------------------------

def test_smaller_draft_embedding_is_refused_with_the_sizes_named():
    target, draft = tiny_model("qwen2", seed=1, vocab=112), tiny_model("qwen2", seed=2, vocab=96)
    with pytest.raises(ValueError, match=r"draft's embedding has 96 rows but the target can produce ids up to 111"):
        ModelDrafter(draft, CachedModel(target).vocab_size)


@pytest.mark.parametrize("seed", range(3))
def test_smaller_draft_runs_when_both_lanes_are_cut_to_the_real_tokens(seed):
    """The issue's case: target head 112 rows, draft embedding 96, temperature 1.5. Cutting both lanes
    to the 96 ids that are tokens never feeds the draft an id it lacks, and the lanes stay comparable."""
    target, draft = tiny_model("qwen2", seed=1, vocab=112), tiny_model("qwen2", seed=2, vocab=96)
    hot = Sampling(temperature=1.5, seed=seed)
    lane = CachedModel(target, vocab_size=96)
    rounds, tokens = spec_tokens(lane, ModelDrafter(draft, lane.vocab_size), PROMPT, hot, max_new=60)
    assert len(tokens) == 60 and max(tokens) < 96
    assert max(std_tokens(CachedModel(target, 96), PROMPT, hot, max_new=60)) < 96
    greedy_lane = CachedModel(target, 96)
    assert spec_tokens(greedy_lane, ModelDrafter(draft, 96), PROMPT)[1] == std_tokens(CachedModel(target, 96), PROMPT)


def test_uncut_padded_ids_do_get_sampled_so_the_cut_is_needed():
    """Without the cut, a hot target emits ids past 96 (which would crash the small draft)."""
    target = tiny_model("qwen2", seed=1, vocab=112)
    emitted = set()
    for seed in range(3):
        emitted |= set(std_tokens(CachedModel(target), PROMPT, Sampling(temperature=1.5, seed=seed), max_new=60))
    assert max(emitted) >= 96


def test_larger_draft_vocab_is_fitted_to_the_target():
    target, draft = tiny_model("llama", seed=1, vocab=96), tiny_model("llama", seed=4, vocab=128)
    draft.model.embed_tokens.weight.data[:96] = target.model.embed_tokens.weight.data  # agree often
    for sampling in (GREEDY, Sampling(temperature=1.2, seed=3)):
        lane = CachedModel(target)
        rounds, tokens = spec_tokens(lane, ModelDrafter(draft, lane.vocab_size), PROMPT, sampling)
        assert max(tokens) < 96 and all(max(r.drafted, default=0) < 96 for r in rounds)
        if sampling.greedy:
            assert tokens == std_tokens(CachedModel(target), PROMPT)


def test_cached_model_rejects_a_cut_wider_than_its_logits():
    with pytest.raises(ValueError, match=r"vocab_size must be in \[1, 96\]"):
        CachedModel(tiny_model("llama", vocab=96), vocab_size=97)


# 3. Tiny temperatures and top-p ----------------------------------------------------------------

@pytest.mark.parametrize("temperature", [1e-40, 1e-20, MIN_TEMPERATURE / 2, 0.0])
def test_temperature_below_the_floor_is_greedy(temperature):
    target = tiny_model("llama", seed=5)
    sampling = Sampling(temperature=temperature, seed=11)
    assert sampling.greedy
    greedy = std_tokens(CachedModel(target), PROMPT)
    assert std_tokens(CachedModel(target), PROMPT, sampling) == greedy
    lane = CachedModel(target)
    assert spec_tokens(lane, ModelDrafter(perturbed(target, 0.05), lane.vocab_size), PROMPT, sampling)[1] == greedy


def test_temperature_at_the_floor_samples_finite_probabilities():
    logits = torch.randn(3, 50) * 30
    probs = probs_from_logits(logits, Sampling(temperature=MIN_TEMPERATURE))
    assert torch.isfinite(probs).all() and torch.allclose(probs.sum(-1), torch.ones(3))
    assert (probs.argmax(-1) == logits.argmax(-1)).all()


@pytest.mark.parametrize("top_p", [1e-46, 1e-45, 1e-30, 1e-8])
def test_tiny_top_p_keeps_the_most_probable_token(top_p):
    logits = torch.randn(4, 50)
    probs = probs_from_logits(logits, Sampling(temperature=1.0, top_p=top_p))
    assert torch.isfinite(probs).all()
    assert torch.equal(probs, torch.nn.functional.one_hot(logits.argmax(-1), 50).float())


@pytest.mark.parametrize("bad", [torch.full((5,), float("nan")), torch.zeros(5),
                                 torch.tensor([0.2, float("nan"), 0.3, 0.1, 0.4])])
def test_sampling_refuses_a_distribution_without_finite_mass(bad):
    with pytest.raises(FloatingPointError, match="total mass"):
        sample_from(bad, 0.5)


@pytest.mark.parametrize("kwargs, message", [
    ({"temperature": float("inf")}, "temperature"), ({"temperature": -1e-9}, "temperature"),
    ({"temperature": 10**400}, "temperature"), ({"top_p": 0.0}, "top_p"), ({"top_p": float("nan")}, "top_p"),
    ({"top_k": True}, "top_k"), ({"top_k": 1.5}, "top_k")])
def test_sampling_settings_out_of_range_name_the_limit(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Sampling(**kwargs)


@pytest.mark.parametrize("kwargs", [{"k": 10**400}, {"k": True}, {"k": 0}, {"k": 2.0}, {"k_max": 0}])
def test_speculation_settings_out_of_range_name_the_limit(kwargs):
    with pytest.raises(ValueError, match="k"):
        Speculation(**kwargs)


# 5. Caches that must be rolled back ------------------------------------------------------------

def sliding_model(seed: int, window: int = 16):
    torch.manual_seed(seed)
    config = MistralConfig(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                           sliding_window=window, initializer_range=0.2, bos_token_id=0, eos_token_id=1,
                           pad_token_id=2)
    return MistralForCausalLM(config).eval()


def reference_greedy(model, prompt, max_new):
    """No cache at all: every step recomputes the whole sequence under the model's own masks."""
    ids = list(prompt)
    with torch.inference_mode():
        for _ in range(max_new):
            ids.append(int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax()))
    return ids[len(prompt):]


def test_sliding_window_model_rolls_back_past_the_window():
    """The issue's case: window 16, 40 new tokens, with rejections after the window is full."""
    target = sliding_model(seed=0)
    expected = reference_greedy(target, PROMPT, 40)
    assert std_tokens(CachedModel(target), PROMPT) == expected
    for drafter in (ModelDrafter(perturbed(target, 0.05), 96), ModelDrafter(sliding_model(seed=9), 96),
                    PromptLookupDrafter()):
        rounds, tokens = spec_tokens(CachedModel(target), drafter, PROMPT, k=5)
        assert tokens == expected, drafter.name
    assert any(r.accepted < len(r.drafted) for r in rounds)  # the last drafter had rejections


def test_sliding_window_cache_is_trimmed_at_rollbacks():
    target = sliding_model(seed=0, window=16)
    lane = CachedModel(target)
    rounds, _ = spec_tokens(lane, ModelDrafter(sliding_model(seed=9), 96), PROMPT, k=4, max_new=60)
    since_rollback = len(rounds[-1].tokens)  # the last round rejected (the draft is unrelated)
    assert rounds[-2].accepted < len(rounds[-2].drafted)
    assert all(layer.keys.shape[-2] <= 16 - 1 + 4 + since_rollback for layer in lane.cache.layers)
    assert len(lane.ids) > 60


def test_models_with_recurrent_state_are_refused_up_front():
    from transformers import MambaConfig, MambaForCausalLM
    mamba = MambaForCausalLM(MambaConfig(vocab_size=96, hidden_size=32, num_hidden_layers=1, state_size=4)).eval()
    with pytest.raises(UnsupportedModel, match="MambaForCausalLM takes no KV cache"):
        CachedModel(mamba)


def test_hybrid_linear_attention_models_are_refused_up_front():
    transformers = pytest.importorskip("transformers")
    config_cls = getattr(transformers, "Qwen3NextConfig", None)
    if config_cls is None:
        pytest.skip("this transformers has no Qwen3-Next")
    config = config_cls(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, num_experts=2, num_experts_per_tok=1,
                        moe_intermediate_size=32, shared_expert_intermediate_size=32, linear_num_key_heads=2,
                        linear_num_value_heads=2, linear_key_head_dim=16, linear_value_head_dim=16,
                        layer_types=["linear_attention", "full_attention"])
    model = transformers.Qwen3NextForCausalLM(config).eval()
    with pytest.raises(UnsupportedModel, match="recurrent state"):
        CachedModel(model)


# 13. Rounds that draft nothing are plain decoding ------------------------------------------------

def assert_fates_tell_the_truth(rounds):
    for r in rounds:
        if not r.drafted:
            assert r.fates == (PLAIN,)
        assert (BONUS in r.fates) == (bool(r.drafted) and r.accepted == len(r.drafted) and
                                      len(r.tokens) == r.accepted + 1)


def test_prompt_lookup_misses_are_plain_not_bonus():
    target = tiny_model("llama", seed=5)
    rounds, _ = spec_tokens(CachedModel(target), PromptLookupDrafter(), [7, 8, 9, 10, 11, 12, 7, 8], max_new=40)
    assert any(not r.drafted for r in rounds) and any(r.drafted for r in rounds)
    assert_fates_tell_the_truth(rounds)


def test_confidence_stop_before_the_first_token_is_plain():
    target = tiny_model("llama", seed=5)
    drafter = ModelDrafter(tiny_model("llama", seed=77), 96, confidence=0.99)  # unsure about everything
    lane = CachedModel(target)
    rounds = list(speculative_decode(lane, drafter, PROMPT, Speculation(k=4, confidence=0.99), GREEDY, 30))
    # A draft that stops at its first token still drafted that token; to hit "nothing drafted" the
    # stop must come before drafting, which a k = 0 round (the budget's last token) also exercises.
    assert_fates_tell_the_truth(rounds)
    assert [t for r in rounds for t in r.tokens] == std_tokens(CachedModel(target), PROMPT, max_new=30)


def test_last_round_with_no_room_to_draft_is_plain():
    target = tiny_model("llama", seed=5)
    lane = CachedModel(target)
    rounds, _ = spec_tokens(lane, ModelDrafter(perturbed(target, 0.0), 96), PROMPT, k=4, max_new=6)
    assert [len(r.drafted) for r in rounds] == [4, 0] and rounds[-1].fates == (PLAIN,)
    assert_fates_tell_the_truth(rounds)


# 2. Expected tokens per round for rounds of any length ------------------------------------------

def test_expected_tokens_match_measured_when_the_draft_is_the_target():
    """alpha = 1 with adaptive k: every round keeps all m_r drafts, so measured tokens per round must
    equal the per-round expectation exactly, while tau(alpha, starting k) would be far off."""
    target = tiny_model("llama", seed=5)
    lane = CachedModel(target)
    rounds, tokens = spec_tokens(lane, ModelDrafter(perturbed(target, 0.0), 96), PROMPT, k=2, max_new=60,
                                 adaptive=True)
    assert len({len(r.drafted) for r in rounds}) > 2  # k moved
    std = list(standard_decode(CachedModel(target), PROMPT, GREEDY, 60))
    s = summarize(std, rounds, k=2)
    assert s.alpha == 1.0
    assert s.tau == pytest.approx(s.tokens_per_round)
    assert s.tau > 2 + 1  # more than tau(1, 2) = 3
    assert s.predicted_speedup is not None


# 6. Greedy divergences in low precision ---------------------------------------------------------

def test_a_near_tie_in_bf16_is_a_numerical_tie():
    logits = torch.tensor([1.0, 20.0, 19.95, 3.0], dtype=torch.bfloat16)
    tie = numerical_tie(logits, {1, 2})
    assert tie["numerical_tie"] is True and tie["dtype"] == "bfloat16" and tie["top2"] == [1, 2]
    assert tie["margin"] <= tie["tolerance"]


@pytest.mark.parametrize("dtype, tokens", [(torch.bfloat16, {1, 0}), (torch.float32, {1, 2}),
                                           (torch.bfloat16, {1, 3})])
def test_a_clear_margin_or_a_token_outside_the_top_two_is_a_real_divergence(dtype, tokens):
    logits = torch.tensor([18.0, 20.0, 19.95, 3.0], dtype=dtype)
    assert numerical_tie(logits, tokens)["numerical_tie"] is False


def test_fp32_tolerance_is_tiny():
    tie = numerical_tie(torch.tensor([20.0, 19.9999]), {0, 1})
    assert tie["tolerance"] < 1e-4 and tie["numerical_tie"] is False
    assert math.isclose(tie["margin"], 1e-4, rel_tol=0.1)


# The same fixes, through Pair (the CLI's and the app's way in) ---------------------------------

def test_pair_cuts_both_lanes_to_the_tokenizer_and_runs_a_smaller_draft():
    from specdec import Pair, Request
    from specdec import compare
    tok = word_tokenizer(90)
    pair = Pair(loaded(tiny_model("qwen2", seed=1, vocab=112), tok), loaded(tiny_model("qwen2", seed=2, vocab=96), tok))
    assert pair.vocab_size == 90
    prompt = " ".join(f"w{i}" for i in (3, 8, 20, 3, 8))
    hot = compare(pair, Request(prompt, 48, Sampling(temperature=1.5, seed=2), raw=True), warm_up=False)
    for lane in ("standard", "speculative"):
        assert len(hot[lane]["token_ids"]) > 0 and max(hot[lane]["token_ids"]) < 90
    assert "identical" not in hot["stats"] and "divergence" not in hot["stats"]
    greedy = compare(pair, Request(prompt, 48, raw=True), warm_up=False)
    assert greedy["stats"]["identical"] is True and greedy["stats"]["divergence"] is None


def test_pair_refuses_a_draft_that_cannot_read_every_token():
    from specdec import Pair
    tok = word_tokenizer(100)
    with pytest.raises(ValueError, match="draft's embedding has 96 rows but the target can produce ids up to 99"):
        Pair(loaded(tiny_model("qwen2", seed=1, vocab=112), tok), loaded(tiny_model("qwen2", seed=2, vocab=96), tok))


def test_pair_reports_where_greedy_lanes_diverge_and_why():
    from specdec import Pair
    pair = Pair(loaded(tiny_model("llama", seed=5), word_tokenizer(96)))
    standard = std_tokens(CachedModel(tiny_model("llama", seed=5)), PROMPT, max_new=12)
    assert pair.divergence(PROMPT, standard, list(standard)) is None
    wrong = standard[:7] + [(standard[7] + 1) % 96] + standard[8:]
    d = pair.divergence(PROMPT, standard, wrong)
    assert d.index == 7 and d.standard_token == standard[7] and d.speculative_token == wrong[7]
    assert d.dtype == "float32" and d.margin > d.tolerance and d.numerical_tie is False
    assert pair.divergence(PROMPT, standard, standard[:5]).speculative_token is None


# Input the engine refuses by name --------------------------------------------------------------

@pytest.mark.parametrize("seed", [-1, 2**63, 10**20, 1.5, True])
def test_a_seed_torch_cannot_take_is_refused_naming_the_range(seed):
    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 9223372036854775807\]"):
        Sampling(seed=seed)
    assert Sampling(seed=2**63 - 1).seed == 2**63 - 1


@pytest.mark.parametrize("prompt, message", [
    ("   \n", "the prompt is empty"),
    ("w5 \udcff w9", r"U\+DCFF at position 3 is a lone surrogate"),
])
def test_a_blank_or_invalid_prompt_is_refused_before_the_tokenizer(prompt, message):
    from specdec.engine.pair import Pair, Request

    pair = Pair(loaded(tiny_model("llama", seed=7), word_tokenizer(96)))
    with pytest.raises(ValueError, match=message):
        pair.prompt_ids(Request(prompt, 8, raw=True))
    with pytest.raises(ValueError, match="history"):
        pair.prompt_ids(Request("w5", 8, raw=True, history=(("w5", "w6 \ud800"),)))


def test_encoding_leaves_the_context_check_to_the_caller():
    """The app checks its own token limit between the two, so that limit is the one its error names."""
    from specdec.engine.pair import Pair, Request

    pair = Pair(loaded(tiny_model("llama", seed=7), word_tokenizer(96)))  # a context of 512 positions
    request = Request(" ".join(["w5"] * 600), 8, raw=True)
    assert len(pair.encode(request)) >= 600
    with pytest.raises(ValueError, match="exceeds the model's context of 512 tokens"):
        pair.prompt_ids(request)


@pytest.mark.parametrize("name, message", [("tpu", "unknown device 'tpu'"), ("cuda", "sees no CUDA device"),
                                           ("cuda:3", "sees no CUDA device")])
def test_a_device_this_machine_lacks_is_refused_by_name(name, message):
    from specdec.models.loading import pick_device

    if torch.cuda.is_available():
        pytest.skip("a CUDA machine has the device")
    with pytest.raises(ValueError, match=message):
        pick_device(name)
    assert pick_device("cpu") == torch.device("cpu")
