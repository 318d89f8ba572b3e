"""The CPU fast path: large linear layers get a oneDNN-prepacked copy of their weights, used for
passes over more than a few tokens.

Why. A decode step on a CPU reads every weight once, so a target pass over 5 or 9 tokens should cost
about one step: the weights dominate the bytes, and 9 rows of activations are nothing beside them.
PyTorch's default fp32 path (MKL BLAS over the [out, in] weight) does not get there. Measured on
this project's 2-core Xeon (docs/FASTPATH.md), Qwen2.5-1.5B: a pass over 1, 2 or 3 tokens costs one
step, 0.23 s, at the memory-bandwidth floor; over 5 tokens 2.0 steps, over 9 2.7 (on the 2-core
AMD EPYC of issue #18, 2.1-2.4 and 3.0). The GEMM repacks the weight into its kernel's layout on
every call past a few rows. That cost belongs to the CPU's BLAS, not to speculative decoding, and
it erases most of what verifying k drafts in one pass should save.

What. oneDNN packs a weight matrix once into the blocked layout its kernels read
(`torch.ops.mkldnn._reorder_linear_weight`, the call inductor makes when it freezes a model) and
then multiplies by it without repacking (`torch.ops.mkldnn._linear_pointwise`): the same Qwen pass
over 5 tokens costs 1.2 default steps and over 9 1.45. But its single-token pass is slower than the
default's (1.10 steps here, 1.21 for SmolLM2's small layers), and the default single step is the
baseline every speedup is measured against, which must never be handicapped. So a `FastLinear`
keeps both: the dense weight for passes over up to `dense_rows` tokens (the standard lane's steps,
plain rounds), the packed copy for wider ones (verify passes). `dense_rows` is calibrated once at
load on the model's largest layer (the widest row count at which the dense kernel is no slower).
Only layers with at least MIN_PACKED_WEIGHTS weights are packed: below that the packed kernel's
fixed cost per call ate its gain (SmolLM2-135M, whose largest layer has 0.9 M, gains nothing).

Memory. The packed copies sit beside the dense weights, and the log says how many bytes they add
(Qwen2.5-1.5B: 6.2 GB on 7.1 GB). A tied LM head (the input embedding's matrix) is packed like any
other layer: its dense rows stay the embedding's, shared, and only the packed copy is new. Where
the machine has not that much memory available, the model stays eager and the log says so.

Exactness. Both kernels compute the same products in another order of summation: logits differ by
float rounding (within 3e-5 measured; a test bounds it at 1e-4). The default path already does this
between its 1-row and 5-row kernels, so nothing changes in kind: both lanes run on the same model,
speculative decoding is checked against standard decoding on it, and a greedy divergence is
diagnosed as a numerical tie or a bug exactly as before (engine/verdicts.py).

Where. fp32 and bf16 on CPU, where oneDNN is available. Elsewhere "fast" is the eager model: on CUDA
the vendor GEMMs already read weights once per pass, and nothing here could be tested on a GPU.
"""
from __future__ import annotations

import time

import torch
from torch import nn
from torch.nn import functional as F

ENGINES = {
    "fast": "CPU: large linear layers also prepacked for oneDNN, so a pass over a few tokens costs about "
            "one step (single-token steps keep the default kernel); on a GPU: eager",
    "eager": "PyTorch's default kernels, the model as transformers loads it",
}
# oneDNN picks the packed layout for a batch-size hint; hints from 4 to 16 gave the same speed for
# 1 to 33 rows on the machines measured. 16 sits in the middle of the widths a verify pass has.
PACK_FOR_ROWS = 16
MIN_PACKED_WEIGHTS = 1_000_000
MEMORY_MARGIN = 1 << 30  # bytes left free after packing, for activations, caches and the rest
PACKED_DTYPES = (torch.float32, torch.bfloat16)


def default_engine(device: torch.device) -> str:
    return "fast" if device.type == "cpu" else "eager"


def check_engine(engine: str | None) -> None:
    if engine is not None and engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")


def can_prepack(device: torch.device, dtype: torch.dtype) -> bool:
    return device.type == "cpu" and dtype in PACKED_DTYPES and torch.backends.mkldnn.is_available()


class FastLinear(nn.Module):
    """y = x W^T + b: the dense weight for up to dense_rows rows, a oneDNN-packed copy for more."""

    def __init__(self, linear: nn.Linear, dense_rows: int = 3):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias = linear.weight, linear.bias  # shared, not copied (a tied head stays tied)
        self.packed = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), PACK_FOR_ROWS)
        self.dense_rows = dense_rows

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)
        if rows.shape[0] <= self.dense_rows:
            return F.linear(x, self.weight, self.bias)
        y = torch.ops.mkldnn._linear_pointwise(rows.contiguous(), self.packed, self.bias, "none", [], "")
        return y.reshape(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, dense up to {self.dense_rows} rows, packed above")


def packable(model: nn.Module, min_weights: int = MIN_PACKED_WEIGHTS) -> list[str]:
    """Names of the plain nn.Linear layers with at least min_weights weights."""
    return [name for name, module in model.named_modules()
            if type(module) is nn.Linear and module.weight.numel() >= min_weights]


def prepack(model: nn.Module, min_weights: int = MIN_PACKED_WEIGHTS, dense_rows: int | None = None) -> int:
    """Swap each packable layer of model for a FastLinear, in place; returns how many. dense_rows
    None: calibrated on the largest layer (see calibrate_dense_rows)."""
    names = packable(model, min_weights)
    if dense_rows is None and names:
        largest = max(names, key=lambda n: model.get_submodule(n).weight.numel())
        dense_rows = calibrate_dense_rows(model.get_submodule(largest))
    for name in names:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, FastLinear(getattr(parent, child), dense_rows if dense_rows is not None else 3))
    return len(names)


@torch.inference_mode()
def calibrate_dense_rows(linear: nn.Linear, widest: int = 4, repeats: int = 5) -> int:
    """The most rows (0..widest) up to which the dense kernel is no slower than the packed one, each
    width timed by its fastest of `repeats` calls (the least disturbed by other work)."""
    packed = FastLinear(linear, dense_rows=0)
    dense_rows = 0
    for rows in range(1, widest + 1):
        x = torch.randn(rows, linear.in_features, dtype=linear.weight.dtype)
        dense = _fastest(lambda: F.linear(x, linear.weight, linear.bias), repeats)
        if dense > _fastest(lambda: packed(x), repeats):
            break
        dense_rows = rows
    return dense_rows


def _fastest(call, repeats: int) -> float:
    call()  # one untimed call: kernel selection, allocation
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def packed_bytes(model: nn.Module, min_weights: int = MIN_PACKED_WEIGHTS) -> int:
    """What prepack would add: one copy of each packable layer's weight."""
    layers = [model.get_submodule(n) for n in packable(model, min_weights)]
    return sum(layer.weight.numel() * layer.weight.element_size() for layer in layers)


def available_memory() -> int | None:
    """Bytes the OS could give now (Linux's MemAvailable), or None where unknown."""
    try:
        with open("/proc/meminfo") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def fast_layers(model: nn.Module) -> list[FastLinear]:
    return [m for m in model.modules() if isinstance(m, FastLinear)]
