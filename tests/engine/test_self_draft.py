"""Self-speculation: the layer view, its exactness, its known acceptance, and cache borrowing."""
import copy

import pytest
import torch

from helpers import tiny_model
from specdec.engine.config import Sampling, Speculation
from specdec.engine.decoding import speculative_decode, standard_decode
from specdec.engine.drafters import SelfDrafter
from specdec.engine.drafters.layers import layer_view, parse_layers
from specdec.engine.kvcache import CachedModel
from specdec.engine.sampling import make_generator

PROMPT = [5, 9, 14, 3, 22, 9, 14, 40]


def identity_outside(model, kept):
    """A copy whose layers outside `kept` add nothing to the residual stream (output projections
    zeroed), so the full model computes exactly what a view of `kept` computes."""
    model = copy.deepcopy(model)
    with torch.no_grad():
        for i, layer in enumerate(model.model.layers):
            if i not in kept:
                layer.self_attn.o_proj.weight.zero_()
                layer.mlp.down_proj.weight.zero_()
    return model


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("kept", [(0, 1), (0, 2), (1, 3), (2,)])
def test_view_computes_the_kept_layers_and_shares_weights(arch, kept):
    model = tiny_model(arch, seed=5, layers=4)
    view = layer_view(model, kept)
    reference = identity_outside(model, kept)
    ids = torch.tensor([PROMPT])
    with torch.no_grad():
        torch.testing.assert_close(view(input_ids=ids).logits, reference(input_ids=ids).logits, atol=1e-5, rtol=1e-5)
        # and through a KV cache, fed in two pieces, as the drafter feeds it
        lane = CachedModel(view)
        lane.logits(PROMPT[:5], 1)
        torch.testing.assert_close(lane.logits(PROMPT, 3), reference(input_ids=ids).logits[0, -3:], atol=1e-5, rtol=1e-5)
    owned = {p.data_ptr() for p in model.parameters()}
    assert {p.data_ptr() for p in view.parameters()} <= owned  # no weight copied
    assert len(model.model.layers) == 4 and model.config.num_hidden_layers == 4  # the target is untouched
    assert [layer.self_attn.layer_idx for layer in model.model.layers] == [0, 1, 2, 3]


def test_view_does_not_fire_the_targets_forward_hooks():
    model = tiny_model("llama", seed=5, layers=4)
    calls = []
    model.register_forward_pre_hook(lambda module, args: calls.append(1))
    view = layer_view(model, (0, 1))
    with torch.no_grad():
        view(input_ids=torch.tensor([PROMPT]))
    assert calls == []
    with torch.no_grad():
        model(input_ids=torch.tensor([PROMPT]))
    assert calls == [1]


@pytest.mark.parametrize("text,n,expected", [("", 6, (0, 1, 2)), ("0-2,4", 6, (0, 1, 2, 4)), (" 1 , 3-4 ", 6, (1, 3, 4)),
                                              ("", 1, None)])
def test_parse_layers(text, n, expected):
    if expected is None:
        with pytest.raises(ValueError, match="all 1 layers is the target itself"):
            parse_layers(text, n)
    else:
        assert parse_layers(text, n) == expected


@pytest.mark.parametrize("text,message", [("0-9", r"within \[0, 5\]"), ("9", r"within \[0, 5\]"), ("a", "cannot read layers"),
                                          ("0-5", "skip at least one layer"), ("3-1", "must run upwards"), ("0-1000000000000", "the model has 6")])
def test_bad_layers_name_the_limit(text, message):
    with pytest.raises(ValueError, match=message):
        parse_layers(text, 6)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("layers", [None, (0,), (0, 2), (1, 2, 3)])
@pytest.mark.parametrize("k", [1, 3, 6])
def test_greedy_self_speculation_is_token_identical(arch, layers, k):
    model = tiny_model(arch, seed=7, layers=4)
    lane = CachedModel(model)
    standard = [e.token for e in standard_decode(CachedModel(model), PROMPT, Sampling(), 40)]
    rounds = list(speculative_decode(lane, SelfDrafter(lane, layers), PROMPT, Speculation(k=k), Sampling(), 40))
    assert [t for r in rounds for t in r.tokens] == standard
    assert any(r.accepted < len(r.drafted) for r in rounds)  # a real draft: it was wrong somewhere


@pytest.mark.parametrize("sampling", [Sampling(), Sampling(temperature=1.0, seed=3)])
def test_identity_layers_give_alpha_one(sampling):
    """Skipped layers that are exact identities: the draft is the target, so every draft is kept."""
    model = identity_outside(tiny_model("llama", seed=7, layers=4), (0, 1))
    lane = CachedModel(model)
    rounds = list(speculative_decode(lane, SelfDrafter(lane, (0, 1)), PROMPT, Speculation(k=4), sampling, 40))
    assert all(r.accepted == len(r.drafted) for r in rounds)
    assert min(a for r in rounds for a in r.alpha) > 0.999


def test_near_identity_layers_give_high_alpha():
    model = tiny_model("llama", seed=7, layers=4)
    with torch.no_grad():
        for layer in model.model.layers[2:]:
            layer.self_attn.o_proj.weight.mul_(0.02)
            layer.mlp.down_proj.weight.mul_(0.02)
    lane = CachedModel(model)
    rounds = list(speculative_decode(lane, SelfDrafter(lane, (0, 1)), PROMPT, Speculation(k=4),
                                     Sampling(temperature=1.0, seed=1), 60))
    alphas = [a for r in rounds for a in r.alpha]
    assert sum(alphas) / len(alphas) > 0.9
    # and far layers are not free: the same subset of an untouched model is accepted much less
    plain = CachedModel(tiny_model("llama", seed=7, layers=4))
    rough = list(speculative_decode(plain, SelfDrafter(plain, (0, 1)), PROMPT, Speculation(k=4),
                                    Sampling(temperature=1.0, seed=1), 60))
    assert sum(a for r in rough for a in r.alpha) / sum(len(r.alpha) for r in rough) < 0.8


def test_borrowed_cache_drafts_exactly_what_an_own_cache_drafts():
    """The first-L view borrows the target's first L layers' keys and values; its drafts, and the
    logits behind them, equal a view that computed its own cache from scratch."""
    model = tiny_model("llama", seed=9, layers=4)
    target = CachedModel(model)
    borrowing, own = SelfDrafter(target, (0, 1)), SelfDrafter(target, (0, 1))
    own.borrows = False
    assert borrowing.borrows and not SelfDrafter(target, (0, 2)).borrows
    ids = list(PROMPT)
    generator = make_generator(0, "cpu")
    for _ in range(6):
        target.logits(ids + [7, 8], 3)  # the target's verify pass over the committed ids (+ stale drafts)
        ids.append(int(target.logits(ids, 1)[0].argmax()))
        a = borrowing.propose(ids, 3, Sampling(), generator)
        b = own.propose(ids, 3, Sampling(), generator)
        assert a.tokens == b.tokens
        torch.testing.assert_close(a.logits, b.logits, atol=1e-5, rtol=1e-5)
        assert a.catch_up == 1  # only the last committed token: the rest was borrowed
    assert b.catch_up >= 1


def test_self_drafter_leaves_the_target_lane_exact_after_sampling():
    """Borrowing only reads the target's cache: standard decoding after a self-speculative run on
    the same model is unchanged."""
    model = tiny_model("llama", seed=9, layers=4)
    before = [e.token for e in standard_decode(CachedModel(model), PROMPT, Sampling(), 20)]
    lane = CachedModel(model)
    list(speculative_decode(lane, SelfDrafter(lane), PROMPT, Speculation(k=3), Sampling(temperature=1.0, seed=2), 20))
    assert [e.token for e in standard_decode(CachedModel(model), PROMPT, Sampling(), 20)] == before


def test_an_empty_layer_list_is_refused_not_taken_for_the_default():
    """Issue #24: draft_layers=() used to become the first half silently; None is the default."""
    from specdec.engine.drafters.selfdraft import SelfDrafter

    lane = CachedModel(tiny_model("llama", seed=0, layers=4))
    with pytest.raises(ValueError, match=r"needs at least one layer \(of the model's 4\)"):
        SelfDrafter(lane, ())
    assert SelfDrafter(lane, None).layers == (0, 1)


def other_layouts():
    """Tiny models whose decoder layers sit elsewhere than .model.layers: GPT-2 and Falcon at
    .transformer.h, OPT at .model.decoder.layers; with, for each, the modules whose zeroed weights
    (and biases) make a layer add nothing to the residual stream."""
    from transformers import FalconConfig, FalconForCausalLM, GPT2Config, GPT2LMHeadModel, OPTConfig, OPTForCausalLM

    torch.manual_seed(11)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=96, n_positions=64, n_embd=32, n_layer=4, n_head=2,
                                      initializer_range=0.2)).eval()
    opt = OPTForCausalLM(OPTConfig(vocab_size=96, hidden_size=32, num_hidden_layers=4, num_attention_heads=2,
                                   ffn_dim=64, max_position_embeddings=64, word_embed_proj_dim=32,
                                   init_std=0.2)).eval()
    falcon = FalconForCausalLM(FalconConfig(vocab_size=96, hidden_size=32, num_hidden_layers=4, num_attention_heads=2,
                                            new_decoder_architecture=False, initializer_range=0.2)).eval()
    return [(gpt2, lambda layer: (layer.attn.c_proj, layer.mlp.c_proj)),
            (opt, lambda layer: (layer.self_attn.out_proj, layer.fc2)),
            (falcon, lambda layer: (layer.self_attention.dense, layer.mlp.dense_4h_to_h))]


@pytest.mark.parametrize("index", [0, 1, 2], ids=["gpt2", "opt", "falcon"])
def test_layer_views_of_other_layouts_compute_the_kept_layers_and_draft_exactly(index):
    from specdec.engine.drafters.layers import decoder_layers

    model, outputs = other_layouts()[index]
    kept = (0, 2)
    reference = copy.deepcopy(model)
    with torch.no_grad():
        for i, layer in enumerate(decoder_layers(reference)):
            for module in outputs(layer) if i not in kept else ():
                module.weight.zero_()
                if module.bias is not None:
                    module.bias.zero_()
    view, ids = layer_view(model, kept), torch.tensor([PROMPT])
    with torch.no_grad():
        torch.testing.assert_close(view(input_ids=ids).logits, reference(input_ids=ids).logits, atol=1e-5, rtol=1e-5)
    assert len(decoder_layers(model)) == 4 and len(decoder_layers(view)) == 2  # the target untouched
    assert model.config.num_hidden_layers == 4 and view.config.num_hidden_layers == 2
    assert {p.data_ptr() for p in view.parameters()} <= {p.data_ptr() for p in model.parameters()}
    lane = CachedModel(model)
    standard = [e.token for e in standard_decode(CachedModel(model), PROMPT, Sampling(), 30)]
    for layers in (None, kept):
        rounds = list(speculative_decode(lane, SelfDrafter(lane, layers), PROMPT, Speculation(k=3), Sampling(), 30))
        assert [t for r in rounds for t in r.tokens] == standard
