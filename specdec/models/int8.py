"""int8 drafts on CPU: dynamic quantization, one scale per weight row, and the MLP's output
projection split around its outlier activations (LLM.int8()'s decomposition).

Why int8. A draft on CPU is bound by reading its weights; int8 reads a quarter of fp32's bytes. A
draft's precision can change how often its tokens are accepted, never the output, which the target
verifies.

Weights: one scale per output row (PyTorch's per-channel dynamic qconfig), not one per matrix
(its default), so a row of small weights is not rounded on the scale of the matrix's largest.

Activations: PyTorch's dynamic quantization rounds a layer's input on one scale per pass, set by its
largest entry. The MLP's output projection (down_proj) reads the MLP's intermediate activation,
where LLMs carry a few channels tens to thousands of times larger than the rest (Dettmers et al.,
LLM.int8(), 2022; Sun et al., Massive Activations in LLMs, 2024). Those few set the scale, and every
other channel rounds to a handful of levels. LLM.int8()'s remedy, used here: the input's columns
with any entry above OUTLIER_THRESHOLD in magnitude are taken out of the int8 product and multiplied
in fp32 by the same int8 weights' columns (dequantized); the int8 product then sees an input whose
scale the rest sets. Exactly, for input x, weight W = diag(s) Q (Q int8, s the row scales) and the
outlier columns O:

    x W^T = x_{not O} W_{:, not O}^T + x_O W_{:, O}^T
          ~ int8(x with O zeroed) Q^T diag(s) + x_O (Q_{:, O})^T diag(s)

The first term is the quantized kernel's (its input rounded on the smaller scale), the second an fp32
product over |O| columns: in a decode step of the Qwen 0.5B draft, about 7 of its 24 down projections
have any (2.8 columns a layer, averaged over all 24). Measured there (docs/bench-auto/draft_quantization.txt, the
target's greedy token ranked first by the draft over the twelve two-per-task answers): 0.92 of
positions against 0.87 with per-channel int8 alone (translation 0.75 against 0.56, QA 0.93 against
0.79; fp32 0.93 and 0.78), for a step of 44 ms against 42 (a noisy host: 37-50 ms for either in
repeats). Thresholds of 2, 20 and 60 read 0.92, 0.91 and 0.92 (draft_quantization.thresholds.txt).
Keeping down_proj in bf16 instead read 0.92 too (draft_quantization.kept.txt), for a longer step:
64 ms eager there, and 52 against 39 through oneDNN's packed bf16 kernel (tried once, not kept).
"""
from __future__ import annotations

import warnings

import torch
from torch import nn

# The layers that read an MLP's intermediate activation, by their names in transformers' models
# (Llama, Qwen, Mistral, Gemma, Phi-3: down_proj; OPT, Phi: fc2; GPT-NeoX, Falcon, Bloom: dense_4h_to_h).
MLP_OUTPUTS = ("down_proj", "fc2", "dense_4h_to_h")
# LLM.int8()'s threshold: an input column with an entry of larger magnitude is multiplied in fp32.
OUTLIER_THRESHOLD = 6.0
# Which scheme quantize_int8 applies; learned costs saved under another start afresh (loading.costs_file):
# 1, one scale per matrix; 2, one per row; 3, one per row and the MLP outputs' outliers split off.
INT8_SCHEME = 3


class OutlierSplitLinear(nn.Module):
    """A dynamically quantized linear layer whose outlier input columns are multiplied in fp32 by the
    same int8 weights (module docstring)."""

    def __init__(self, quantized: nn.Module, threshold: float = OUTLIER_THRESHOLD):
        super().__init__()
        self.quantized, self.threshold = quantized, threshold
        weight = quantized.weight()
        if weight.q_per_channel_zero_points().any():  # the per-channel qconfig's observer is symmetric
            raise ValueError("OutlierSplitLinear takes symmetric per-channel int8 weights (zero points 0)")
        self.in_features, self.out_features = quantized.in_features, quantized.out_features
        # Q's columns as rows (a column of O is then one contiguous read), and s. The copy costs one
        # more byte a weight of this layer (105 MB for the Qwen 0.5B draft's 24 down projections).
        self.register_buffer("columns", weight.int_repr().t().contiguous(), persistent=False)
        self.register_buffer("scales", weight.q_per_channel_scales().float(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)
        outliers = (rows.abs() > self.threshold).any(0).nonzero().squeeze(1)
        if not len(outliers):
            return self.quantized(x)
        y = self.quantized(rows.index_fill(1, outliers, 0.0))
        y += (rows.index_select(1, outliers) @ self.columns.index_select(0, outliers).to(rows.dtype)) * self.scales
        return y.reshape(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, threshold={self.threshold}"


def quantize_int8(model: nn.Module) -> nn.Module:
    """A copy of model with int8 weights for every Linear, one scale per output row, activations
    quantized on the fly, and the MLP output projections (MLP_OUTPUTS) split around their outlier
    activations (module docstring)."""
    qconfig = torch.ao.quantization.per_channel_dynamic_qconfig
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization announces its move to torchao
        quantized = torch.ao.quantization.quantize_dynamic(model, {nn.Linear: qconfig}, dtype=torch.qint8)
    for name, module in list(quantized.named_modules()):
        parent, _, child = name.rpartition(".")
        if child in MLP_OUTPUTS and isinstance(module, torch.ao.nn.quantized.dynamic.Linear):
            setattr(quantized.get_submodule(parent), child, OutlierSplitLinear(module))
    return quantized
