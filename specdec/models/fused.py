"""Projections that read one input, multiplied as one matrix: an attention's q, k and v, an MLP's
gate and up.

Why. A decode step multiplies every weight matrix by one row, and every call of a linear kernel
pays a part that does not depend on the matrix's size: the call through the module, reading and (for
PyTorch's dynamic int8) quantizing the input, the kernel's setup. For small matrices that part is a
large share of the call: SmolLM2's are 576 wide, and the Qwen 0.5B draft's k and v projections have
128 outputs each. Seven calls a layer become four.

What. Stack the weights of layers that read the same x by rows, W = [W_q; W_k; W_v] (biases
likewise); then

    x W^T + b = [x W_q^T + b_q,  x W_k^T + b_k,  x W_v^T + b_v]

and one call computes all three, split along the last dimension. Stacking changes which output
columns one call computes, not how a column is computed: each is still the dot product of x with
its own row of weights. With int8 weights (models/int8.py, quantized after fusing) each row keeps
its own scale (per-channel scales are the rows'), and the activation's dynamic scale is set by x
alone, which the stacked layers share; so the int8 outputs are the same numbers too. Measured
(docs/bench-auto/fused_projections.txt), the logits of the Qwen 0.5B draft, int8 and fp32 on the
fast engine, were bitwise equal to the unstacked model's at 1, 5 and 9 rows, and SmolLM2's at 5
and 9 (at 1 row within 7e-5: each copy times its kernels at load, models/fast.py, and the two may
run a single row on different ones). The tests bound the difference on tiny models at float
rounding; nothing depends on it being zero, since every lane runs on the same model.

Measured there (2-core Zen 3 EPYC, AVX2), a pass of the stacked copy takes 0.89 / 0.87 / 0.95 of
the unstacked one's time over 1 / 5 / 9 tokens for SmolLM2, 0.92 / 0.95 / 0.99 for the int8 draft,
and 0.96 / 0.96 / 0.99 for the fp32 0.5B, whose bytes set its step.

How, without rewriting any model's forward. transformers' modules call q_proj(h), k_proj(h) and
v_proj(h) on the same tensor h, one after the other (gate_proj(x) and up_proj(x) likewise). Each
becomes a FusedPart of one FusedProjections: the first part called with h computes the stacked
product and keeps its split; the others return their slice for that same h (the same tensor object,
which those modules do not modify between the calls).
A part called with any other input computes the product again, so a module that calls them in
another order or on other inputs (cross-attention's k and v read the encoder) stays correct, only
not faster. Once every part has been served, the kept outputs are released.

Where. The fast engine on CPU (load_model), before int8 quantization and prepacking: the stacked
layer is an nn.Linear like any other, so both apply to it. The eager engine is the model as
transformers loads it and stays so: it is what a user's model runs.
"""
from __future__ import annotations

import torch
from torch import nn

# Layers of one module that read the same input, by their names in transformers' models (Llama,
# Qwen2, Qwen3, Mistral, Gemma, OPT, Phi: attention; Llama, Qwen2, Qwen3, Mistral, Gemma: MLP). Models that already
# fuse them (Phi-3's qkv_proj, GPT-NeoX's query_key_value) have nothing to do here.
GROUPS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))


class FusedProjections(nn.Module):
    """One linear layer whose weight stacks several layers' weights by rows (module docstring)."""

    def __init__(self, linears: list[nn.Linear]):
        super().__init__()
        first = linears[0]
        self.sizes = tuple(layer.out_features for layer in linears)
        # Built on the meta device (no initialisation to overwrite), then given the stacked weights.
        self.linear = nn.Linear(first.in_features, sum(self.sizes), bias=first.bias is not None, device="meta")
        self.linear.weight = nn.Parameter(torch.cat([layer.weight.detach() for layer in linears]), requires_grad=False)
        if first.bias is not None:
            self.linear.bias = nn.Parameter(torch.cat([layer.bias.detach() for layer in linears]), requires_grad=False)
        # (input, its outputs, the parts not yet served them), or None: one attribute, replaced whole,
        # so a part reads the outputs of its own input even if another thread runs the model too.
        self._kept: tuple[torch.Tensor, tuple[torch.Tensor, ...], set[int]] | None = None

    def output(self, index: int, x: torch.Tensor) -> torch.Tensor:
        """The index-th stacked layer's output for x."""
        kept = self._kept
        if kept is None or kept[0] is not x:
            kept = (x, self.linear(x).split(self.sizes, -1), set(range(len(self.sizes))))
            self._kept = kept
        kept[2].discard(index)
        if not kept[2] and self._kept is kept:  # every part has its output: keep nothing alive
            self._kept = None
        return kept[1][index]

    def extra_repr(self) -> str:
        return f"sizes={self.sizes}"


class FusedPart(nn.Module):
    """Stands where one of the stacked layers stood; its output is that layer's."""

    def __init__(self, fused: FusedProjections, index: int):
        super().__init__()
        self.__dict__["fused"] = fused  # not a submodule: the parent owns it once, not once per part
        self.index = index
        self.in_features, self.out_features = fused.linear.in_features, fused.sizes[index]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fused.output(self.index, x)

    def extra_repr(self) -> str:
        return f"part {self.index} of {self.fused.sizes}"


def fusable(parent: nn.Module, names: tuple[str, ...]) -> list[nn.Linear] | None:
    """The layers named, where all are plain nn.Linear reading inputs of one width, in one dtype on one
    device, with biases all or none; else None."""
    layers = [getattr(parent, name, None) for name in names]
    if not all(type(layer) is nn.Linear for layer in layers):
        return None
    first = layers[0]
    same = all(layer.in_features == first.in_features and layer.weight.dtype == first.weight.dtype
               and layer.weight.device == first.weight.device
               and (layer.bias is None) == (first.bias is None) for layer in layers)
    return layers if same else None


def fuse_projections(model: nn.Module) -> int:
    """Stack every group of GROUPS found in one module of model, in place; returns how many."""
    fused = 0
    for parent in list(model.modules()):
        for names in GROUPS:
            layers = fusable(parent, names)
            if layers is None:
                continue
            group = FusedProjections(layers)
            parent.add_module("fused_" + "_".join(name.removesuffix("_proj") for name in names), group)
            for index, name in enumerate(names):
                setattr(parent, name, FusedPart(group, index))
            fused += 1
    return fused
