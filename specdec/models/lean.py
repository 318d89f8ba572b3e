"""A Llama, Qwen2, Qwen3 or Mistral decoder layer's forward in one function: the same operations on the same
kernels as transformers', without the modules' calls and the steps around them.

Why. A small model's decode step on a CPU is mostly linear calls, and most of the rest is not
arithmetic. Profiled on the 2-core Zen 3 EPYC (ad hoc, torch.profiler and cProfile over decode
steps of the Qwen 0.5B int8 draft after 100 tokens), a 45-55 ms step spent about 25 ms in the
quantized linear kernel, about 10 ms in hundreds of small aten calls (RMSNorm's five, rotary's ten,
the cache's cat, GQA's repeat), and the rest in Python: each layer calls about fifteen modules
(norms, attention, the stacked projections' parts, the MLP, the activation), and transformers'
attention goes through an interface that decides, per call, how to treat grouped heads. Passes over
several tokens also copy every cached key and value once per layer: with a mask, transformers repeats
the grouped heads (repeat_kv) instead of asking SDPA to read them grouped.

What. For each decoder layer whose parts are exactly the known ones (LEAN_LAYERS; the stacked
projections of models/fused.py; SiLU; RMSNorm; SDPA attention; every layer full attention), the
layer's forward becomes lean_forward, which computes

    x = RMSNorm(h);  [q, k, v] = x W_qkv^T + b;  (Qwen3: q, k = RMSNorm(q), RMSNorm(k) per head)
    q, k = rope(q), rope(k);  k, v = cache.update(k, v)
    h = h + o_proj(SDPA(q, k, v, mask, enable_gqa));  x = RMSNorm(h);  [g, u] = x W_gu^T
    h = h + down_proj(silu(g) * u)

calling the stacked layers, o_proj and down_proj directly (int8, prepacked or plain, whichever they
are), with the mask and rotary tables the model's own forward built once for the pass.

Exactness. Each step is transformers' own computation: RMSNorm x * rsqrt(mean(x^2) + eps) * w in
fp32 (torch.rms_norm in place of its five separate ops); rotary q cos + rotate_half(q) sin with
rotate_half(q) = [-q_2, q_1]; SDPA with the same mask, scale and is_causal rule, reading grouped
key/value heads itself (enable_gqa) where transformers repeats or packs them: the same products and
sums. Measured on SmolLM2, the Qwen 0.5B draft (int8, short head) and Qwen2.5-Coder-1.5B, the logits
were bitwise equal to transformers' forward at 1, 5 and 9 rows; the tests bound the difference on
tiny models of both families, through a cache that rolls back and a tree's mask. Every lane of a
comparison runs the same layers, so nothing depends on equality: standard and speculative decoding
both read this forward.

What it saves (docs/bench-auto/lean_layers.py, output beside it: the same model with its layers
switched between the two forwards, interleaved pass by pass, on that host): a pass takes 0.91 / 0.90 /
0.87 of transformers' time over 1 / 5 / 9 tokens for SmolLM2 (62.0 -> 56.4 ms a step), 0.91 / 0.92 /
0.88 for the int8 draft (47.2 -> 43.0 ms), and 0.95 / 0.99 / 0.98 for Qwen2.5-Coder-1.5B (309 -> 293
ms), with bitwise equal logits in all nine (a first run, before the script was committed: 0.89 /
0.91 / 0.90, 0.92 / 0.91 / 0.94 and 0.95 / 0.98 / 0.96). Over whole answers, auto on the Qwen pair
ran 1.03x as fast (docs/bench-auto/lean_ab.py).

Where. The fast engine on CPU (load_model), last, after stacking, int8 quantization and
prepacking. The layer's class is swapped for a subclass whose forward is lean_forward, so every
caller runs it: our lanes, transformers' generate() and its assisted generation when the bench
runs them on "our fast model" (a peer on the same model gets the same layers). Any call the lean
forward does not cover (training, where dropout applies; an input not fp32; attention weights or
hooks asked for; no rotary tables; extra keyword arguments a kernel would need) runs the class's
own forward instead.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .fused import FusedProjections

# The decoder layers lean_forward computes, by class name (Llama also covers SmolLM2, TinyLlama and
# Llama 3's scaled rotary tables, which the model's rotary module builds; Qwen2 covers Qwen2.5; Qwen3
# adds an RMSNorm of each head's q and k; Mistral is Llama's layer, taken without a sliding window).
LEAN_LAYERS = ("LlamaDecoderLayer", "Qwen2DecoderLayer", "Qwen3DecoderLayer", "MistralDecoderLayer")
# Keyword arguments the model's forward passes every layer that change nothing here.
PASSED_THROUGH = {"position_ids", "use_cache", "cache_position", "output_attentions"}
_LEAN_CLASSES: dict[type, type] = {}


def lean_forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None,
                 position_ids: torch.Tensor | None = None, past_key_values=None, use_cache: bool | None = False,
                 position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None, **kwargs) -> torch.Tensor:
    """The layer's output for hidden_states (module docstring); the class's own forward where this
    one does not apply."""
    attn, mlp = self.self_attn, self.mlp
    if (self.training or hidden_states.dtype != torch.float32 or position_embeddings is None
            or kwargs.keys() - PASSED_THROUGH or kwargs.get("output_attentions")
            or attn._forward_hooks or attn._forward_pre_hooks):
        return own_forward(self)(hidden_states, attention_mask, position_ids, past_key_values, use_cache,
                                 position_embeddings, **kwargs)
    batch, n, _ = hidden_states.shape
    # 1. Attention's input: RMSNorm, then q, k and v in one product (models/fused.py); Qwen3
    #    normalizes each head's q and k.
    x = rms_norm(hidden_states, self.input_layernorm)
    qkv = attn.fused_q_k_v
    q, k, v = (part.view(batch, n, -1, attn.head_dim) for part in qkv.linear(x).split(qkv.sizes, -1))
    if hasattr(attn, "q_norm"):
        q, k = rms_norm(q, attn.q_norm), rms_norm(k, attn.k_norm)
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    # 2. Rotary positions on q and k; the cache appends this pass's keys and values.
    cos, sin = (table.unsqueeze(1) for table in position_embeddings)
    q, k = rotate(q, cos, sin), rotate(k, cos, sin)
    if past_key_values is not None:
        k, v = past_key_values.update(k, v, attn.layer_idx)
    # 3. SDPA reads grouped heads itself; is_causal as transformers sets it (sdpa_attention_forward).
    is_causal = n > 1 and attention_mask is None
    if is_causal and k.shape[2] > n:  # (transformers' rule too: only an empty static cache gets here)
        k, v = k[:, :, :n], v[:, :, :n]
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask, is_causal=is_causal,
                                         scale=attn.scaling, enable_gqa=q.shape[1] != k.shape[1])
    hidden_states = hidden_states + attn.o_proj(out.transpose(1, 2).reshape(batch, n, -1))
    # 4. The MLP: gate and up in one product, SiLU(gate) * up, down.
    gate_up = mlp.fused_gate_up
    gate, up = gate_up.linear(rms_norm(hidden_states, self.post_attention_layernorm)).split(gate_up.sizes, -1)
    return hidden_states + mlp.down_proj(F.silu(gate) * up)


def rms_norm(x: torch.Tensor, norm: nn.Module) -> torch.Tensor:
    return F.rms_norm(x, norm.weight.shape, norm.weight, norm.variance_epsilon)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x cos + rotate_half(x) sin, rotate_half(x) = [-x_2, x_1] (the halves of the head dimension)."""
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), -1) * sin


def leanable(layer: nn.Module, config) -> bool:
    """Whether lean_forward computes exactly what layer's own forward does (module docstring)."""
    attn, mlp = getattr(layer, "self_attn", None), getattr(layer, "mlp", None)
    norms = [getattr(layer, name, None) for name in ("input_layernorm", "post_attention_layernorm")]
    return (type(layer).__name__ in LEAN_LAYERS
            and isinstance(getattr(attn, "fused_q_k_v", None), FusedProjections)
            and isinstance(getattr(mlp, "fused_gate_up", None), FusedProjections)
            and all(map(is_rms_norm, norms))
            and getattr(config, "hidden_act", None) == "silu"
            and getattr(config, "_attn_implementation", None) == "sdpa"
            and full_attention(config)
            and all(is_rms_norm(getattr(attn, name)) for name in ("q_norm", "k_norm") if hasattr(attn, name))
            and getattr(config, "pretraining_tp", 1) == 1)


def is_rms_norm(norm: nn.Module | None) -> bool:
    return type(norm).__name__.endswith("RMSNorm") and hasattr(norm, "variance_epsilon")


def full_attention(config) -> bool:
    """Every layer attends to every earlier position: by its layer types where the config lists them
    (Qwen2, Qwen3), else by its having no sliding window (Mistral)."""
    kinds = getattr(config, "layer_types", None)
    if kinds is not None:
        return all(kind == "full_attention" for kind in kinds)
    return getattr(config, "sliding_window", None) is None


def lean_class(cls: type) -> type:
    """cls with lean_forward as its forward: one subclass per layer class, so isinstance still holds
    and a copy of the model (copy.deepcopy) keeps it. (transformers' layers wrap a subclass's
    forward for gradient checkpointing, as they wrap their own: a no-op at inference.)"""
    if cls not in _LEAN_CLASSES:
        _LEAN_CLASSES[cls] = type(f"Lean{cls.__name__}", (cls,), {"forward": lean_forward, "__module__": __name__})
    return _LEAN_CLASSES[cls]


def own_class(layer: nn.Module) -> type:
    """The class transformers built for a lean layer: the base of its lean class, found in the MRO, so
    a subclass of the lean class (as FSDP makes) still finds it."""
    return next(cls for cls in type(layer).__mro__ if cls in _LEAN_CLASSES)


def own_forward(layer: nn.Module):
    """layer's forward as the class transformers built defines it (a subclass of the lean class does
    not loop back to lean_forward)."""
    return own_class(layer).forward.__get__(layer)


def is_lean(module: nn.Module) -> bool:
    return type(module) in _LEAN_CLASSES.values()


def make_lean(model: nn.Module) -> int:
    """Give every decoder layer of model that lean_forward computes exactly its forward, in place;
    returns how many."""
    config = getattr(model, "config", None)
    lean = 0
    for module in model.modules():
        if not is_lean(module) and leanable(module, config):
            module.__class__ = lean_class(type(module))
            lean += 1
    return lean
