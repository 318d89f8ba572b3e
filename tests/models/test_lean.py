"""Lean decoder layers (specdec.models.lean): transformers' logits through a cache that rolls back, a
tree's mask, int8 and prepacking; the layer's own forward wherever the lean one does not apply;
speculative decoding on them equals standard decoding on the plain model; only the fast engine
makes layers lean, and only those it computes exactly."""
import copy

import pytest
import torch
import transformers as tf

from helpers import VOCAB, perturbed, save_model, tiny_model, tiny_tokenizer
from specdec.engine.config import Sampling, Speculation
from specdec.engine.decoding import speculative_decode, standard_decode
from specdec.engine.drafters import ModelDrafter
from specdec.engine.kvcache import CachedModel
from specdec.engine.tree_verify import merge_prefixes
from specdec.models import fast, loading
from specdec.models.fused import fuse_projections
from specdec.models.int8 import quantize_int8
from specdec.models.lean import is_lean, leanable, make_lean

pytestmark = pytest.mark.usefixtures("one_thread")
GREEDY = Sampling()


def tiny(arch: str, seed: int):
    """A tiny random model of a family lean.py covers (Qwen3's and Mistral's built here), its norms'
    weights drawn too: at initialisation they are ones, which would hide one norm's weight read for
    another's."""
    if arch in ("llama", "qwen2"):
        model = tiny_model(arch, seed=seed)
    else:
        torch.manual_seed(seed)
        common = dict(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=512,
                      initializer_range=0.2, tie_word_embeddings=False, bos_token_id=0, eos_token_id=1, pad_token_id=2)
        config, cls = {"qwen3": (tf.Qwen3Config(**common), tf.Qwen3ForCausalLM),
                       "mistral": (tf.MistralConfig(**common, sliding_window=None), tf.MistralForCausalLM)}[arch]
        model = cls(config).eval()
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if "norm" in name:
                weight.uniform_(0.5, 1.5)
    return model


def lean_copy(model, quantize: bool = False):
    lean = copy.deepcopy(model)
    fuse_projections(lean)
    lean = quantize_int8(lean) if quantize else lean
    assert make_lean(lean) == len(lean.model.layers)
    return lean


def close(a: torch.Tensor, b: torch.Tensor, tolerance: float = 1e-5) -> bool:
    """Equal up to float rounding (torch.rms_norm may sum in another order than RMSNorm's ops)."""
    finite = b.isfinite()
    same_finite = bool((a.isfinite() == finite).all())
    return same_finite and (a[finite] - b[finite]).abs().max() <= tolerance * b[finite].abs().max()


# qwen2: biased q, k, v; qwen3: each head's q and k normalized; all: 4 query heads over 2 key/value heads
@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3", "mistral"])
def test_lean_layers_give_transformers_logits_through_a_cache_that_rolls_back(arch):
    model = tiny(arch, seed=5)
    lean = lean_copy(model)
    assert all(map(is_lean, lean.model.layers))
    assert isinstance(lean.model.layers[0], type(model.model.layers[0]))  # a subclass: isinstance holds
    plain, fast_lane = CachedModel(model), CachedModel(lean)
    ids = list(range(3, 40))
    for n, keep in [(1, 37), (5, 30), (1, 36), (9, 20), (2, 37), (39, 0)]:  # steps, verify passes, a prefill
        ids = ids[:keep] + [(7 * i + n) % 90 + 3 for i in range(len(ids) - keep + n)]
        assert close(fast_lane.logits(ids, n), plain.logits(ids, n)), (n, keep)


@torch.inference_mode()
def test_lean_layers_read_a_trees_mask():
    model = tiny_model("qwen2", seed=8)
    lean = lean_copy(model)
    own_forward = []  # the layers' norm modules run only in transformers' forward
    for layer in lean.model.layers:
        layer.input_layernorm.register_forward_hook(lambda *args: own_forward.append(1))
    prompt, tree = [3, 4, 12, 13, 14], merge_prefixes([[5, 6, 7], [5, 8], [9, 6, 7, 10], [6]])
    expected, got = CachedModel(model).verify_tree(prompt, tree), CachedModel(lean).verify_tree(prompt, tree)
    assert close(got, expected) and not own_forward


def test_int8_and_prepacked_layers_run_lean_with_the_same_logits():
    model = tiny_model("qwen2", seed=6, hidden=128)
    ids = list(range(3, 30))
    int8_plain = quantize_int8(model)  # int8, neither stacked nor lean
    int8_lean = lean_copy(model, quantize=True)
    assert isinstance(int8_lean.model.layers[0].mlp.fused_gate_up.linear, torch.ao.nn.quantized.dynamic.Linear)
    for n in (1, 4):
        assert close(CachedModel(int8_lean).logits(ids, n), CachedModel(int8_plain).logits(ids, n)), n
    packed = copy.deepcopy(model)
    fuse_projections(packed)
    fast.prepack(packed, min_weights=0, dense_rows=0)
    assert make_lean(packed) == 2
    for n in (1, 6):
        assert close(CachedModel(packed).logits(ids, n), CachedModel(model).logits(ids, n)), n


def test_speculative_decoding_on_lean_models_equals_standard_decoding_on_the_plain_target():
    target = tiny_model("llama", seed=7)
    draft = lean_copy(perturbed(target, 0.03), quantize=True)
    prompt = [5, 9, 14, 5, 9, 22, 31, 40]
    expected = [e.token for e in standard_decode(CachedModel(target), prompt, GREEDY, 40)]
    rounds = list(speculative_decode(CachedModel(lean_copy(target)), ModelDrafter(draft, target.config.vocab_size),
                                     prompt, Speculation(k=4), GREEDY, 40))
    assert [t for r in rounds for t in r.tokens] == expected
    assert sum(r.accepted for r in rounds) > 0 and any(r.accepted < len(r.drafted) for r in rounds)


def test_calls_the_lean_forward_does_not_cover_run_the_layers_own():
    """Not fp32, attention hooks (transformers records attention weights with them), training: the class's
    forward runs (its norm modules are called, which the lean forward never calls), and returns
    transformers' output."""
    model = tiny_model("llama", seed=3)
    lean = lean_copy(model)
    ids = torch.tensor([list(range(3, 15))])
    norms = []
    for layer in lean.model.layers:
        layer.input_layernorm.register_forward_hook(lambda module, args, out: norms.append(module))
    with torch.inference_mode():
        assert close(lean(ids).logits, model(ids).logits) and norms == []  # fp32, no hooks: lean
        hook = lean.model.layers[0].self_attn.register_forward_hook(lambda *args: None)
        assert close(lean(ids).logits, model(ids).logits)
        assert norms == [lean.model.layers[0].input_layernorm]  # only the hooked layer ran its own forward
        hook.remove()
        norms.clear()
        half = lean.to(torch.bfloat16)(ids).logits
        assert len(norms) == 2 and close(half.float(), model.to(torch.bfloat16)(ids).logits.float(), 1e-2)
    norms.clear()
    lean.float().train()  # training: dropout applies, which only transformers' forward knows
    lean(ids)
    assert len(norms) == 2


def test_only_layers_it_computes_exactly_are_made_lean():
    def fused(model):
        fuse_projections(model)
        return model

    assert leanable(fused(tiny_model("llama")).model.layers[0], tiny_model("llama").config)
    assert not leanable(tiny_model("llama").model.layers[0], tiny_model("llama").config)  # not stacked
    gelu = tiny_model("llama")
    gelu.config.hidden_act = "gelu"
    assert make_lean(fused(gelu)) == 0
    eager = tiny_model("qwen2")
    eager.config._attn_implementation = "eager"
    assert make_lean(fused(eager)) == 0
    sliding = tiny_model("qwen2")
    sliding.config.layer_types = ["sliding_attention", "full_attention"]
    assert make_lean(fused(sliding)) == 0
    mistral = tiny("mistral", seed=0)
    mistral.config.sliding_window = 16  # Mistral's layers list no types: its window says
    assert make_lean(fused(mistral)) == 0


def test_the_fast_engine_makes_layers_lean_and_the_eager_engine_does_not(tmp_path):
    folder = save_model(tmp_path / "m", tiny_model("llama", seed=2, vocab=VOCAB), tiny_tokenizer())
    logs = []
    fast_model = loading.load_model(folder, device="cpu", engine="fast", log=logs.append)
    eager = loading.load_model(folder, device="cpu", engine="eager", log=lambda m: None)
    assert "2 decoder layers run as one function each" in logs[-1]
    assert all(map(is_lean, fast_model.model.model.layers))
    assert not any(map(is_lean, eager.model.model.layers))
    ids = list(range(3, 20))
    assert close(CachedModel(fast_model.model).logits(ids, 3), CachedModel(eager.model).logits(ids, 3))
    copied = copy.deepcopy(fast_model.model)  # a copy keeps its lean layers
    assert is_lean(copied.model.layers[0])
