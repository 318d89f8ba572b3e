"""Stacked projections (specdec.models.fused): the same outputs as the layers they stack, at every
width, under int8 and prepacking, through a KV cache that rolls back; correct when called out of
order; nothing kept alive; and only the fast engine stacks them."""
import copy

import pytest
import torch
from torch import nn

from helpers import VOCAB, perturbed, save_model, tiny_model, tiny_tokenizer
from specdec.engine.config import Sampling, Speculation
from specdec.engine.decoding import speculative_decode, standard_decode
from specdec.engine.drafters import ModelDrafter
from specdec.engine.kvcache import CachedModel
from specdec.models import fast, loading
from specdec.models.fused import FusedPart, FusedProjections, fuse_projections, fusable
from specdec.models.int8 import quantize_int8

pytestmark = pytest.mark.usefixtures("one_thread")
GREEDY = Sampling()


def fused_copy(model):
    stacked = copy.deepcopy(model)
    assert fuse_projections(stacked) == 2 * len(stacked.model.layers)  # attention's q, k, v; the MLP's gate, up
    return stacked


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to float rounding: a kernel may block a wider matrix otherwise (module docstring)."""
    return (a - b).abs().max() <= 1e-5 * b.abs().max()


@pytest.mark.parametrize("arch", ["llama", "qwen2"])  # qwen2's q, k and v have biases
def test_stacked_layers_give_the_logits_of_the_separate_ones_through_a_cache_that_rolls_back(arch):
    model = tiny_model(arch, seed=5)
    stacked = fused_copy(model)
    attention = stacked.model.layers[0].self_attn
    assert isinstance(attention.q_proj, FusedPart) and isinstance(attention.fused_q_k_v, FusedProjections)
    assert attention.fused_q_k_v.sizes == (64, 32, 32)  # 4 query heads, 2 key/value heads of 16
    plain, fused = CachedModel(model), CachedModel(stacked)
    ids = list(range(3, 40))
    for n, keep in [(1, 37), (5, 30), (1, 36), (9, 20), (2, 37)]:  # widths of steps and verify passes
        ids = ids[:keep] + [(7 * i + n) % 90 + 3 for i in range(len(ids) - keep + n)]
        assert close(fused.logits(ids, n), plain.logits(ids, n)), (n, keep)


def test_int8_and_prepacking_apply_to_the_stacked_layer():
    """Fused before quantizing (load_model's order): each row keeps its own int8 scale, so the
    draft's int8 logits are the unfused int8 draft's; and prepacked, every width on the packed kernel."""
    model = tiny_model("qwen2", seed=6, hidden=128)
    stacked = fused_copy(model)
    ids = list(range(3, 30))
    int8_plain, int8_fused = quantize_int8(model), quantize_int8(stacked)
    mlp = int8_fused.model.layers[0].mlp
    assert isinstance(mlp.fused_gate_up.linear, torch.ao.nn.quantized.dynamic.Linear)
    assert mlp.gate_proj.fused is mlp.fused_gate_up  # quantize_dynamic's copy kept the parts on the copy
    for n in (1, 4):
        assert close(CachedModel(int8_fused).logits(ids, n), CachedModel(int8_plain).logits(ids, n)), n
    packed_model = copy.deepcopy(stacked)
    packed = fast.prepack(packed_model, min_weights=0, dense_rows=0)
    assert packed == 4 * len(model.model.layers) + 1  # q/k/v, o, gate/up and down a layer, and the head
    for n in (1, 6):
        assert close(CachedModel(packed_model).logits(ids, n), CachedModel(model).logits(ids, n)), n


def test_speculative_decoding_on_stacked_models_equals_standard_decoding_on_the_plain_target():
    target = tiny_model("llama", seed=7)
    draft = quantize_int8(fused_copy(perturbed(target, 0.03)))
    stacked = fused_copy(target)
    prompt = [5, 9, 14, 5, 9, 22, 31, 40]
    expected = [e.token for e in standard_decode(CachedModel(target), prompt, GREEDY, 40)]
    rounds = list(speculative_decode(CachedModel(stacked), ModelDrafter(draft, target.config.vocab_size), prompt, Speculation(k=4),
                                     GREEDY, 40))
    assert [t for r in rounds for t in r.tokens] == expected
    assert sum(r.accepted for r in rounds) > 0 and any(r.accepted < len(r.drafted) for r in rounds)


def test_parts_called_out_of_order_or_on_other_inputs_are_still_their_own_layers():
    torch.manual_seed(0)
    layers = [nn.Linear(8, n) for n in (8, 4, 4)]
    group = FusedProjections(layers)
    q, k, v = (FusedPart(group, i) for i in range(3))
    x, y = torch.randn(2, 8), torch.randn(2, 8)
    with torch.no_grad():
        assert torch.allclose(v(x), layers[2](x), atol=1e-6)  # v first: computes the stack for x
        assert torch.allclose(k(y), layers[1](y), atol=1e-6)  # another input: computed again, for y
        assert torch.allclose(q(y), layers[0](y), atol=1e-6) and torch.allclose(v(y), layers[2](y), atol=1e-6)
        assert group._kept is None  # all three served for y: nothing kept
        assert torch.allclose(q(x), layers[0](x), atol=1e-6)  # a new round: x again, computed again
        assert group._kept[0] is x


def test_only_layers_that_can_be_stacked_are():
    class Attention(nn.Module):
        def __init__(self, k_width: int = 8, bias: bool = True):
            super().__init__()
            self.q_proj, self.k_proj, self.v_proj = nn.Linear(8, 8), nn.Linear(k_width, 4, bias=bias), nn.Linear(8, 4)

    assert fusable(Attention(), ("q_proj", "k_proj", "v_proj")) is not None
    assert fusable(Attention(k_width=6), ("q_proj", "k_proj", "v_proj")) is None  # reads another width
    assert fusable(Attention(bias=False), ("q_proj", "k_proj", "v_proj")) is None  # biases not all or none
    packed = Attention()
    packed.k_proj = fast.FastLinear(packed.k_proj)
    assert fusable(packed, ("q_proj", "k_proj", "v_proj")) is None  # not a plain nn.Linear
    assert fusable(Attention(), ("gate_proj", "up_proj")) is None  # not there


def test_the_fast_engine_stacks_projections_and_the_eager_engine_leaves_the_model_as_loaded(tmp_path):
    folder = save_model(tmp_path / "m", tiny_model("llama", seed=2, vocab=VOCAB), tiny_tokenizer())
    logs = []
    fast_model = loading.load_model(folder, device="cpu", engine="fast", log=logs.append)
    eager = loading.load_model(folder, device="cpu", engine="eager", log=lambda m: None)
    int8 = loading.load_model(folder, device="cpu", engine="fast", quantize="int8", log=lambda m: None)
    assert fast_model.engine == "fast" and any("4 groups of projections" in line for line in logs)
    assert eager.engine == "eager" and not any(isinstance(m, FusedProjections) for m in eager.model.modules())
    assert int8.engine == "fast" and sum(isinstance(m, FusedProjections) for m in int8.model.modules()) == 4
    ids = list(range(3, 20))
    reference = CachedModel(eager.model).logits(ids, 3)
    assert close(CachedModel(fast_model.model).logits(ids, 3), reference)
